// What a task check costs in a process that has done it before: the figure a
// node-local service would pay per task, where the Slurm plugin today pays
// it in a freshly forked task (docs/performance.md, "A service that keeps the
// checks warm"; docs/design/SLURM_PLUGIN.md).
//
// The process reads the node once, as slurmstepd's prepare_step does, then
// checks a task RUNS times the way the plugin's task_init does: a copy of the
// node snapshot, the task's root and environment, build_context, evaluate
// with the live rules. The first check is what a fresh process pays; the
// ones after it are what a resident one pays. Each line gives wall time and
// the page faults taken (getrusage), because where faults are dear they are
// most of a task's cost.
//
// Usage: resident_task_check [--root DIR] [--pid PID] [--topology-cache FILE]
//                            [--profile NAME] [--runs N]
//   --root DIR   the task's "/" (default "/"; /proc/PID/root is what a
//                service would look through)
//   --pid PID    the task whose CPU mask, limits and capabilities are read
//                (default: this process)
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/profile_loader.h"
#include "probe/context_builder.h"
#include "rules/rule.h"

extern char** environ;

namespace {

using namespace launchguard;

struct Options {
    std::string root = "/";
    std::optional<int> pid;
    std::optional<std::string> topology_cache;
    std::string profile = "default";
    int runs = 200;
};

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr,
                 "resident_task_check: %s\nusage: resident_task_check [--root DIR] [--pid PID] "
                 "[--topology-cache FILE] [--profile NAME] [--runs N]\n",
                 why);
    std::exit(2);
}

Options parse(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        if (i + 1 >= argc) usage(("missing value for " + flag).c_str());
        const char* value = argv[++i];
        if (flag == "--root") {
            options.root = value;
        } else if (flag == "--pid") {
            options.pid = std::atoi(value);
        } else if (flag == "--topology-cache") {
            options.topology_cache = value;
        } else if (flag == "--profile") {
            options.profile = value;
        } else if (flag == "--runs") {
            options.runs = std::atoi(value);
            if (options.runs < 2) usage("--runs must be at least 2");
        } else {
            usage(("unknown argument " + flag).c_str());
        }
    }
    return options;
}

Environment own_environment() {
    Environment env;
    for (char** entry = environ; *entry != nullptr; ++entry) {
        const char* equals = std::strchr(*entry, '=');
        if (equals != nullptr) env[std::string(*entry, static_cast<std::size_t>(equals - *entry))] = equals + 1;
    }
    return env;
}

long minor_and_major_faults() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt + usage.ru_majflt;
}

struct Sample {
    double micros;
    long faults;
};

ProbeOptions node_options(const Options& options) {
    ProbeOptions probe;
    probe.topology_cache = options.topology_cache;
    probe.task_facts_only = true;  // as the plugin's node_probe_options()
    return probe;
}

// One task check, as slurm-plugin/task_init.cpp runs it.
Sample check_once(const Options& options, const NodeSnapshot& node, const Profile& profile, const Environment& env,
                  std::size_t& findings) {
    const long faults_before = minor_and_major_faults();
    const auto start = std::chrono::steady_clock::now();
    ProbeOptions probe = node_options(options);
    probe.root = options.root;
    probe.pid = options.pid;
    probe.environment = env;
    probe.use_current_process_env = false;
    probe.node_snapshot = node;
    probe.job_nodes = 2;
    auto context = build_context(std::move(probe));
    if (!context) {
        std::fprintf(stderr, "resident_task_check: %s\n", context.error().to_string().c_str());
        std::exit(1);
    }
    EvaluationOptions evaluation;
    evaluation.mode = Mode::enforce;
    evaluation.scopes = kScopeLive;
    evaluation.applicable = {RemediationOp::Kind::set_env, RemediationOp::Kind::unset_env};
    const Report report = evaluate(*context, profile, evaluation);
    findings = report.findings.size();
    const auto elapsed = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start);
    return {elapsed.count(), minor_and_major_faults() - faults_before};
}

double percentile(std::vector<double> values, double fraction) {
    std::sort(values.begin(), values.end());
    return values[static_cast<std::size_t>(fraction * static_cast<double>(values.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
    const Options options = parse(argc, argv);
    const auto profile = load_profile(options.profile);
    if (!profile) {
        std::fprintf(stderr, "resident_task_check: %s\n", profile.error().to_string().c_str());
        return 1;
    }
    auto node = probe_node_snapshot(node_options(options));
    if (!node) {
        std::fprintf(stderr, "resident_task_check: %s\n", node.error().to_string().c_str());
        return 1;
    }
    const Environment env = options.pid ? Environment{} : own_environment();

    std::size_t findings = 0;
    const Sample first = check_once(options, *node, *profile, env, findings);
    std::vector<double> micros;
    std::vector<double> faults;
    for (int run = 1; run < options.runs; ++run) {
        const Sample warm = check_once(options, *node, *profile, env, findings);
        micros.push_back(warm.micros);
        faults.push_back(static_cast<double>(warm.faults));
    }
    std::printf("task check of root %s, profile %s, %zu findings\n", options.root.c_str(), options.profile.c_str(),
                findings);
    std::printf("%-28s %10s %10s %12s\n", "", "median us", "p90 us", "page faults");
    std::printf("%-28s %10.0f %10s %12ld\n", "first (a fresh process)", first.micros, "-", first.faults);
    std::printf("%-28s %10.0f %10.0f %12.1f\n", ("after it (" + std::to_string(micros.size()) + " runs)").c_str(),
                percentile(micros, 0.5), percentile(micros, 0.9), percentile(faults, 0.5));
    return 0;
}
