#include "nccl/topology_drift.h"

#include <algorithm>
#include <set>

namespace launchguard::nccl {
namespace {

bool is_bridge_class(const std::string& cls) { return cls.rfind("0x0604", 0) == 0; }

}  // namespace

TopologyDrift compare_with_node(const TopologyFile& file, const NodeTopology& node) {
    std::set<std::string> listed;
    for (const auto& pci : file.pcis) listed.insert(pci.busid);

    TopologyDrift drift;
    for (const auto& gpu : node.gpus) {
        if (!gpu.busid.empty() && listed.count(gpu.busid) == 0) drift.gpus_missing.push_back(gpu.busid);
    }
    std::set<std::string> node_busids;
    for (const auto& gpu : node.gpus) node_busids.insert(gpu.busid);
    for (const auto& nic : node.nics) {
        node_busids.insert(nic.busid);
        if (!nic.busid.empty() && listed.count(nic.busid) == 0) drift.nics_missing.push_back(nic.busid);
    }
    for (const auto& pci : file.pcis) {
        if (is_bridge_class(pci.cls) || pci.busid.rfind("ffff:", 0) == 0) continue;
        if (node_busids.count(pci.busid) == 0) drift.not_on_node.push_back(pci.busid);
    }
    return drift;
}

}  // namespace launchguard::nccl
