// Node settings and link states read from sysfs/procfs under an injectable
// root: "/" on a live node, a recorded tree in tests (like HWLOC_FSROOT).
// A fact whose files are absent is unknown, with the path that was missing.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "context/node_facts.h"
#include "context/topology.h"

namespace launchguard {

// Reads under root: sys/devices/system/cpu (cpufreq per CPU or per policy,
// cpuidle, intel_pstate, boost), proc/sys/kernel/numa_balancing,
// proc/cmdline, DMI / hypervisor / device tree / cpuinfo for virtualization,
// sys/kernel/iommu_groups, sys/class/iommu, sys/bus/pci/devices links. On
// the live node ("/") page size and architecture come from the running
// kernel (sysconf, uname); under another root from what the tree holds: the
// page size from the transparent huge page PMD size, aarch64 from the arm64
// form of proc/cpuinfo.
NodeFacts probe_node_facts(const std::string& root);

// Adds what hwloc does not know: IB port state / physical state / rate /
// link layer (sys/class/infiniband), PCIe current and max link of each GPU
// and NIC (sys/bus/pci/devices), and interface operstate (sys/class/net).
// HCAs and interfaces sysfs knows but the topology lacks are added.
// `links`: the link states of every PCI device under this root, read already
// (NodeFacts::pcie_links), or null to read them here: on a node with
// hundreds of PCI devices, that is four files each.
void augment_topology_from_sysfs(NodeTopology& topo, const std::string& root,
                                 const std::map<std::string, PcieLinkRecord>* links = nullptr);

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
