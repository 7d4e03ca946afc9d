// Node settings and link states read from sysfs/procfs under an injectable
// root: "/" on a live node, a recorded tree in tests (like HWLOC_FSROOT).
// A fact whose files are absent is unknown, with the path that was missing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "context/node_facts.h"
#include "context/topology.h"
#include "util/phase_times.h"

namespace launchguard {

// Reads under root: sys/devices/system/cpu (cpufreq per CPU or per policy,
// cpuidle, intel_pstate, boost), proc/sys/kernel/numa_balancing,
// proc/cmdline, DMI / hypervisor / device tree / cpuinfo for virtualization,
// sys/kernel/iommu_groups, sys/class/iommu, sys/bus/pci/devices links. On
// the live node ("/") page size and architecture come from the running
// kernel (sysconf, uname); under another root from what the tree holds: the
// page size from the transparent huge page PMD size, aarch64 from the arm64
// form of proc/cpuinfo.
// Which node facts to read. A task's rules (scope L) read neither the IOMMU
// groups (virt.iommu-translating and virt.iommu-strict are node rules) nor
// the link state of any PCI device but the GPUs and NICs: for a task the
// groups are left unknown and the links are read for the topology's GPUs and
// NICs only (probe_pcie_links). On a server of hundreds of PCI devices and
// IOMMU groups that is most of the node's sysfs reads (docs/performance.md).
enum class NodeFactSet { all, task };

// `times`: when not null, the wall time of each family of reads is added
// ("node.power", "node.iommu", ...; util/phase_times.h). With
// NodeFactSet::task, iommu_groups is unknown and pcie_links is left unread
// (unknown) for the caller to fill with probe_pcie_links. `power`: the CPUs'
// power settings read already (probe/node_facts_cache.h), taken instead of
// reading them.
NodeFacts probe_node_facts(const std::string& root, PhaseTimes* times = nullptr, NodeFactSet set = NodeFactSet::all,
                           std::optional<Fact<CpuPower>> power = std::nullopt);

// The PCIe link records of the devices named (bus ids), under root's
// sys/bus/pci/devices; a device without link attributes is left out.
// Unknown when root has no sys/bus/pci/devices.
Fact<std::map<std::string, PcieLinkRecord>> probe_pcie_links(const std::string& root,
                                                             const std::vector<std::string>& busids);

// Adds what hwloc does not know: IB port state / physical state / rate /
// link layer (sys/class/infiniband), PCIe current and max link of each GPU
// and NIC (sys/bus/pci/devices), and interface operstate (sys/class/net).
// HCAs and interfaces sysfs knows but the topology lacks are added.
// `links`: the link states of every PCI device under this root, read already
// (NodeFacts::pcie_links), or null to read them here: on a node with
// hundreds of PCI devices, that is four files each.
// `gpu_nic_links`: when not null (and `links` is), only the links of the
// topology's GPUs and NICs (with the HCAs sysfs added) are read, and kept
// there (probe_pcie_links): what a task's rules need.
// Returns the interfaces root's sys/class/net lists, as read_net_interfaces
// reads them, for a caller that wants them too.
std::vector<NetInterface> augment_topology_from_sysfs(
    NodeTopology& topo, const std::string& root, const std::map<std::string, PcieLinkRecord>* links = nullptr,
    Fact<std::map<std::string, PcieLinkRecord>>* gpu_nic_links = nullptr);

// What names a node and its software for the node record (node/node_record.h):
// what rules do not read but fleets drift in. Each unknown has its reason.
struct NodeIdentity {
    Fact<std::string> hostname;        // proc/sys/kernel/hostname (gethostname on a live root)
    Fact<std::string> kernel_release;  // proc/sys/kernel/osrelease
    // sys/module/nvidia/version, else the "Kernel Module" line of
    // proc/driver/nvidia/version; "not loaded" when sys/module lacks nvidia.
    Fact<std::string> gpu_driver;
    struct Hca {
        std::string name;      // "mlx5_0"
        std::string model;     // hca_type ("MT4129"), else board_id; empty when neither reads
        std::string firmware;  // fw_ver; empty when unreadable
    };
    Fact<std::vector<Hca>> hcas;  // sys/class/infiniband, sorted by name
    // The GPU peer-memory module NCCL's GPUDirect RDMA needs without DMA-BUF:
    // "nvidia_peermem", "nv_peer_mem", or "none" when sys/module has neither.
    Fact<std::string> peer_memory;
};
NodeIdentity probe_node_identity(const std::string& root);

// The PCI Express extended capabilities of the devices named (lower-case bus
// ids), from the binary root/sys/bus/pci/devices/<busid>/config. One small
// read per device: callers pass the bridges on the GPU-NIC paths and the
// NICs, never every device of the node. A device whose config cannot be read
// is left out; unknown when root has no sys/bus/pci/devices at all.
Fact<std::map<std::string, PciCapabilities>> probe_pci_capabilities(const std::string& root,
                                                                    const std::vector<std::string>& busids);
// The same from one config space's bytes: the extended capability list
// starts at 0x100; each header holds the ID (bits 15:0), the version (19:16)
// and the next offset (31:20). ACS is ID 0x000D and ATS ID 0x000F; both keep
// their 16-bit Control register at capability + 6 (PCI Express Base
// Specification, "ACS Extended Capability" and "ATS Extended Capability";
// Linux include/uapi/linux/pci_regs.h PCI_ACS_CTRL, PCI_ATS_CTRL).
PciCapabilities parse_pci_capabilities(std::string_view config);

// Network interfaces under root/sys/class/net with their operstate.
std::vector<NetInterface> read_net_interfaces(const std::string& root);

// What the functions above found under one root, for `launchguard gather`
// to lay out as a tree that gives the same answers when read again. Paths
// are relative to the root ("sys/class/net/ib0/operstate"). What is absent
// (missing, unreadable, past its bound) is simply not in the recording.
struct SysfsRecording {
    std::map<std::string, std::string> files;  // read, with the bytes read
    std::set<std::string> directories;         // listed, tested, or an entry of a listing, and a directory
    // Other entries of a listing (a file, a socket, a dangling link): a name
    // in a listing is a fact too (sys/class/net/bonding_masters is taken
    // for an interface), even where the probes read nothing from it.
    std::set<std::string> other_entries;
    // A link whose resolved path a probe read (an HCA's device link gives its
    // PCI bus id), with what it resolved to relative to the root. A target
    // outside the root keeps its last component only, under sys/devices.
    std::map<std::string, std::string> links;
};

// While alive, the functions above add what they read under `root`, on this
// thread, to `recording`. A scope, not a parameter: the probes are a tree of
// small helpers, and only gathering wants to know what they read.
class RecordSysfsReads {
public:
    RecordSysfsReads(SysfsRecording& recording, const std::string& root);
    ~RecordSysfsReads();
    RecordSysfsReads(const RecordSysfsReads&) = delete;
    RecordSysfsReads& operator=(const RecordSysfsReads&) = delete;

    struct Active;  // the recording and where its root starts

private:
    std::unique_ptr<Active> active_;
    Active* previous_;
};

// "16.0 GT/s PCIe" -> 16.0; "Unknown" -> nullopt.
std::optional<double> parse_link_speed(std::string_view text);
// "400 Gb/sec (4X NDR)" -> 400.
std::optional<double> parse_ib_rate(std::string_view text);
// "4: ACTIVE" -> "ACTIVE"; "5: LinkUp" -> "LinkUp".
std::string parse_ib_state(std::string_view text);

}  // namespace launchguard
