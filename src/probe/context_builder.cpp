#include "probe/context_builder.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <memory>

#include "probe/environment_probe.h"
#include "probe/gpu_assignment.h"
#include "probe/hwloc_probe.h"
#include "probe/node_facts_cache.h"
#include "probe/process_probe.h"
#include "probe/rooted_file_view.h"
#include "probe/sysfs_probe.h"
#include "probe/text_file.h"
#include "probe/topology_cache.h"

namespace launchguard {
namespace {

std::optional<int> env_int(const Environment& env, const char* name) {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    std::string_view v = trim(it->second);
    // Slurm writes counts such as SLURM_NTASKS plainly; "2(x4)" forms appear
    // only in per-node lists, which are not read here.
    int n = 0;
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || ptr != v.data() + v.size() || n < 0) return std::nullopt;
    return n;
}

// "8", "h100:8", "gpu:h100:8" -> 8 (a GRES count with an optional type).
std::optional<int> gres_count(std::string_view v) {
    v = trim(v);
    if (v.find(',') != std::string_view::npos) return std::nullopt;  // several types: not summed here
    std::size_t colon = v.rfind(':');
    if (colon != std::string_view::npos) v = v.substr(colon + 1);
    int n = 0;
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || ptr != v.data() + v.size() || n < 0) return std::nullopt;
    return n;
}

// Number of entries of an id list such as SLURM_JOB_GPUS="0,1,2,3".
int list_count(std::string_view v) {
    v = trim(v);
    if (v.empty()) return 0;
    int n = 1;
    for (char c : v) n += c == ',' ? 1 : 0;
    return n;
}

Fact<Environment> probe_env(ProbeOptions& o, std::optional<Error>& error) {
    // Given with a pid, the environment is the one the task will exec with
    // (a Slurm task before exec), which /proc/PID/environ does not show yet.
    if (o.environment) return Fact<Environment>::known(std::move(*o.environment), "environment given by the front end");
    if (o.pid) {
        auto env = read_process_environ(*o.pid, o.proc_root);
        if (!env) {
            error = env.error();
            return {};
        }
        return Fact<Environment>::known(std::move(env).value(),
                                        under_root(o.proc_root, std::to_string(*o.pid) + "/environ"));
    }
    if (o.env_file) {
        auto env = read_env_file(*o.env_file);
        if (!env) {
            error = env.error();
            return {};
        }
        return Fact<Environment>::known(std::move(env).value(), *o.env_file);
    }
    if (o.use_current_process_env)
        return Fact<Environment>::known(current_process_environment(), "environment of launchguard");
    return Fact<Environment>::unknown(
        "no environment source: neither a process, an env file nor launchguard's own environment");
}

Fact<CpuSet> probe_cpu_mask(const ProbeOptions& o, std::optional<Error>& error) {
    if (o.cpus) {
        auto set = CpuSet::parse_list(*o.cpus);
        if (!set) {
            Error e = set.error();
            e.field = "--cpus";
            error = e;
            return {};
        }
        return Fact<CpuSet>::known(std::move(set).value(), "--cpus " + *o.cpus);
    }
    if (o.pid_status) {
        auto set = affinity_of(*o.pid_status);
        if (!set) return Fact<CpuSet>::unknown(set.error().to_string());
        return Fact<CpuSet>::known(std::move(set).value(), o.pid_status->path + " Cpus_allowed_list");
    }
    auto set = current_affinity();
    if (!set) return Fact<CpuSet>::unknown(set.error().to_string());
    return Fact<CpuSet>::known(std::move(set).value(), "sched_getaffinity of launchguard");
}

// The network interfaces sysfs listed under one root, read while laying
// sysfs over the topology: the step's snapshot takes them from here instead
// of reading the same directory again.
struct InterfacesRead {
    std::string root;
    std::vector<NetInterface> interfaces;
};

// `node`: the node facts, read under o.sysfs_root or "/", the root the
// topology is laid over when it is: it takes their PCIe link states instead
// of reading them again. Or null. `interfaces_read`: where to keep the
// interfaces read on the way, or null.
Fact<NodeTopology> probe_topology(const ProbeOptions& o, std::optional<Error>& error, NodeFacts* node = nullptr,
                                  std::optional<InterfacesRead>* interfaces_read = nullptr) {
    Fact<NodeTopology> topo;
    // Live sysfs describes this machine; mixing it into an XML recorded
    // elsewhere would blend two nodes, so it is used only when asked for or
    // when the topology is live too.
    std::optional<std::string> sysfs = o.sysfs_root;
    std::optional<NodeTopology> cached;
    if (o.topology_cache && !o.hwloc_xml) {
        if (auto loaded = load_topology_cache(*o.topology_cache)) cached = std::move(loaded).value();
    }
    if (cached) {
        topo = Fact<NodeTopology>::known(std::move(*cached), "topology cache " + *o.topology_cache);
        if (!sysfs) sysfs = "/";
    } else if (o.hwloc_xml) {
        auto loaded = load_topology_from_xml(*o.hwloc_xml);
        if (!loaded) {
            Error e = loaded.error();
            e.field = "--hwloc-xml";
            error = e;
            return {};
        }
        topo = Fact<NodeTopology>::known(std::move(loaded).value(), "hwloc XML " + *o.hwloc_xml);
    } else if (o.live_topology) {
        auto live = discover_topology();
        if (!live)
            return Fact<NodeTopology>::unknown("no hwloc XML given and live discovery failed: " +
                                               live.error().to_string());
        topo = Fact<NodeTopology>::known(std::move(live).value(), "hwloc live discovery");
        if (!sysfs) sysfs = "/";
    } else {
        return Fact<NodeTopology>::unknown("no hwloc XML given and live discovery is disabled");
    }
    if (sysfs) {
        // Timed on its own, and inside "topology" too.
        PhaseTimer timer(o.timings, "topology.sysfs");
        const bool links_read = node != nullptr && node->pcie_links.is_known();
        // A task reads the links of the GPUs and NICs only, once the HCAs
        // that sysfs knows are added; its node facts keep them.
        const bool gpu_nic_links = o.task_facts_only && node != nullptr && !links_read;
        auto interfaces =
            augment_topology_from_sysfs(topo.value(), *sysfs, links_read ? &node->pcie_links.value() : nullptr,
                                        gpu_nic_links ? &node->pcie_links : nullptr);
        if (interfaces_read != nullptr) *interfaces_read = InterfacesRead{*sysfs, std::move(interfaces)};
    }
    return Fact<NodeTopology>::known(topo.value(), topo->source);
}

// `already_read`: the interfaces listed under one root moments ago, taken
// for that root instead of reading it again.
Fact<std::vector<NetInterface>> probe_interfaces(const ProbeOptions& o, const Fact<NodeTopology>& topo,
                                                 const std::optional<InterfacesRead>& already_read = std::nullopt) {
    // The task's own /sys (enroot mounts one) shows its network namespace;
    // the node's sysfs or topology show the host's, which is the same for
    // host-network containers such as pyxis's.
    for (const std::string& root : {o.root, o.sysfs_root.value_or(std::string())}) {
        if (root.empty()) continue;
        std::string dir = under_root(root, "sys/class/net");
        if (already_read && already_read->root == root && !already_read->interfaces.empty())
            return Fact<std::vector<NetInterface>>::known(already_read->interfaces, dir);
        RootedFileView view(root);
        if (view.stat("/sys/class/net").kind != FileKind::directory) continue;
        auto interfaces = read_net_interfaces(root);
        if (!interfaces.empty()) return Fact<std::vector<NetInterface>>::known(std::move(interfaces), dir);
    }
    if (topo.is_known() && !topo->interfaces.empty())
        return Fact<std::vector<NetInterface>>::known(topo->interfaces, topo->source);
    return Fact<std::vector<NetInterface>>::unknown("no sys/class/net under " + o.root +
                                                    " and no interfaces in the node topology");
}

// The devices whose ACS and ATS settings node rules judge: every bridge
// above a GPU or a NIC, and the NICs themselves.
std::vector<std::string> pci_capability_devices(const NodeTopology& topo) {
    std::vector<std::string> busids;
    for (const auto& gpu : topo.gpus) busids.insert(busids.end(), gpu.pci_bridges.begin(), gpu.pci_bridges.end());
    for (const auto& nic : topo.nics) {
        busids.insert(busids.end(), nic.pci_bridges.begin(), nic.pci_bridges.end());
        if (!nic.busid.empty()) busids.push_back(nic.busid);
    }
    return busids;
}

void probe_pci_capabilities_into(const ProbeOptions& o, NodeFacts& node, const Fact<NodeTopology>& topo) {
    if (!o.pci_capabilities) return;
    if (!topo) {
        node.pci_capabilities = Fact<std::map<std::string, PciCapabilities>>::unknown(
            "the node topology, which names the GPUs' and NICs' bridges, is unknown: " + topo.reason());
        return;
    }
    if (o.hwloc_xml && !o.sysfs_root) {
        // The XML may describe another node: its bus ids say nothing about this one's config space.
        node.pci_capabilities = Fact<std::map<std::string, PciCapabilities>>::unknown(
            "the topology comes from " + *o.hwloc_xml + " and no sysfs tree of the same node was given");
        return;
    }
    node.pci_capabilities = probe_pci_capabilities(o.sysfs_root.value_or("/"), pci_capability_devices(*topo));
}

// "mnt:DEV:INO net:DEV:INO" of this process; empty when procfs cannot say.
// The mount and network namespaces of a process ("/proc/self", "/proc/PID").
std::optional<std::string> namespaces_of(const std::string& process_dir) {
    std::string key;
    for (const char* kind : {"mnt", "net"}) {
        struct stat st {};
        if (::stat((process_dir + "/ns/" + kind).c_str(), &st) != 0) return std::nullopt;
        key += std::string(kind) + ":" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + " ";
    }
    return key;
}

std::optional<std::string> current_namespaces() { return namespaces_of("/proc/self"); }

}  // namespace

Runtime detect_runtime(const Environment& env, const FileView& files) {
    auto has = [&](const char* name) { return env.find(name) != env.end(); };
    auto value = [&](const char* name) {
        auto it = env.find(name);
        return it == env.end() ? std::string() : it->second;
    };
    if (has("KUBERNETES_SERVICE_HOST")) return Runtime::kubernetes;
    bool enroot = has("ENROOT_ROOTFS") || value("container") == "enroot";
    if (enroot) return has("SLURM_JOB_ID") || has("PYXIS_VERSION") ? Runtime::pyxis : Runtime::enroot;
    // Other container engines leave a marker file; launchguard has no
    // specific knowledge of them, so their runtime stays unknown. The
    // context's own view of the root: a view of its own would open the root
    // a second time per check.
    if (files.stat("/run/.containerenv").kind == FileKind::regular ||
        files.stat("/.dockerenv").kind == FileKind::regular)
        return Runtime::unknown;
    return Runtime::bare;
}

JobShape job_shape_from(const Environment& env, std::optional<int> job_nodes, std::optional<int> job_gpus) {
    JobShape shape;
    if (job_nodes)
        shape.nodes = Fact<int>::known(*job_nodes, "--job-nodes");
    else if (auto n = env_int(env, "SLURM_JOB_NUM_NODES"))
        shape.nodes = Fact<int>::known(*n, "SLURM_JOB_NUM_NODES");
    else if (auto n2 = env_int(env, "SLURM_NNODES"))
        shape.nodes = Fact<int>::known(*n2, "SLURM_NNODES");
    else
        shape.nodes = Fact<int>::unknown("no --job-nodes and neither SLURM_JOB_NUM_NODES nor SLURM_NNODES is set");

    if (auto t = env_int(env, "SLURM_NTASKS"))
        shape.tasks = Fact<int>::known(*t, "SLURM_NTASKS");
    else if (auto t2 = env_int(env, "SLURM_NPROCS"))
        shape.tasks = Fact<int>::known(*t2, "SLURM_NPROCS");
    else
        shape.tasks = Fact<int>::unknown("neither SLURM_NTASKS nor SLURM_NPROCS is set");

    // Total GPUs, most direct evidence first:
    //   --job-gpus; SLURM_GPUS (srun/sbatch --gpus, a job total);
    //   SLURM_GPUS_PER_NODE x nodes; SLURM_JOB_GPUS (this node's ids) x nodes,
    //   which assumes every node has as many GPUs as this one.
    auto per_node_times_nodes = [&](int per_node, const std::string& what) {
        if (!shape.nodes) return Fact<int>::unknown(what + " is per node and the node count is unknown");
        // In 64 bits, saturated: 65536 x 65536 wrapped to 0 in an int and
        // silenced every rule that scales with the job.
        const long long product = static_cast<long long>(per_node) * shape.nodes.value();
        const int total = static_cast<int>(std::min<long long>(product, std::numeric_limits<int>::max()));
        return Fact<int>::known(total, what + " x " + shape.nodes.source() + " (assumes identical nodes)");
    };
    auto find = [&](const char* name) -> std::optional<std::string> {
        auto it = env.find(name);
        return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    if (job_gpus)
        shape.total_gpus = Fact<int>::known(*job_gpus, "--job-gpus");
    else if (auto g = find("SLURM_GPUS"); g && gres_count(*g))
        shape.total_gpus = Fact<int>::known(*gres_count(*g), "SLURM_GPUS=" + *g);
    else if (auto p = find("SLURM_GPUS_PER_NODE"); p && gres_count(*p))
        shape.total_gpus = per_node_times_nodes(*gres_count(*p), "SLURM_GPUS_PER_NODE=" + *p);
    else if (auto j = find("SLURM_JOB_GPUS"))
        shape.total_gpus = per_node_times_nodes(list_count(*j), "SLURM_JOB_GPUS=" + *j);
    else
        shape.total_gpus =
            Fact<int>::unknown("no --job-gpus and none of SLURM_GPUS, SLURM_GPUS_PER_NODE, SLURM_JOB_GPUS is set");
    return shape;
}

// The bus ids whose links a task reads: the topology's GPUs and NICs.
std::vector<std::string> gpu_nic_busids(const Fact<NodeTopology>& topology) {
    std::vector<std::string> busids;
    if (!topology.is_known()) return busids;
    for (const auto& gpu : topology->gpus) busids.push_back(gpu.busid);
    for (const auto& nic : topology->nics) busids.push_back(nic.busid);
    return busids;
}

// The node's part of a context: its facts under o.sysfs_root (the power
// settings and the GPUs' and NICs' links from o.node_facts_cache when it
// serves them), the topology laid over them, and the PCIe capabilities when
// asked for. `from_cache`: whether the cache served them; `interfaces_read`
// as probe_topology's.
std::optional<Error> probe_node_into(const ProbeOptions& o, NodeFacts& node, Fact<NodeTopology>& topology,
                                     bool* from_cache = nullptr,
                                     std::optional<InterfacesRead>* interfaces_read = nullptr) {
    std::optional<Error> error;
    const NodeFactsCacheKey key = node_facts_cache_key(o);
    std::optional<CachedNodeFacts> cached;
    if (o.node_facts_cache && o.node_facts_max_age > 0) {
        PhaseTimer timer(o.timings, "node.cache");
        cached = load_fresh_node_facts_cache(*o.node_facts_cache, key, o.node_facts_max_age);
    }
    if (from_cache != nullptr) *from_cache = cached.has_value();
    const bool cached_links = cached && cached->pcie_links && o.task_facts_only;
    node = probe_node_facts(key.sysfs_root, o.timings, key.set,
                            cached ? std::optional<Fact<CpuPower>>(cached->power) : std::nullopt);
    if (cached_links) node.pcie_links = *cached->pcie_links;
    {
        PhaseTimer timer(o.timings, "topology");
        topology = probe_topology(o, error, &node, interfaces_read);
    }
    if (error) return error;
    if (cached_links && node.pcie_links.is_known() && !cached->links_cover(gpu_nic_busids(topology))) {
        // The topology has devices the cached links were not read for (its
        // cache was replaced since): read them all again.
        node.pcie_links = Fact<std::map<std::string, PcieLinkRecord>>::unknown("not read");
        PhaseTimer timer(o.timings, "topology");
        topology = probe_topology(o, error, &node, interfaces_read);
        if (error) return error;
        if (from_cache != nullptr) *from_cache = false;
    }
    if (o.task_facts_only && !node.pcie_links.is_known() && topology.is_known()) {
        // The topology was not laid over sysfs (an hwloc XML without a sysfs
        // tree): the links come from the same root the node facts do.
        node.pcie_links = probe_pcie_links(o.sysfs_root.value_or("/"), gpu_nic_busids(topology));
    }
    PhaseTimer timer(o.timings, "pci_capabilities");
    probe_pci_capabilities_into(o, node, topology);
    return std::nullopt;
}

NodeFactsCacheKey node_facts_cache_key(const ProbeOptions& o) {
    return NodeFactsCacheKey{o.sysfs_root.value_or("/"), o.task_facts_only ? NodeFactSet::task : NodeFactSet::all};
}

CachedNodeFacts cacheable_node_facts(const NodeSnapshot& snapshot) {
    CachedNodeFacts facts;
    facts.power = snapshot.node.power;
    if (snapshot.topology.is_known()) {
        facts.pcie_links = snapshot.node.pcie_links;
        facts.link_busids = gpu_nic_busids(snapshot.topology);
    }
    return facts;
}

Result<NodeSnapshot> probe_node_snapshot(const ProbeOptions& o) {
    NodeSnapshot snapshot;
    std::optional<InterfacesRead> interfaces_read;
    if (auto error =
            probe_node_into(o, snapshot.node, snapshot.topology, &snapshot.node_facts_from_cache, &interfaces_read))
        return *error;
    if (o.root == "/") {
        PhaseTimer timer(o.timings, "interfaces");
        snapshot.read_in_namespaces = current_namespaces();
        snapshot.interfaces = probe_interfaces(o, snapshot.topology, interfaces_read);
    }
    return snapshot;
}

Result<LaunchContext> build_context(ProbeOptions o) {
    LaunchContext ctx;
    std::optional<Error> error;

    PhaseTimer env_timer(o.timings, "env+cpu_mask");
    ctx.env = probe_env(o, error);
    if (error) return *error;
    ctx.files = o.files ? std::move(o.files) : std::make_shared<RootedFileView>(o.root);
    if (o.pid && !o.pid_status) o.pid_status = read_process_status(*o.pid, o.proc_root);
    ctx.cpu_mask = probe_cpu_mask(o, error);
    if (error) return *error;
    env_timer.stop();
    std::optional<NodeSnapshot>& snapshot = o.node_snapshot;
    std::optional<InterfacesRead> interfaces_read;
    if (snapshot) {
        ctx.topology = std::move(snapshot->topology);
        ctx.node = std::move(snapshot->node);
    } else if (auto node_error = probe_node_into(o, ctx.node, ctx.topology, nullptr, &interfaces_read)) {
        return *node_error;
    }

    static const Environment kNoEnv;
    const Environment& env = ctx.env ? ctx.env.value() : kNoEnv;
    ctx.gpus = assigned_gpus(env, o.gpus, ctx.topology);
    // A --gpus the node cannot resolve is a usage error, as a bad --cpus is;
    // from the environment the same defect is the task's, and only unknown.
    if (o.gpus && ctx.topology.is_known()) {
        if (auto resolved = resolve_gpu_list(*o.gpus, *ctx.topology, "--gpus"); !resolved) return resolved.error();
    }
    if (o.per_task_facts_only) return ctx;
    PhaseTimer interfaces_timer(o.timings, "interfaces");
    // The snapshot's interfaces are the task's when it sees the same mount
    // and network namespaces they were read in: the caller's, or pid's.
    const bool root_is_ours = o.root == "/";
    if (snapshot && snapshot->read_in_namespaces && (root_is_ours || o.root_of_pid) &&
        (root_is_ours ? current_namespaces() : namespaces_of(under_root(o.proc_root, std::to_string(*o.pid)))) ==
            snapshot->read_in_namespaces) {
        ctx.interfaces = std::move(snapshot->interfaces);
    } else {
        ctx.interfaces = probe_interfaces(o, ctx.topology, interfaces_read);
    }
    interfaces_timer.stop();
    ctx.job = job_shape_from(env, o.job_nodes, o.job_gpus);
    PhaseTimer container_timer(o.timings, "container+runtime");
    ctx.container = probe_container(o.root, o.pid, o.proc_root, o.pid_status ? &*o.pid_status : nullptr);
    ctx.runtime = o.runtime != Runtime::unknown ? o.runtime : detect_runtime(env, *ctx.files);
    container_timer.stop();

    if (o.host_root || o.host_env_file) {
        HostView host;
        if (o.host_env_file) {
            auto henv = read_env_file(*o.host_env_file);
            if (!henv) {
                Error e = henv.error();
                e.field = "--host-env-file";
                return e;
            }
            host.env = Fact<Environment>::known(std::move(henv).value(), *o.host_env_file);
        } else if (o.use_current_process_env) {
            // launchguard itself runs on the host side (an enroot hook, a prolog).
            host.env =
                Fact<Environment>::known(current_process_environment(), "environment of launchguard (host side)");
        } else {
            host.env = Fact<Environment>::unknown("no host environment given (--host-env-file)");
        }
        std::string hroot = o.host_root.value_or("/");
        host.files = std::make_shared<RootedFileView>(hroot, "host filesystem rooted at " + hroot);
        ctx.host = std::move(host);
    }
    return ctx;
}

}  // namespace launchguard
