// `launchguard fleet`: node records from many nodes (node-check --format
// json, --record-dir) judged together by node class and layer, with drift
// and a verdict against a threshold (src/fleet, docs/fleet.md).
#include <boost/json.hpp>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "fleet/fleet.h"
#include "fleet/fleet_render.h"
#include "report/json_report.h"
#include "util/atomic_file.h"
#include "util/text_escape.h"

namespace launchguard::cli {
namespace {

struct FleetArgs {
    std::vector<std::string> sources;
    std::string format = "text";
    std::string output;
    double min_conformance = 0.95;
};

int run_fleet_command(const FleetArgs& args) {
    const fleet::FleetReport report = fleet::analyze_fleet(fleet::read_fleet(args.sources), args.min_conformance);
    if (report.nodes == 0) {
        for (const auto& e : report.errors)
            std::cerr << "launchguard: " << printable_text(e.origin + ": " + e.message) << "\n";
        return bad_input("fleet: no node record could be read from the sources given");
    }
    std::string rendered;
    if (args.format == "json")
        rendered = pretty_json(fleet::fleet_to_json(report));
    else if (args.format == "html")
        rendered = fleet::render_fleet_html(report);
    else
        rendered = fleet::render_fleet_text(report);
    if (args.format != "text" && !report.errors.empty()) {
        // The report lists them; whoever reads only the terminal hears too.
        std::cerr << "launchguard: " << report.errors.size() << " record(s) could not be read, first "
                  << printable_text(report.errors.front().origin + ": " + report.errors.front().message) << "\n";
    }
    const int code = report.passes() ? kExitAllow : kExitBlock;
    if (!args.output.empty()) {
        auto written = write_file_atomically(args.output, rendered, 0644);
        if (!written) return bad_input("--output: " + written.error().to_string());
        return code;
    }
    std::cout << rendered;
    return code;
}

}  // namespace

void add_fleet_command(CLI::App& app, CommandRunner& runner) {
    auto args = std::make_shared<FleetArgs>();
    CLI::App* cmd = app.add_subcommand(
        "fleet",
        "Judge many node records (node-check --format json, --record-dir) together: conformance by node class "
        "and layer, drift from each class's majority, a verdict against --min-conformance (exit 0 pass, 1 fail)");
    cmd->add_option("sources", args->sources,
                    "Record directories (their *.json and *.jsonl files) and record files (one record, or one "
                    "per line)")
        ->required()
        ->check(CLI::ExistingPath);
    cmd->add_option("--format", args->format, "text, json or html (one self-contained page)")
        ->check(CLI::IsMember({"text", "json", "html"}))
        ->capture_default_str();
    cmd->add_option("-o,--output", args->output, "Write to this file (atomically, mode 0644) instead of stdout");
    cmd->add_option("--min-conformance", args->min_conformance,
                    "Share of nodes that must conform for the verdict to pass (0 to 1)")
        ->check(CLI::Range(0.0, 1.0))
        ->capture_default_str();
    cmd->callback([&runner, args] { runner = [args] { return run_fleet_command(*args); }; });
}

}  // namespace launchguard::cli
