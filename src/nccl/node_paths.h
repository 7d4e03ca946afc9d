// NCCL's path decisions for a launch: from the task's NCCL_TOPO_FILE when it
// sets one, else from the node as NCCL reads it from sysfs (ncclTopoGetSystem
// builds the same XML from /sys/bus/pci when no file is given).
#pragma once

#include <optional>
#include <string>

#include "context/launch_context.h"
#include "nccl/nccl_paths.h"

namespace launchguard::nccl {

struct NodePaths {
    std::string source;   // "NCCL_TOPO_FILE=/etc/topo.xml", "this node (hwloc/sysfs)"
    std::string unknown;  // why no model could be built ("" when built or no GPU)
    bool no_gpu = false;  // the node has no GPU: nothing for NCCL to place
    PathModel model;
};

// The NCCL_* variables of an environment.
std::map<std::string, std::string> nccl_variables(const Environment& env);

// The topology XML NCCL would build from sysfs for this node: one <cpu> per
// NUMA node, each GPU and NIC below the PCI bridges above it.
std::string topology_xml_from_node(const NodeTopology& node);

NodePaths predict_node_paths(const LaunchContext& ctx, const FileView* files, std::optional<Version> version);

}  // namespace launchguard::nccl
