#include "nccl/topology_placement.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "context/cpu_set.h"

namespace launchguard::nccl {
namespace {

// Where one device sits in one description (the file's or the node's).
struct Position {
    std::string socket;                // the file's <cpu> line, or the node's NUMA node
    std::vector<std::string> bridges;  // PCI bridges above it, outermost first
};

PathType path_between(const Position& gpu, const Position& nic) {
    if (gpu.socket != nic.socket) return PathType::sys;
    std::size_t shared = 0;
    while (shared < gpu.bridges.size() && shared < nic.bridges.size() && gpu.bridges[shared] == nic.bridges[shared]) {
        ++shared;
    }
    if (shared == 0) return PathType::phb;
    // Both hang directly off the one bridge they share: one hop through it.
    bool siblings = shared == gpu.bridges.size() && shared == nic.bridges.size();
    return siblings ? PathType::pix : PathType::pxb;
}

struct Nearest {
    std::vector<std::string> nics;
    PathType path = PathType::sys;
};

Nearest nearest_nics(const Position& gpu, const std::map<std::string, Position>& nics) {
    Nearest nearest;
    for (const auto& [busid, nic] : nics) {
        PathType path = path_between(gpu, nic);
        if (nearest.nics.empty() || path < nearest.path) {
            nearest.nics = {busid};
            nearest.path = path;
        } else if (path == nearest.path) {
            nearest.nics.push_back(busid);
        }
    }
    return nearest;
}

bool share_any(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    return std::any_of(a.begin(), a.end(),
                       [&b](const std::string& x) { return std::find(b.begin(), b.end(), x) != b.end(); });
}

// The node's CPUs for a NUMA node: the node's own list, else the device's locality.
CpuSet node_cpus_of(const NodeTopology& node, int numa, const CpuSet& device_local) {
    for (const auto& n : node.numa_nodes) {
        if (n.os_index == numa) return n.cpus;
    }
    return device_local;
}

struct NodeDevice {
    std::string kind;
    std::string busid;
    int numa = -1;
    CpuSet local_cpus;
    std::vector<std::string> bridges;
};

std::vector<NodeDevice> node_devices(const NodeTopology& node) {
    std::vector<NodeDevice> devices;
    std::set<std::string> seen;
    for (const auto& gpu : node.gpus) {
        if (seen.insert(gpu.busid).second)
            devices.push_back({"GPU", gpu.busid, gpu.numa_node, gpu.local_cpus, gpu.pci_bridges});
    }
    for (const auto& nic : node.nics) {
        if (seen.insert(nic.busid).second)
            devices.push_back({"NIC", nic.busid, nic.numa_node, nic.local_cpus, nic.pci_bridges});
    }
    return devices;
}

}  // namespace

std::string_view to_string(PathType path) {
    switch (path) {
        case PathType::pix:
            return "PIX";
        case PathType::pxb:
            return "PXB";
        case PathType::phb:
            return "PHB";
        case PathType::sys:
            return "SYS";
    }
    return "SYS";
}

PlacementDrift compare_placement(const TopologyFile& file, const NodeTopology& node) {
    std::map<std::string, const TopoPci*> in_file;
    for (const auto& pci : file.pcis) in_file.emplace(pci.busid, &pci);

    PlacementDrift drift;
    std::map<std::string, std::pair<Position, Position>> gpus;  // busid -> (file, node)
    std::map<std::string, Position> file_nics;
    std::map<std::string, Position> node_nics;
    std::map<std::string, int> gpu_lines;
    for (const auto& device : node_devices(node)) {
        auto found = in_file.find(device.busid);
        if (device.busid.empty() || found == in_file.end() || device.numa < 0) continue;
        const TopoPci& pci = *found->second;

        DevicePlacementMismatch mismatch;
        mismatch.kind = device.kind;
        mismatch.busid = device.busid;
        mismatch.line = pci.line;
        mismatch.cpu_line = pci.cpu_line;
        mismatch.file_numa = pci.numaid;
        mismatch.node_numa = device.numa;
        mismatch.numa_differs = pci.numaid != std::to_string(device.numa);
        CpuSet node_cpus = node_cpus_of(node, device.numa, device.local_cpus);
        mismatch.node_cpus = node_cpus.to_list();
        if (auto file_cpus = CpuSet::parse_mask(pci.affinity); !pci.affinity.empty() && file_cpus) {
            mismatch.file_cpus = file_cpus.value().to_list();
            mismatch.cpus_differ = !node_cpus.empty() && !(file_cpus.value() == node_cpus);
        }
        if (mismatch.numa_differs || mismatch.cpus_differ) drift.devices.push_back(mismatch);

        Position in_file_tree{std::to_string(pci.cpu_line), pci.bridges};
        Position on_node{std::to_string(device.numa), device.bridges};
        if (device.kind == "GPU") {
            gpus.emplace(device.busid, std::make_pair(in_file_tree, on_node));
            gpu_lines[device.busid] = pci.line;
        } else {
            file_nics.emplace(device.busid, in_file_tree);
            node_nics.emplace(device.busid, on_node);
        }
    }
    if (file_nics.empty()) return drift;

    for (const auto& [busid, positions] : gpus) {
        Nearest by_file = nearest_nics(positions.first, file_nics);
        Nearest by_node = nearest_nics(positions.second, node_nics);
        if (share_any(by_file.nics, by_node.nics)) continue;
        drift.pairings.push_back(
            NicPairingMismatch{busid, gpu_lines[busid], by_file.nics, by_file.path, by_node.nics, by_node.path});
    }
    return drift;
}

}  // namespace launchguard::nccl
