// `launchguard node-check`: the node-scope rules on this node, once, outside
// any job, under a deadline. Plain output is the report `check` prints;
// --npd speaks node-problem-detector's plugin contract; --slurm acts as
// Slurm's HealthCheckProgram (node_check_slurm.cpp); --metrics-file writes
// the result for node_exporter's textfile collector.
#include <boost/json.hpp>
#include <cstdlib>
#include <iostream>

#include "cli/command.h"
#include "cli/node_check.h"
#include "node/node_metrics.h"
#include "node/node_record.h"
#include "report/json_report.h"
#include "util/atomic_file.h"
#include "util/text_escape.h"

namespace launchguard::cli {
namespace {

struct NodeCheckArgs {
    std::string profile = "default";
    std::string mode = "enforce";
    std::string hwloc_xml;
    std::string sysfs_root;
    std::string topology_cache = kDefaultTopologyCachePath;
    bool no_topology_cache = false;
    long topology_cache_max_age = kDefaultTopologyCacheMaxAge;
    std::string format = "text";
    int timeout = static_cast<int>(kDefaultNodeCheckTimeout.count());
    bool slurm = false;
    bool npd = false;
    std::string metrics_file;
    std::string record_dir;
    std::string node_class;
    std::string config;

    // Options given on the command line; with --slurm they override the
    // configuration file.
    CLI::Option* profile_opt = nullptr;
    CLI::Option* mode_opt = nullptr;
    CLI::Option* hwloc_opt = nullptr;
    CLI::Option* sysfs_opt = nullptr;
    CLI::Option* cache_opt = nullptr;
    CLI::Option* cache_age_opt = nullptr;
    CLI::Option* timeout_opt = nullptr;
    CLI::Option* metrics_opt = nullptr;
    CLI::Option* record_dir_opt = nullptr;
    CLI::Option* node_class_opt = nullptr;
};

std::string config_path(const NodeCheckArgs& args, bool& named) {
    named = true;
    if (!args.config.empty()) return args.config;
    if (const char* env = std::getenv(kNodeCheckConfigEnv); env != nullptr && *env != '\0') return env;
    named = false;
    return kNodeCheckConfigPath;
}

// The command line's explicit options over the file's.
void apply_overrides(const NodeCheckArgs& args, NodeCheckConfig& config) {
    if (args.profile_opt->count() > 0) config.profile = args.profile;
    if (args.mode_opt->count() > 0) config.options.mode = *parse_mode(args.mode);
    if (args.hwloc_opt->count() > 0) config.options.hwloc_xml = args.hwloc_xml;
    if (args.sysfs_opt->count() > 0) config.options.sysfs_root = args.sysfs_root;
    if (args.cache_opt->count() > 0) config.options.topology_cache = args.topology_cache;
    if (args.no_topology_cache) config.options.topology_cache.clear();
    if (args.cache_age_opt->count() > 0) config.options.topology_cache_max_age = args.topology_cache_max_age;
    if (args.timeout_opt->count() > 0) config.timeout = std::chrono::seconds(args.timeout);
    if (args.metrics_opt->count() > 0) config.metrics_file = args.metrics_file;
    if (args.record_dir_opt->count() > 0) config.record_dir = args.record_dir;
    if (args.node_class_opt->count() > 0) config.node_class = args.node_class;
}

NodeCheckConfig config_from_args(const NodeCheckArgs& args) {
    NodeCheckConfig config;
    config.profile = args.profile;
    config.options.mode = *parse_mode(args.mode);
    if (!args.hwloc_xml.empty()) config.options.hwloc_xml = args.hwloc_xml;
    if (!args.sysfs_root.empty()) config.options.sysfs_root = args.sysfs_root;
    config.options.topology_cache = args.no_topology_cache ? std::string() : args.topology_cache;
    config.options.topology_cache_max_age = args.topology_cache_max_age;
    config.timeout = std::chrono::seconds(args.timeout);
    if (!args.metrics_file.empty()) config.metrics_file = args.metrics_file;
    if (!args.record_dir.empty()) config.record_dir = args.record_dir;
    config.node_class = args.node_class;
    return config;
}

int run_node_check_command(const NodeCheckArgs& args) {
    if (args.slurm) {
        bool named = false;
        const std::string path = config_path(args, named);
        auto config = load_node_check_config(path, named);
        if (!config) {
            // slurmd logs a failing health check's output: say it there too.
            std::cout << "launchguard node-check: configuration: " << printable_text(config.error().to_string())
                      << "\n";
            return bad_input("node-check configuration: " + config.error().to_string());
        }
        apply_overrides(args, *config);
        return run_slurm_health_check(*config);
    }

    const NodeCheckConfig config = config_from_args(args);
    NodeCheckRequest request;
    request.profile = config.profile;
    request.options = config.options;
    request.record = config.record_dir.has_value() || config.metrics_file.has_value();
    request.node_class = config.node_class;
    if (!args.npd) {
        request.format = args.format == "json" ? NodeReportFormat::json : NodeReportFormat::text;
        request.color = args.format == "text" && stdout_is_terminal();
    }
    const TimedRun timed = run_timed(request, config.timeout);
    const NodeCheckRun& run = timed.run;
    for (const auto& note : run.notes) std::cerr << "launchguard: note: " << printable_text(note) << "\n";

    int code = exit_code_for(run.verdict.health);
    if (config.metrics_file) {
        if (auto failed = write_metrics(*config.metrics_file, config, timed)) {
            std::cerr << "launchguard: " << printable_text(*failed) << "\n";
            if (code != kExitBlock) code = kExitBadInput;
        }
    }
    if (config.record_dir) {
        if (auto failed = write_record(*config.record_dir, config, timed)) {
            std::cerr << "launchguard: " << printable_text(*failed) << "\n";
            if (code != kExitBlock) code = kExitBadInput;
        }
    }
    if (args.npd) {
        // NPD keeps one short message from stdout; everything else goes to stderr.
        std::cout << npd_message(run.verdict) << "\n";
        return code;
    }
    if (run.verdict.health == NodeHealth::unknown) return bad_input("node check: " + run.verdict.problem);
    std::cout << run.report;
    return code;
}

}  // namespace

int exit_code_for(NodeHealth health) {
    switch (health) {
        case NodeHealth::healthy:
        case NodeHealth::warning:
            return kExitAllow;
        case NodeHealth::degraded:
            return kExitBlock;
        case NodeHealth::unknown:
            return kExitBadInput;
    }
    return kExitBadInput;
}

TimedRun run_timed(const NodeCheckRequest& request, std::chrono::seconds timeout) {
    const auto start = std::chrono::steady_clock::now();
    TimedRun timed;
    timed.run = run_node_check_with_deadline(request, timeout);
    timed.duration = std::chrono::steady_clock::now() - start;
    timed.finished = std::chrono::system_clock::now();
    return timed;
}

namespace {

std::optional<boost::json::object> node_record_of(const NodeCheckConfig& config, const TimedRun& timed,
                                                  std::string& error) {
    if (timed.run.record.empty()) {
        // The check did not run or finish: the fleet report should still
        // see this node, as unknown, rather than an old record.
        const NodeRecordHeader header{config.node_class.empty() ? config.profile : config.node_class, timed.finished};
        return unknown_node_record_json(timed.run.verdict.problem, header);
    }
    try {
        return boost::json::parse(timed.run.record).as_object();
    } catch (const std::exception& e) {
        error = std::string("the node record is malformed: ") + e.what();
        return std::nullopt;
    }
}

}  // namespace

std::optional<std::string> write_metrics(const std::string& path, const NodeCheckConfig& config,
                                         const TimedRun& timed) {
    std::string error;
    const auto record = node_record_of(config, timed, error);
    if (!record) return "--metrics-file: " + error;
    // node_exporter reads every *.prom file in its directory: the file must
    // never be seen half-written (util/atomic_file.h).
    auto written = write_file_atomically(
        path, render_node_metrics(timed.run.verdict, timed.finished, timed.duration, &*record), 0644);
    if (!written) return "--metrics-file: " + written.error().to_string();
    return std::nullopt;
}

std::optional<std::string> write_record(const std::string& dir, const NodeCheckConfig& config, const TimedRun& timed) {
    std::string error;
    const auto record = node_record_of(config, timed, error);
    if (!record) return "--record-dir: " + error;
    std::string hostname;
    if (const auto* node = record->if_contains("node"); node != nullptr && node->is_object()) {
        if (const auto* name = node->as_object().if_contains("hostname"); name != nullptr && name->is_string())
            hostname = name->as_string();
    }
    const std::string content = timed.run.record.empty() ? pretty_json(*record) : timed.run.record;
    const auto file = record_file_name(hostname);
    if (!file) return "--record-dir: this node's host name ('" + hostname + "') cannot name a record file";
    auto written = write_file_atomically(dir + "/" + *file, content, 0644);
    if (!written) return "--record-dir: " + written.error().to_string();
    return std::nullopt;
}

void add_node_check_command(CLI::App& app, CommandRunner& runner) {
    auto args = std::make_shared<NodeCheckArgs>();
    CLI::App* cmd =
        app.add_subcommand("node-check",
                           "Check this node (power, IOMMU, PCIe links, IB ports, inventory) once, outside any job; "
                           "as Slurm's HealthCheckProgram (--slurm) or a node-problem-detector plugin (--npd)");
    args->profile_opt = cmd->add_option("--profile", args->profile, "Embedded profile name or a profile YAML file")
                            ->capture_default_str();
    args->mode_opt = cmd->add_option("--mode", args->mode, "enforce, patch or warn (warn: nothing blocks)")
                         ->check(CLI::IsMember({"enforce", "patch", "warn"}))
                         ->capture_default_str();
    args->hwloc_opt = cmd->add_option("--hwloc-xml", args->hwloc_xml,
                                      "Node topology from an hwloc XML file instead of live discovery");
    args->sysfs_opt = cmd->add_option("--sysfs-root", args->sysfs_root,
                                      "Read node facts (sys/, proc/) under this directory instead of /")
                          ->check(CLI::ExistingDirectory);
    args->cache_opt = cmd->add_option("--topology-cache", args->topology_cache,
                                      "The topology cache task checks read: reused while fresh, else rewritten from "
                                      "live discovery (needs root in /run)")
                          ->capture_default_str();
    auto* no_cache =
        cmd->add_flag("--no-topology-cache", args->no_topology_cache, "Neither read nor write the topology cache");
    no_cache->excludes(args->cache_opt);
    args->cache_age_opt = cmd->add_option("--topology-cache-max-age", args->topology_cache_max_age,
                                          "Seconds after which the cache is rediscovered")
                              ->check(CLI::Range(0L, 10L * 365 * 24 * 3600))
                              ->capture_default_str();
    cmd->add_option("--format", args->format, "text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    args->timeout_opt = cmd->add_option("--timeout", args->timeout,
                                        "Seconds the check may take; a probe that stalls longer makes the result "
                                        "unknown (exit 2)")
                            ->check(CLI::Range(1, kMaxNodeCheckTimeoutSeconds))
                            ->capture_default_str();
    auto* slurm = cmd->add_flag("--slurm", args->slurm,
                                "Run as Slurm's HealthCheckProgram: settings from " +
                                    std::string(kNodeCheckConfigPath) + " (or $" + kNodeCheckConfigEnv +
                                    "), drain on a blocking finding, resume "
                                    "launchguard's own drains");
    auto* npd = cmd->add_flag("--npd", args->npd,
                              "node-problem-detector custom plugin: one short message on stdout; exit 0 healthy, "
                              "1 problem, 2 unknown");
    slurm->excludes(npd);
    args->metrics_opt = cmd->add_option("--metrics-file", args->metrics_file,
                                        "Also write the result as Prometheus text (node_exporter textfile collector), "
                                        "atomically");
    args->record_dir_opt =
        cmd->add_option("--record-dir", args->record_dir,
                        "Also write the node record (the JSON of --format json) to DIR/<hostname>.json, atomically, "
                        "on every run: a shared directory that `launchguard fleet` reads")
            ->check(CLI::ExistingDirectory);
    args->node_class_opt = cmd->add_option("--node-class", args->node_class,
                                           "Node class named in the record (default: the profile's name)");
    cmd->add_option("--config", args->config,
                    "With --slurm: the configuration file (default: $" + std::string(kNodeCheckConfigEnv) + ", else " +
                        kNodeCheckConfigPath + ")")
        ->needs(slurm);
    cmd->callback([&runner, args] { runner = [args] { return run_node_check_command(*args); }; });
}

}  // namespace launchguard::cli
