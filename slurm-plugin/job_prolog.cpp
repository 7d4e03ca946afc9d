// JOB_SCRIPT context, slurm_spank_job_prolog: root, once per node, before the
// job's first step. Node-level rules (power, IOMMU, PCIe links, IB ports,
// inventory) and the topology cache the tasks read.
#include "decision_log.h"
#include "node/node_check.h"
#include "profile/profile.h"
#include "spank_glue.h"
#include "step_profile.h"

namespace launchguard::slurm {

int run_job_prolog(spank_t sp, const PluginConfig& config) {
    if (config.mode == Mode::off) return 0;
    const auto& profile = step_profile(config.profile);
    if (!profile) {
        log_error("job_prolog: profile: " + profile.error().to_string());
        return config.on_error == OnError::block ? -1 : 0;
    }

    NodeCheckOptions options;
    // Node findings are the operator's: the user option does not apply here,
    // and only `enforce` fails the prolog (which drains the node).
    options.mode = config.mode;
    options.hwloc_xml = config.hwloc_xml;
    options.sysfs_root = config.sysfs_root;
    options.topology_cache = config.topology_cache;
    options.topology_cache_max_age = config.topology_cache_max_age;
    auto check = run_node_check(*profile, options);
    if (!check) {
        log_error("job_prolog: cannot inspect the node: " + check.error().to_string());
        return config.on_error == OnError::block ? -1 : 0;
    }
    if (check->cache_error) log_error("job_prolog: topology cache: " + check->cache_error->to_string());
    const Report& report = check->report;

    char* job_id = std::getenv("SLURM_JOB_ID");
    DecisionSite site{"job_prolog", job_id ? job_id : "?", "prolog", short_hostname()};
    log_info(decision_line(site, report));
    for (const auto& f : report.findings) {
        std::string line = "job_prolog: " + std::string(to_string(f.action)) + " " + f.rule + ": " + f.message;
        if (f.action == Action::block)
            log_error(line);
        else
            log_info(line);
    }
    (void)sp;
    return report.decision == Decision::block ? -1 : 0;
}

}  // namespace launchguard::slurm
