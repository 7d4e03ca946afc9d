// The PCI subsystem's probes (sysfs_pci_probe.cpp) that probe_node_facts
// and augment_topology_from_sysfs assemble: IOMMU groups and units, PCIe
// links, GPUDirect RDMA's peer memory. Internal to the probe layer.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "context/node_facts.h"
#include "context/topology.h"
#include "probe/sysfs_probe.h"

namespace launchguard::sysfs {

Fact<std::vector<IommuUnit>> probe_iommu_units(const std::string& root);
Fact<std::vector<IommuGroup>> probe_iommu(const std::string& root);
std::map<std::string, PcieLinkRecord> read_pcie_links(const std::string& root);
Fact<std::map<std::string, PcieLinkRecord>> probe_pcie(const std::string& root);
void apply_link(PciLinkState& state, const std::map<std::string, PcieLinkRecord>& links, const std::string& busid);
// Five small reads: this is in every node snapshot, the Slurm step's too.
Fact<GpuDirectRdma> probe_gpudirect(const std::string& root);

}  // namespace launchguard::sysfs
