// The elements of a topology file that NCCL keeps, with their attributes and
// parents: what the path model (nccl/nccl_paths.h) builds NCCL's graph from.
// Read by the same reader as parse_topology (topology_file.cpp).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nccl/topology_file.h"

namespace launchguard::nccl {

// One element NCCL keeps (<system>, <cpu>, <pci>, <gpu>, <nic>, <net>,
// <nvlink>, <c2c> or <pcilink>), with every attribute it stored.
struct TopoElement {
    std::string name;
    std::vector<std::pair<std::string, std::string>> attrs;
    int parent = -1;  // index into TopologyTree::elements, -1 for <system>
    int line = 0;
    [[nodiscard]] const std::string* attr(std::string_view key) const {
        for (const auto& [k, v] : attrs) {
            if (k == key) return &v;
        }
        return nullptr;
    }
};

struct TopologyTree {
    TopologyFile file;
    std::vector<TopoElement> elements;  // in document order
};

// parse_topology, keeping the elements too.
TopologyTree parse_topology_tree(std::string_view text);

}  // namespace launchguard::nccl
