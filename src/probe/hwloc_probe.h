// The node's topology from hwloc: live discovery, or an hwloc XML export so
// every test can replay a real machine (the way hwloc's own tools take
// --input). Only what launchguard's rules need is kept: NUMA nodes, GPUs,
// RDMA NICs with their ports and netdevs, network interfaces.
#pragma once

#include <string>

#include "context/topology.h"
#include "util/error.h"

namespace launchguard {

// Errors (missing file, malformed XML) name the file.
Result<NodeTopology> load_topology_from_xml(const std::string& path);

// This machine, with PCI and OS devices. CPUs the calling process may not use
// (a cgroup-restricted task) are kept: the topology describes the node.
Result<NodeTopology> discover_topology();

// The same discovery, exported as hwloc XML: what --hwloc-xml reads back.
Result<std::string> export_live_topology_xml();

}  // namespace launchguard
