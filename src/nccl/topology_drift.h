// Does a topology file describe this node? NCCL keeps only the <pci> nodes
// whose bus id equals (strcmp) one it detected itself; a file written for
// another SKU or VM layout is trimmed away silently (ncclTopoTrimXml in
// NCCL's src/graph/xml.cc; bus ids compared as NCCL formats them, lower case).
#pragma once

#include <string>
#include <vector>

#include "context/topology.h"
#include "nccl/topology_file.h"

namespace launchguard::nccl {

struct TopologyDrift {
    std::vector<std::string> gpus_missing;  // node GPU bus ids the file does not list (exactly)
    std::vector<std::string> nics_missing;  // node RDMA NIC bus ids the file does not list
    std::vector<std::string> not_on_node;   // endpoint bus ids in the file that this node lacks
    [[nodiscard]] bool drifted() const { return !gpus_missing.empty() || !nics_missing.empty(); }
};

// Fake bridges ("ffff:ff:01.0", used by Azure and AWS files to group devices)
// never exist on a node and are not reported in not_on_node.
TopologyDrift compare_with_node(const TopologyFile& file, const NodeTopology& node);

}  // namespace launchguard::nccl
