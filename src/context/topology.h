// The node as hwloc and sysfs describe it: NUMA nodes, GPUs, NICs and their
// PCI bus ids, locality and links. Bus ids are always lower case
// "dddd:bb:dd.f", the form NCCL compares against topology files.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "context/cpu_set.h"

namespace launchguard {

struct PcieLink {
    double speed_gts = 0;  // per-lane transfer rate in GT/s (2.5, 5, 8, 16, 32, 64)
    int width = 0;         // lanes
};

struct PciLinkState {
    std::optional<PcieLink> current;
    std::optional<PcieLink> max;
    // hwloc only knows the aggregate bandwidth of the current link, in GB/s.
    std::optional<double> hwloc_gbps;
};

struct NumaNode {
    int os_index = -1;
    CpuSet cpus;
};

struct Gpu {
    int index = -1;      // CUDA/NVML ordinal (nvmlN, cudaN) when known, else discovery order
    std::string busid;   // lower case
    std::string uuid;    // when known
    std::string name;    // "nvml0", product name when known
    int numa_node = -1;  // -1 when unknown
    CpuSet local_cpus;   // CPUs of the nearest NUMA node / locality
    // Bus ids of the PCI-to-PCI bridges above the device, nearest the CPU
    // first; empty when it hangs off a host bridge directly (as in most VMs).
    std::vector<std::string> pci_bridges;
    PciLinkState link;
};

struct IbPort {
    int number = 1;
    std::string state;       // "ACTIVE", "DOWN", "INIT", "ARMED" (from hwloc PortNState or sysfs)
    std::string phys_state;  // "LinkUp", "Polling", "Disabled" when known
    std::optional<double> rate_gbps;
    std::string link_layer;  // "InfiniBand" / "Ethernet" when known
};

struct Nic {
    std::string hca;                   // RDMA device name, e.g. "mlx5_0"; empty for plain Ethernet
    std::vector<std::string> netdevs;  // "ib0", "eth0"
    std::string busid;
    int numa_node = -1;
    CpuSet local_cpus;
    std::vector<std::string> pci_bridges;  // as Gpu::pci_bridges
    std::vector<IbPort> ports;
    PciLinkState link;
    // The PCI driver of an RDMA device ("mlx5_core"), which names the verbs
    // provider the container needs; empty when sysfs does not say.
    std::string driver;
    // Its verbs character devices ("uverbs0"), /dev/infiniband/<name> in a task.
    std::vector<std::string> uverbs;
};

struct NetInterface {
    std::string name;  // "eth0", "ib0", "lo"
    bool up = true;
};

struct NodeTopology {
    std::string source;  // "hwloc live discovery", "hwloc XML /path"
    std::vector<NumaNode> numa_nodes;
    CpuSet all_cpus;
    std::vector<Gpu> gpus;
    std::vector<Nic> nics;                 // RDMA-capable devices and their netdevs
    std::vector<NetInterface> interfaces;  // every netdev hwloc/sysfs reported

    [[nodiscard]] const Gpu* gpu_by_index(int index) const;
    [[nodiscard]] const Gpu* gpu_by_busid(const std::string& busid) const;
    [[nodiscard]] const Gpu* gpu_by_uuid(const std::string& uuid) const;
    // Every (hca, port) pair whose state is ACTIVE.
    [[nodiscard]] std::size_t active_ib_port_count() const;
};

}  // namespace launchguard
