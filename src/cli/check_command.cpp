// `launchguard check`: probe a launch (this host, a container rootfs, a
// process, recorded facts), evaluate it, print the report.
#include <boost/json.hpp>
#include <iostream>
#include <optional>

#include "cli/command.h"
#include "cli/path_output.h"
#include "engine/engine.h"
#include "engine/profile_loader.h"
#include "nccl/library_search.h"
#include "nccl/node_paths.h"
#include "probe/context_builder.h"
#include "profile/profile.h"
#include "report/fix_script.h"
#include "report/json_report.h"
#include "report/text_report.h"
#include "rules/rule.h"

namespace launchguard::cli {
namespace {

struct CheckArgs {
    std::string root = "/";
    std::string env_file;
    int pid = 0;
    std::string host_root;
    std::string host_env_file;
    std::string hwloc_xml;
    std::string topology_cache;
    std::string sysfs_root;
    std::string cpus;
    std::string gpus;
    int job_gpus = -1;
    int job_nodes = -1;
    std::string profile = "default";
    std::string mode = "enforce";
    std::string format = "text";
    std::string runtime;
    std::vector<std::string> only_rules;
    bool fix = false;
    bool paths = false;
};

std::optional<Runtime> parse_runtime(const std::string& text) {
    if (text == "bare") return Runtime::bare;
    if (text == "enroot") return Runtime::enroot;
    if (text == "pyxis") return Runtime::pyxis;
    if (text == "kubernetes") return Runtime::kubernetes;
    return std::nullopt;
}

// `check --paths`: NCCL's path decisions for this launch, with the NCCL release
// the task's loader would find deciding the release-dependent logic.
int print_launch_paths(const LaunchContext& ctx, const std::string& format) {
    std::optional<nccl::Version> version;
    if (ctx.env && ctx.files) {
        const std::string arch = ctx.node.arch ? ctx.node.arch.value() : "";
        version =
            nccl::find_nccl_library(*ctx.files, nccl::loader_dirs(&ctx.env.value(), ctx.files.get(), arch)).version;
    }
    nccl::NodePaths paths = nccl::predict_node_paths(ctx, ctx.files.get(), version);
    if (paths.no_gpu || !paths.unknown.empty()) {
        const std::string message =
            paths.no_gpu ? "no GPU on this node: NCCL has no GPU paths to decide" : "unknown, because " + paths.unknown;
        if (format == "json") {
            boost::json::object o;
            o["source"] = paths.source;
            o["no_gpu"] = paths.no_gpu;
            o["message"] = message;
            o["gpus"] = boost::json::array();
            o["gpu_pairs"] = boost::json::array();
            std::cout << pretty_json(o);
        } else {
            std::cout << paths.source << ": " << message << "\n";
        }
        return kExitAllow;
    }
    print_path_model(paths.model, paths.source, format);
    return paths.model.built ? kExitAllow : kExitBlock;
}

int run_check(const CheckArgs& args) {
    auto mode = parse_mode(args.mode);
    if (!mode) return bad_input("--mode: expected enforce, patch or warn, got '" + args.mode + "'");
    for (const auto& id : args.only_rules) {
        if (find_rule(id) == nullptr) return bad_input("--rule: unknown rule '" + id + "' (see `launchguard rules`)");
    }

    auto profile = load_profile(args.profile);
    if (!profile) return bad_input("--profile: " + profile.error().to_string());

    ProbeOptions probe;
    probe.root = args.root;
    if (!args.env_file.empty()) probe.env_file = args.env_file;
    if (args.pid > 0) probe.pid = args.pid;
    if (!args.host_root.empty()) probe.host_root = args.host_root;
    if (!args.host_env_file.empty()) probe.host_env_file = args.host_env_file;
    if (!args.hwloc_xml.empty()) probe.hwloc_xml = args.hwloc_xml;
    if (!args.topology_cache.empty()) probe.topology_cache = args.topology_cache;
    if (!args.sysfs_root.empty()) probe.sysfs_root = args.sysfs_root;
    if (!args.cpus.empty()) probe.cpus = args.cpus;
    if (!args.gpus.empty()) probe.gpus = args.gpus;
    if (args.job_gpus >= 0) probe.job_gpus = args.job_gpus;
    if (args.job_nodes >= 0) probe.job_nodes = args.job_nodes;
    probe.pci_capabilities = true;  // `check` runs the node rules too
    if (!args.runtime.empty()) {
        auto runtime = parse_runtime(args.runtime);
        if (!runtime)
            return bad_input("--runtime: expected bare, enroot, pyxis or kubernetes, got '" + args.runtime + "'");
        probe.runtime = *runtime;
    }

    auto context = build_context(probe);
    if (!context) return bad_input(context.error().to_string());
    if (args.paths) return print_launch_paths(*context, args.format);

    EvaluationOptions options;
    options.mode = *mode;
    options.scopes = kScopeCli | kScopeLive | kScopeNode;
    options.applicable = all_remediation_kinds();
    options.only_rules = args.only_rules;
    Report report = evaluate(*context, *profile, options);

    if (args.fix) {
        std::cout << render_fix_script(report);
    } else if (args.format == "json") {
        std::cout << render_json(report);
    } else {
        std::cout << render_text(report, TextStyle{stdout_is_terminal()});
    }
    return exit_code_for(report.decision);
}

}  // namespace

void add_check_command(CLI::App& app, CommandRunner& runner) {
    auto args = std::make_shared<CheckArgs>();
    CLI::App* cmd =
        app.add_subcommand("check", "Check a launch (default: this process on this machine) against a profile");
    cmd->add_option("--root", args->root, "Filesystem root the task sees (an enroot rootfs, a fixture tree)")
        ->check(CLI::ExistingDirectory);
    auto* env_file = cmd->add_option("--env-file", args->env_file,
                                     "Task environment: KEY=VALUE lines or NUL-separated (/proc/PID/environ)");
    auto* pid = cmd->add_option("--pid", args->pid, "Read environment and CPU mask from this running process")
                    ->check(count_in_range(1));
    // Both name the task's environment; silently preferring one would judge
    // a launch other than the one the user meant.
    env_file->excludes(pid);
    cmd->add_option("--host-root", args->host_root, "Filesystem root of the host side (for propagation rules)")
        ->check(CLI::ExistingDirectory);
    cmd->add_option("--host-env-file", args->host_env_file, "Environment the host side has (for propagation rules)");
    cmd->add_option("--hwloc-xml", args->hwloc_xml, "Node topology from an hwloc XML file instead of live discovery");
    cmd->add_option("--topology-cache", args->topology_cache,
                    "Node topology from launchguard's JSON cache (what the Slurm plugin reads), if it loads");
    cmd->add_option("--sysfs-root", args->sysfs_root, "Read node facts (sys/, proc/) under this directory instead of /")
        ->check(CLI::ExistingDirectory);
    cmd->add_option("--cpus", args->cpus, "Task CPU mask as a list, e.g. 0-15,32-47");
    cmd->add_option("--gpus", args->gpus, "GPUs assigned to the task: indices, UUIDs or PCI bus ids, comma-separated");
    cmd->add_option("--job-gpus", args->job_gpus, "Total GPUs in the job")->check(count_in_range(0));
    cmd->add_option("--job-nodes", args->job_nodes, "Nodes in the job")->check(count_in_range(0));
    cmd->add_option("--runtime", args->runtime, "How the task runs: bare, enroot, pyxis, kubernetes (default: detect)");
    cmd->add_option("--profile", args->profile, "Embedded profile name or a profile YAML file")->capture_default_str();
    cmd->add_option("--mode", args->mode, "enforce, patch or warn")
        ->check(CLI::IsMember({"enforce", "patch", "warn"}))
        ->capture_default_str();
    cmd->add_option("--format", args->format, "text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    cmd->add_option("--rule", args->only_rules, "Evaluate only this rule (repeatable)");
    cmd->add_flag("--fix", args->fix, "Print the remediation as shell exports and launcher flags");
    cmd->add_flag("--paths", args->paths,
                  "Instead of the report, predict NCCL's paths: each GPU's NICs, path and GPUDirect RDMA, each GPU "
                  "pair's path and P2P");
    cmd->callback([&runner, args] { runner = [args] { return run_check(*args); }; });
}

}  // namespace launchguard::cli
