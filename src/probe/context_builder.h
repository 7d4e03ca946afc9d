// Fills a LaunchContext from injectable sources. Every source can be pointed
// at a recording (an env file, an hwloc XML, a sysfs tree, a rootfs), so the
// CLI can replay a launch and tests never read the live machine.
#pragma once

#include <optional>
#include <string>

#include "context/launch_context.h"
#include "probe/node_facts_cache.h"
#include "probe/process_probe.h"
#include "util/error.h"
#include "util/phase_times.h"

namespace launchguard {

// The node's part of a launch, the same for every task on it: its topology
// (with live link states) and its sysfs facts.
struct NodeSnapshot {
    Fact<NodeTopology> topology;
    NodeFacts node;
    // The network interfaces of a live root ("/"), and the mount and network
    // namespaces they were read in: a task in the same two sees the same
    // /sys/class/net, and takes them from here.
    Fact<std::vector<NetInterface>> interfaces;
    std::optional<std::string> read_in_namespaces;
    // The CPUs' power settings and the GPUs' and NICs' links came from
    // ProbeOptions::node_facts_cache, not sysfs.
    bool node_facts_from_cache = false;
};

struct ProbeOptions {
    std::string root = "/";  // the task's filesystem: "/", an enroot rootfs, a fixture
    // How the task's files are looked at, when the caller has a view of
    // `root` already; absent, a RootedFileView of `root`.
    std::shared_ptr<const FileView> files;
    std::optional<Environment> environment;  // the task environment itself (SPANK: the job env); wins over pid
    std::optional<std::string> env_file;     // KEY=VALUE lines or a copy of /proc/PID/environ
    std::optional<int> pid;                  // probe this process (environ, affinity, limits, caps)
    // The pid's status file, when the caller has read it already: its mask,
    // capabilities and uid come from that one read. Absent: build_context
    // reads it once.
    std::optional<ProcessStatus> pid_status;
    std::string proc_root = "/proc";  // where `pid` is looked up (a recorded procfs in tests)
    // `root` is /proc/PID/root of `pid`: the process's namespaces are the
    // root's (a process seen from outside).
    bool root_of_pid = false;
    std::optional<std::string> host_root;      // host filesystem seen by an enroot hook
    std::optional<std::string> host_env_file;  // host environment, for propagation rules
    std::optional<std::string> hwloc_xml;      // topology from this file instead of live discovery
    // A launchguard topology cache (probe/topology_cache.h) to use when it
    // loads; a missing or unreadable cache falls back to the other sources.
    // Its node is this one, so live sysfs is laid over it.
    std::optional<std::string> topology_cache;
    bool live_topology = true;              // allow live hwloc discovery when no XML is given
    std::optional<std::string> sysfs_root;  // node facts and link states; "/" when absent
    std::optional<std::string> cpus;        // task CPU mask as a cpulist ("0-15,64-79")
    std::optional<std::string> gpus;        // GPU assignment, as in gpu_assignment.h
    std::optional<int> job_gpus;            // GPUs of the whole job
    std::optional<int> job_nodes;
    Runtime runtime = Runtime::unknown;   // unknown = detect
    bool use_current_process_env = true;  // fall back to launchguard's own environment
    // Read the PCIe extended capabilities (ACS, ATS) of the bridges on the
    // GPUs' and NICs' paths and of the NICs: node checks and `check` do; a
    // task check does not need them (no task rule reads them).
    bool pci_capabilities = false;
    // Read only the node facts that a task's rules use (NodeFactSet::task in
    // probe/sysfs_probe.h): no IOMMU groups, and PCIe link states for the
    // topology's GPUs and NICs instead of every device. The Slurm task
    // plugin does; node checks and `check` read everything.
    bool task_facts_only = false;
    // Only what the per-task rules read (is_per_task_rule): environment,
    // files, CPU mask, node, topology and GPUs; no interfaces, container or
    // host view. A Slurm task that shares its step's verdict judges these.
    bool per_task_facts_only = false;
    // Where the node facts whose reading grows with the node are kept
    // between reads (probe/node_facts_cache.h: the CPUs' power settings, and
    // with task_facts_only the GPUs' and NICs' PCIe links), and for how long
    // they may be taken from there instead of sysfs; unset or 0: read every
    // time. The Slurm task plugin sets it. Reading only: the caller saves
    // what was read (cacheable_node_facts, save_node_facts_cache), where it
    // has the right to.
    std::optional<std::string> node_facts_cache;
    long node_facts_max_age = 0;  // seconds
    // The node's part read once for every task (probe_node_snapshot, with
    // these options); absent, build_context reads it itself.
    std::optional<NodeSnapshot> node_snapshot;
    // When not null, the wall time of each part read is added here
    // ("env", "node.power", "topology", "interfaces"...; util/phase_times.h).
    PhaseTimes* timings = nullptr;
};

// Errors are for inputs the caller named and that cannot be used (an
// unreadable env file, a bad --cpus, a malformed hwloc XML); a fact that is
// merely unavailable becomes Fact::unknown with the reason. The options are
// taken by value: their environment and node snapshot move into the context
// (copying them was an eighth of a Slurm task check: docs/performance.md).
Result<LaunchContext> build_context(ProbeOptions options);

// What build_context would read for the node: the topology from
// hwloc_xml/topology_cache/live discovery with sysfs_root laid over it, and
// the node facts under sysfs_root. Errors as build_context's for hwloc_xml.
Result<NodeSnapshot> probe_node_snapshot(const ProbeOptions& options);

// What the node facts cache is keyed on under these options: their sysfs
// root, and the task's set of facts or all of them.
NodeFactsCacheKey node_facts_cache_key(const ProbeOptions& options);
// What of a snapshot the cache keeps: the power settings, and the links of
// the topology's GPUs and NICs when they were read for those alone.
CachedNodeFacts cacheable_node_facts(const NodeSnapshot& snapshot);

// The runtime a launch runs in, from the markers its environment and root
// carry: KUBERNETES_SERVICE_HOST => kubernetes; ENROOT_ROOTFS or
// container=enroot => enroot, or pyxis when Slurm started it; a marker file
// of another engine in `files` (the launch's root) => unknown; else bare.
Runtime detect_runtime(const Environment& env, const FileView& files);

// Nodes, tasks and total GPUs of the job: explicit values first, then Slurm's
// environment (see the definition for which variables and how).
JobShape job_shape_from(const Environment& env, std::optional<int> job_nodes, std::optional<int> job_gpus);

}  // namespace launchguard
