// The node's topology cache, refreshed as root by slurmd's init (core_entry.cpp);
// tasks only read it.
#include "probe/topology_cache_refresh.h"
#include "spank_glue.h"

namespace launchguard::slurm {

Result<NodeTopology> refresh_topology_cache(const PluginConfig& config) {
    return launchguard::refresh_topology_cache(config.topology_cache, config.topology_cache_max_age);
}

}  // namespace launchguard::slurm
