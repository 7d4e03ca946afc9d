// The node topology as a small JSON file, written once per node (slurmd
// start, or the prolog) and read by every task: loading it takes tens of
// microseconds where re-importing an hwloc XML takes milliseconds.
#pragma once

#include <string>
#include <string_view>

#include "context/topology.h"
#include "util/error.h"

namespace launchguard {

inline constexpr int kTopologyCacheVersion = 1;

std::string topology_to_json(const NodeTopology& topo);
Result<NodeTopology> topology_from_json(std::string_view text, const std::string& origin);

// A cache file that tasks read (`what`: "topology cache"): written aside and
// renamed, so a task never reads half of one, mode 0644, its directory
// created. Errors name the path and `what`.
Status save_cache_file(const std::string& path, std::string_view content, std::string_view what);

// Writes atomically (temporary file + rename), mode 0644, creating the directory.
Status save_topology_cache(const NodeTopology& topo, const std::string& path);
Result<NodeTopology> load_topology_cache(const std::string& path);

// A cache is fresh when it was written after the node booted and is younger
// than max_age_seconds: hardware is only replaced across reboots, and link
// and port states are read live from sysfs on every use anyway.
bool topology_cache_is_fresh(const std::string& path, long max_age_seconds);

}  // namespace launchguard
