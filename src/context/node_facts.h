// Node settings read from sysfs/procfs under an injectable root: power
// management, NUMA balancing, virtualization and IOMMU, page size.
#pragma once

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
};

}  // namespace launchguard
