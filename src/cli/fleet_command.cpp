// `launchguard fleet`: node records from many nodes (node-check --format
// json, --record-dir), or rebuilt from the series node-check writes for
// node_exporter as Prometheus holds them (--prometheus), judged together by
// node class and layer, with drift, conformance over time where the source
// has history, and a verdict against a threshold (src/fleet, docs/fleet.md).
#include <boost/json.hpp>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "fleet/fleet.h"
#include "fleet/fleet_render.h"
#include "fleet/prometheus_client.h"
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
    std::string prometheus;
    std::string at;
    std::string since;
    std::string step;
    int timeout = 30;
};

// --since: a duration back from --at ("6h") or a time.
std::optional<double> since_time(const std::string& text, double at) {
    if (auto d = fleet::parse_duration_seconds(text)) return at - *d;
    return fleet::parse_time_seconds(text);
}

std::optional<fleet::FleetInput> read_source(const FleetArgs& args, int& code) {
    if (args.prometheus.empty()) return fleet::read_fleet(args.sources);
    std::string error;
    fleet::PrometheusRequest request;
    auto url = fleet::parse_prometheus_url(args.prometheus, error);
    if (!url) {
        code = bad_input("--prometheus: " + error);
        return std::nullopt;
    }
    request.url = std::move(*url);
    if (!args.at.empty()) {
        request.at = fleet::parse_time_seconds(args.at);
        if (!request.at) {
            code = bad_input("--at: '" + args.at + "' is not an RFC 3339 time or Unix seconds");
            return std::nullopt;
        }
    }
    const double at =
        request.at.value_or(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
    request.at = at;
    if (!args.since.empty()) {
        request.since = since_time(args.since, at);
        if (!request.since) {
            code = bad_input("--since: '" + args.since + "' is not a duration (6h, 2d, 1h30m) or a time");
            return std::nullopt;
        }
    }
    if (!args.step.empty()) {
        request.step = fleet::parse_duration_seconds(args.step);
        if (!request.step) {
            code = bad_input("--step: '" + args.step + "' is not a duration (30s, 5m, 1h)");
            return std::nullopt;
        }
    }
    request.timeout = std::chrono::seconds(args.timeout);
    auto input = fleet::read_prometheus(request, error);
    if (!input) code = bad_input("fleet --prometheus " + error);
    return input;
}

int run_fleet_command(const FleetArgs& args) {
    int code = 0;
    auto input = read_source(args, code);
    if (!input) return code;
    const fleet::FleetReport report = fleet::analyze_fleet(std::move(*input), args.min_conformance);
    if (report.nodes == 0) {
        for (const auto& e : report.errors)
            std::cerr << "launchguard: " << printable_text(e.origin + ": " + e.message) << "\n";
        if (report.errors_left_out > 0)
            std::cerr << "launchguard: ... and " << report.errors_left_out << " more errors\n";
        if (!report.incomplete.empty()) std::cerr << "launchguard: " << printable_text(report.incomplete) << "\n";
        return bad_input(args.prometheus.empty()
                             ? "fleet: no node record could be read from the sources given"
                             : "fleet: Prometheus at " + args.prometheus +
                                   " holds no launchguard node series at that time (launchguard_node_info)");
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
        std::cerr << "launchguard: " << report.errors.size() + report.errors_left_out
                  << " record(s) could not be read, first "
                  << printable_text(report.errors.front().origin + ": " + report.errors.front().message) << "\n";
    }
    code = report.passes() ? kExitAllow : kExitBlock;
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
        "Judge many node records (node-check --format json, --record-dir, or their series in Prometheus) together: "
        "conformance by node class and layer, drift from each class's majority, conformance over time, a verdict "
        "against --min-conformance (exit 0 pass, 1 fail)");
    auto* sources = cmd->add_option("sources", args->sources,
                                    "Record directories (their *.json and *.jsonl files) and record files (one "
                                    "record, or one per line)")
                        ->check(CLI::ExistingPath);
    auto* prometheus =
        cmd->add_option("--prometheus", args->prometheus,
                        "Read the nodes from Prometheus (http:// or https:// URL, with any path prefix) instead: the "
                        "series node-check --metrics-file writes, scraped by node_exporter");
    prometheus->excludes(sources);
    cmd->add_option("--at", args->at,
                    "With --prometheus: the time of the report, RFC 3339 or Unix seconds (default: now)")
        ->needs(prometheus);
    cmd->add_option("--since", args->since,
                    "With --prometheus: also show conformance over time from this time, or this long before --at "
                    "(6h, 2d, 1h30m)")
        ->needs(prometheus);
    cmd->add_option("--step", args->step,
                    "With --since: time between history points (default: the range / 120, at least 1s)")
        ->needs(prometheus);
    cmd->add_option("--timeout", args->timeout, "With --prometheus: seconds each query may take, connecting included")
        ->check(CLI::Range(1, 3600))
        ->capture_default_str()
        ->needs(prometheus);
    cmd->add_option("--format", args->format, "text, json or html (one self-contained page)")
        ->check(CLI::IsMember({"text", "json", "html"}))
        ->capture_default_str();
    cmd->add_option("-o,--output", args->output, "Write to this file (atomically, mode 0644) instead of stdout");
    cmd->add_option("--min-conformance", args->min_conformance,
                    "Share of nodes that must conform for the verdict to pass (0 to 1)")
        ->check(CLI::Range(0.0, 1.0))
        ->capture_default_str();
    cmd->callback([&runner, args] {
        if (args->sources.empty() && args->prometheus.empty())
            throw CLI::RequiredError("record sources or --prometheus URL");
        runner = [args] { return run_fleet_command(*args); };
    });
}

}  // namespace launchguard::cli
