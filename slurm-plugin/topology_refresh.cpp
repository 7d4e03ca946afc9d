// The node's topology cache, refreshed as root by slurmd's init (core_entry.cpp)
// and by the job prolog (job_prolog.cpp); tasks only read it.
#include "probe/hwloc_probe.h"
#include "probe/topology_cache.h"
#include "spank_glue.h"

namespace launchguard::slurm {

Result<NodeTopology> refresh_topology_cache(const PluginConfig& config) {
    if (topology_cache_is_fresh(config.topology_cache, config.topology_cache_max_age)) {
        auto cached = load_topology_cache(config.topology_cache);
        if (cached) return cached;
    }
    auto live = discover_topology();
    if (!live) return live.error();
    auto saved = save_topology_cache(*live, config.topology_cache);
    if (!saved) return saved.error();
    return live;
}

}  // namespace launchguard::slurm
