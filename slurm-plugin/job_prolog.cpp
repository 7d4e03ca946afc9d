// JOB_SCRIPT context, slurm_spank_job_prolog: root, once per node, before the
// job's first step. Node-level rules (power, IOMMU, PCIe links, IB ports,
// inventory) and the topology cache the tasks read.
#include "decision_log.h"
#include "probe/context_builder.h"
#include "profile/profile.h"
#include "rules/rule.h"
#include "spank_glue.h"

namespace launchguard::slurm {

int run_job_prolog(spank_t sp, const PluginConfig& config) {
    if (config.mode == Mode::off) return 0;
    auto profile = load_profile(config.profile);
    if (!profile) {
        log_error("job_prolog: profile: " + profile.error().to_string());
        return config.on_error == OnError::block ? -1 : 0;
    }

    ProbeOptions probe;
    probe.use_current_process_env = false;  // the prolog env is not a task env
    probe.environment = Environment{};
    probe.hwloc_xml = config.hwloc_xml;
    probe.sysfs_root = config.sysfs_root;
    if (!config.hwloc_xml) {
        // Reuse the node's cache when fresh (link and port states are read
        // live from sysfs either way); rediscover and rewrite it otherwise.
        auto cached = refresh_topology_cache(config);
        if (cached) probe.topology_cache = config.topology_cache;
        else log_error("job_prolog: topology cache: " + cached.error().to_string());
    }
    auto context = build_context(probe);
    if (!context) {
        log_error("job_prolog: cannot inspect the node: " + context.error().to_string());
        return config.on_error == OnError::block ? -1 : 0;
    }

    EvaluationOptions options;
    // Node findings are the operator's: the user option does not apply here,
    // and only `enforce` fails the prolog (which drains the node).
    options.mode = config.mode;
    options.scopes = kScopeNode;
    Report report = evaluate(*context, *profile, options);

    char* job_id = std::getenv("SLURM_JOB_ID");
    DecisionSite site{"job_prolog", job_id ? job_id : "?", "prolog", short_hostname()};
    log_info(decision_line(site, report));
    for (const auto& f : report.findings) {
        std::string line = "job_prolog: " + std::string(to_string(f.action)) + " " + f.rule + ": " + f.message;
        if (f.action == Action::block) log_error(line);
        else log_info(line);
    }
    (void)sp;
    return report.decision == Decision::block ? -1 : 0;
}

}  // namespace launchguard::slurm
