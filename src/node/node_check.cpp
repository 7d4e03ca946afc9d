#include "node/node_check.h"

#include "engine/rule_selection.h"
#include "probe/context_builder.h"
#include "probe/topology_cache_refresh.h"
#include "rules/rule.h"

namespace launchguard {

EvaluationOptions node_evaluation_options(Mode mode) {
    EvaluationOptions options;
    options.mode = mode;
    options.scopes = kScopeNode;
    return options;
}

Result<NodeCheck> run_node_check(const Profile& profile, const NodeCheckOptions& options,
                                 const std::function<void(std::string_view)>& step) {
    auto note = [&](const std::string& text) {
        if (step) step(text);
    };
    NodeCheck check;
    ProbeOptions probe;
    // The node is judged, not a task: neither launchguard's own environment
    // nor a job's is NCCL's here.
    probe.use_current_process_env = false;
    probe.environment = Environment{};
    probe.hwloc_xml = options.hwloc_xml;
    probe.sysfs_root = options.sysfs_root;
    probe.pci_capabilities = true;  // hw.pcie-acs-p2p, virt.ats-off
    if (!options.hwloc_xml && !options.topology_cache.empty()) {
        // Link and port states are read live from sysfs over the cache
        // either way; only the device inventory comes from it.
        note("refreshing the topology cache " + options.topology_cache);
        auto cached = refresh_topology_cache(options.topology_cache, options.topology_cache_max_age);
        if (cached)
            probe.topology_cache = options.topology_cache;
        else
            check.cache_error = cached.error();
    }
    note("probing the node (" + (options.hwloc_xml ? "hwloc XML " + *options.hwloc_xml : std::string("live topology")) +
         ", node facts under " + options.sysfs_root.value_or("/") + ")");
    auto context = build_context(probe);
    if (!context) return context.error();

    const EvaluationOptions evaluation = node_evaluation_options(options.mode);
    check.rules = selected_rule_ids(profile, evaluation);
    note("evaluating " + std::to_string(check.rules.size()) + " node rules");
    check.report = evaluate(*context, profile, evaluation);
    if (options.record_facts) {
        note("reading the node record's facts");
        check.record_facts = collect_node_record_facts(*context, profile, options.sysfs_root.value_or("/"));
    }
    return check;
}

}  // namespace launchguard
