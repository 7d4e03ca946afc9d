#include "probe/topology_cache_refresh.h"

#include "probe/hwloc_probe.h"
#include "probe/topology_cache.h"

namespace launchguard {

Result<NodeTopology> refresh_topology_cache(const std::string& path, long max_age_seconds) {
    if (topology_cache_is_fresh(path, max_age_seconds)) {
        auto cached = load_topology_cache(path);
        if (cached) return cached;
    }
    auto live = discover_topology();
    if (!live) return live.error();
    auto saved = save_topology_cache(*live, path);
    if (!saved) return saved.error();
    return live;
}

}  // namespace launchguard
