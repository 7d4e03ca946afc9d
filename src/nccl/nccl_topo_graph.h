// The node-and-link graph NCCL builds from its topology XML (src/graph/topo.cc,
// ncclTopoGetSystemFromXml) and the breadth-first path search over it
// (src/graph/paths.cc, ncclTopoSetPaths). Internal to nccl_paths.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nccl/nccl_paths.h"
#include "nccl/topology_elements.h"

namespace launchguard::nccl::graph {

enum class NodeType { cpu, pci, nvs, gpu, nic, net };
enum class LinkType { loc = 0, nvl = 1, c2c = 3, pci = 4, sys = 9, net = 10 };

struct Link {
    LinkType type;
    double bw;
    int remote;
};

struct Node {
    NodeType type = NodeType::pci;
    std::string busid;  // PCI bus id (lower case); "" for CPU, NVS, NET
    int line = 0;
    std::vector<Link> links;
    // CPU
    std::string numaid;
    std::string arch;
    std::string vendor;
    // GPU
    int sm = -1;               // -1: unknown (the driver fills it in)
    std::optional<bool> gdr;   // <gpu gdr>, or the net's <net gdr>
    int dev = -1;              // <gpu dev> / <net dev>
    bool from_driver = false;  // GPU without <gpu>: NVML adds it and its NVLinks
    bool from_plugin = false;  // NIC/NET without <nic>/<net>: the net plugin adds it
    double net_bw = 0;         // NET: speed / 8000
    int nic = -1;              // NET: its NIC node
    // PCI switch: vendor<<48 | device<<32 | subsystem_vendor<<16 | subsystem_device
    // (ncclTopoGetIntDevice), what Broadcom switch flattening matches on.
    std::uint64_t device = 0;
    // CPU: familyid/modelid (ncclTopoAddCpu reads them for Intel and Zhaoxin).
    int family = 0;
    int model = 0;
};

struct PathInfo {
    Path type = Path::dis;
    double bw = 0;
    int count = 0;
};

struct Graph {
    std::vector<Node> nodes;
    std::string error;
    int error_line = 0;
    std::vector<std::string> notes;
    // paths[base][n]: the path from node n to node base (filled for CPUs, GPUs, NETs)
    std::vector<std::vector<PathInfo>> paths;

    [[nodiscard]] std::vector<int> of_type(NodeType type) const;
    PathInfo& path(int from, int to) { return paths[static_cast<std::size_t>(to)][static_cast<std::size_t>(from)]; }
};

// ncclTopoGetSystemFromXml: CPUs, PCI switches, GPUs, NICs and NETs with
// their links.
Graph build_graph(const TopologyTree& tree);

// ncclTopoSetPaths for every CPU, GPU and NET; `nvb_disabled` is
// NCCL_NVB_DISABLE; `first_reach` is the search of releases before 2.30.7.
void compute_base_paths(Graph& graph, bool nvb_disabled, bool first_reach = false);

// NCCL's lower-case "dddd:bb:dd.f": what busIdToInt64 reads back.
std::string normalize_busid(const std::string& busid);

}  // namespace launchguard::nccl::graph
