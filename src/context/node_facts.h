// Node settings read from sysfs/procfs under an injectable root: power
// management, NUMA balancing, virtualization and IOMMU, page size.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "context/cpu_set.h"
#include "context/fact.h"
#include "context/topology.h"

namespace launchguard {

struct CpuPower {
    std::map<unsigned, std::string> governor;  // cpu -> scaling_governor
    std::map<unsigned, long> scaling_max_khz;  // cpu -> scaling_max_freq
    std::map<unsigned, long> cpuinfo_max_khz;  // cpu -> cpuinfo_max_freq
    std::optional<bool> intel_no_turbo;        // /sys/devices/system/cpu/intel_pstate/no_turbo
    std::optional<bool> cpufreq_boost;         // /sys/devices/system/cpu/cpufreq/boost
    struct IdleState {
        std::string name;
        bool disabled = false;
    };
    std::map<unsigned, std::vector<IdleState>> idle_states;  // cpu -> cpuidle states (state0..N)
};

struct IommuGroup {
    std::string id;
    std::string type;                  // "DMA", "DMA-FQ", "identity", "blocked"
    std::vector<std::string> devices;  // lower-case bus ids
};

// One IOMMU as the kernel registers it in /sys/class/iommu: Arm's SMMUv3
// ("smmu3.0x0000000016000000"), Intel VT-d ("dmar0"), AMD-Vi ("ivhd0").
struct IommuUnit {
    std::string name;
    std::string kind;  // "arm-smmu-v3", "arm-smmu", "intel-vt-d", "amd-vi"; "" when the name does not say
};

struct PcieLinkRecord {
    std::string busid;
    PcieLink current;
    PcieLink max;
};

// What NCCL's GPUDirect RDMA test finds on the node. NCCL (the IB transport's
// ncclIbGdrSupport, src/transport/net_ib/gdr.cc) takes any of three files as
// "peer memory is there": memory_peers/nv_mem/version, memory_peers/
// nv_mem_nc/version (the legacy nv_peer_mem module) and
// module/nvidia_peermem/version. Its other path, DMA-BUF
// (ncclIbDmaBufSupport), is decided by a driver call launchguard does not
// make; what the node shows about it is kept here so a rule can rule it out.
struct GpuDirectRdma {
    std::vector<std::string> peer_memory;       // the marker files above that exist, as read
    bool peermem_module_loaded = false;         // sys/module/nvidia_peermem exists
    std::optional<std::string> nvidia_driver;   // first line of /proc/driver/nvidia/version
    std::optional<std::string> kernel_release;  // /proc/sys/kernel/osrelease
};

// PCI Express extended capabilities of one device, from the binary
// configuration space (sys/bus/pci/devices/<busid>/config).
struct PciCapabilities {
    // The extended space (offsets 0x100-0xfff) could be read: sysfs gives an
    // unprivileged reader the first 64 bytes only.
    bool extended_readable = false;
    std::optional<std::uint16_t> acs_control;  // ACS Control register, when the ACS capability is present
    std::optional<std::uint16_t> ats_control;  // ATS Control register, when the ATS capability is present

    // ACS Control bits (PCI Express Base Specification, "ACS Control Register";
    // Linux include/uapi/linux/pci_regs.h PCI_ACS_SV, PCI_ACS_RR, PCI_ACS_CR).
    static constexpr std::uint16_t kAcsSourceValidation = 1U << 0;
    static constexpr std::uint16_t kAcsRequestRedirect = 1U << 2;
    static constexpr std::uint16_t kAcsCompletionRedirect = 1U << 3;
    // ATS Control: Enable is bit 15 (pci_regs.h PCI_ATS_CTRL_ENABLE).
    static constexpr std::uint16_t kAtsEnable = 1U << 15;
};

struct NodeFacts {
    Fact<CpuPower> power;
    Fact<bool> numa_balancing;                               // /proc/sys/kernel/numa_balancing
    Fact<std::string> kernel_cmdline;                        // /proc/cmdline
    Fact<std::string> virtualization;                        // "none", "kvm", "microsoft", ...
    Fact<std::vector<IommuGroup>> iommu_groups;              // /sys/kernel/iommu_groups
    Fact<std::vector<IommuUnit>> iommu_units;                // /sys/class/iommu
    Fact<long> page_size;                                    // bytes
    Fact<std::string> arch;                                  // "x86_64", "aarch64"
    Fact<std::map<std::string, PcieLinkRecord>> pcie_links;  // busid -> link, from sysfs
    Fact<GpuDirectRdma> gpudirect;                           // peer-memory modules, driver, kernel
    // Bridges on the GPUs' and NICs' paths and the NICs themselves (busid ->
    // capabilities); read only by front ends that judge the node, not per task.
    Fact<std::map<std::string, PciCapabilities>> pci_capabilities;
};

}  // namespace launchguard
