// Does a topology file put each device where the node has it? NCCL takes a
// GPU's CPU affinity from the numaid/affinity of the file's enclosing <cpu>
// and its GPU-NIC distances (PIX/PXB/PHB/SYS) from the file's tree, not from
// the machine (ncclTopoGetCpuAffinity in NCCL's src/graph/topo.cc, path
// computation in src/graph/paths.cc): a file whose <cpu> blocks are swapped, or
// that hangs a NIC under the other socket, pins threads to the wrong socket
// and pairs GPUs with far NICs, without a message.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "context/topology.h"
#include "nccl/topology_file.h"

namespace launchguard::nccl {

// NCCL's path types between a GPU and a NIC, nearest first (graph/topo.h).
enum class PathType {
    pix,  // through at most one PCIe bridge
    pxb,  // through several bridges, not through the host bridge
    phb,  // through the host bridge of one CPU
    sys,  // across the link between CPUs (another NUMA node)
};
std::string_view to_string(PathType path);

// One GPU or NIC whose NUMA node or CPU affinity differs between file and node.
struct DevicePlacementMismatch {
    std::string kind;  // "GPU" or "NIC"
    std::string busid;
    int line = 0;           // the device's <pci> line in the file
    int cpu_line = 0;       // its enclosing <cpu> line
    std::string file_numa;  // numaid as written
    int node_numa = -1;
    std::string file_cpus;  // the <cpu> affinity as a cpulist; empty when not written
    std::string node_cpus;  // the node's CPUs of that NUMA node, as a cpulist
    bool numa_differs = false;
    bool cpus_differ = false;
};

// A GPU whose nearest NICs by the file share none with its nearest by the node.
struct NicPairingMismatch {
    std::string gpu_busid;
    int gpu_line = 0;
    std::vector<std::string> file_nearest;
    PathType file_path = PathType::sys;
    std::vector<std::string> node_nearest;
    PathType node_path = PathType::sys;
};

struct PlacementDrift {
    std::vector<DevicePlacementMismatch> devices;
    std::vector<NicPairingMismatch> pairings;
    [[nodiscard]] bool drifted() const { return !devices.empty() || !pairings.empty(); }
};

// Compares only the GPUs and NICs both sides have (topo.busid-drift reports
// the rest) and only where the node knows the NUMA node. A node whose PCI
// tree shows no switches (a VM) ties every NIC of a socket, so the file may
// pick any of them without a finding: that choice is what the file is for.
PlacementDrift compare_placement(const TopologyFile& file, const NodeTopology& node);

}  // namespace launchguard::nccl
