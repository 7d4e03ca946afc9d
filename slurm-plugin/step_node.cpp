#include "step_node.h"

#include <optional>

#include "step_profile.h"

namespace launchguard::slurm {
namespace {

// Written by prepare_step on the loading thread; read only after slurmstepd's
// user_init has joined that thread, or in the tasks forked after it.
std::optional<NodeSnapshot> g_snapshot;
// What prepare_step's parts took, when the configuration asks (timing=1).
PhaseTimes g_prepare_times;

}  // namespace

ProbeOptions node_probe_options(const PluginConfig& config) {
    ProbeOptions probe;
    // The node's cache (written at slurmd start or by the prolog plugin) is
    // far cheaper than discovery; the probe falls back to discovery when it
    // is missing.
    if (config.hwloc_xml)
        probe.hwloc_xml = config.hwloc_xml;
    else
        probe.topology_cache = config.topology_cache;
    probe.sysfs_root = config.sysfs_root;
    // Only what the task rules read: no IOMMU groups, the PCIe links of the
    // GPUs and NICs alone (docs/performance.md).
    probe.task_facts_only = true;
    // The power settings and links as an earlier step read them, while that
    // is recent (node-facts-max-age): reading them grows with the CPUs and
    // devices, past what slurmstepd's set-up hides.
    probe.node_facts_cache = node_facts_cache_path(config);
    probe.node_facts_max_age = config.node_facts_max_age;
    return probe;
}

void prepare_step(const PluginConfig& config) noexcept {
    // A user may ask for a stricter mode than an `off` site (user-modes=);
    // then each task reads the node itself.
    if (config.mode == Mode::off) return;
    try {
        PhaseTimes* times = config.timing ? &g_prepare_times : nullptr;
        {
            PhaseTimer timer(times, "profile");
            (void)step_profile(config.profile);
        }
        ProbeOptions probe = node_probe_options(config);
        probe.timings = times;
        PhaseTimer timer(times, "node_snapshot");
        if (auto snapshot = probe_node_snapshot(probe)) g_snapshot = std::move(snapshot).value();
    } catch (...) {
        g_snapshot.reset();
    }
}

void save_prepared_node_facts(const PluginConfig& config) noexcept {
    if (!g_snapshot || g_snapshot->node_facts_from_cache || config.node_facts_max_age <= 0) return;
    try {
        (void)save_node_facts_cache(node_facts_cache_path(config), cacheable_node_facts(*g_snapshot),
                                    node_facts_cache_key(node_probe_options(config)));
    } catch (...) {
    }
}

const PhaseTimes& prepare_step_times() { return g_prepare_times; }

std::optional<NodeSnapshot> take_prepared_node_snapshot() {
    std::optional<NodeSnapshot> taken = std::move(g_snapshot);
    g_snapshot.reset();
    return taken;
}

}  // namespace launchguard::slurm
