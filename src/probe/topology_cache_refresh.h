// Keeping the node's topology cache (probe/topology_cache.h) current: the
// one policy that slurmd's init, the job prolog and `launchguard node-check`
// share, so every writer agrees on when the cache is stale.
#pragma once

#include <string>

#include "context/topology.h"
#include "util/error.h"

namespace launchguard {

// The cached topology when the cache is fresh (topology_cache_is_fresh) and
// loads; otherwise a live hwloc discovery, written to `path` before it is
// returned. Writing needs root where the cache lives in /run.
Result<NodeTopology> refresh_topology_cache(const std::string& path, long max_age_seconds);

}  // namespace launchguard
