#include "probe/hwloc_probe.h"

#include <hwloc.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>

#include "util/child_process.h"
#include "util/input_file.h"

namespace launchguard {
namespace {

constexpr unsigned kNvidiaVendor = 0x10de;
constexpr unsigned kClassVga = 0x0300;
constexpr unsigned kClass3d = 0x0302;
// A node's XML imports in well under a second; this bound only stops a hang.
constexpr unsigned kXmlImportSeconds = 30;

// Owns an hwloc topology so every early return releases it.
class TopologyHandle {
public:
    TopologyHandle() { ok_ = hwloc_topology_init(&topo_) == 0; }
    ~TopologyHandle() {
        if (ok_) hwloc_topology_destroy(topo_);
    }
    TopologyHandle(const TopologyHandle&) = delete;
    TopologyHandle& operator=(const TopologyHandle&) = delete;
    [[nodiscard]] bool ok() const { return ok_; }
    [[nodiscard]] hwloc_topology_t get() const { return topo_; }

private:
    hwloc_topology_t topo_ = nullptr;
    bool ok_ = false;
};

CpuSet to_cpuset(hwloc_const_bitmap_t bitmap) {
    CpuSet set;
    // An infinite bitmap has no meaningful list of CPUs; treat it as unknown (empty).
    if (bitmap == nullptr || hwloc_bitmap_weight(bitmap) < 0) return set;
    for (int id = hwloc_bitmap_first(bitmap); id >= 0; id = hwloc_bitmap_next(bitmap, id))
        set.add(static_cast<unsigned>(id));
    return set;
}

std::string format_busid(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& pci) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%01x", static_cast<unsigned>(pci.domain),
                  static_cast<unsigned>(pci.bus), static_cast<unsigned>(pci.dev), static_cast<unsigned>(pci.func));
    return buf;
}

std::string busid_of(const hwloc_obj_t pci) { return format_busid(pci->attr->pcidev); }

std::string info(hwloc_obj_t obj, const char* name) {
    const char* v = hwloc_obj_get_info_by_name(obj, name);
    return v == nullptr ? std::string() : std::string(v);
}

// NUMA node and CPUs an I/O device is attached to: the first CPU-side
// ancestor. hwloc 2 hangs NUMA nodes beside I/O, not above it, so the node
// comes from that ancestor's nodeset (only when it names exactly one).
void locality(hwloc_topology_t topo, hwloc_obj_t io, int& numa_node, CpuSet& local_cpus) {
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, io);
    if (anc == nullptr) return;
    local_cpus = to_cpuset(anc->cpuset);
    if (anc->nodeset != nullptr && hwloc_bitmap_weight(anc->nodeset) == 1) numa_node = hwloc_bitmap_first(anc->nodeset);
}

// The PCI-to-PCI bridges (switch ports) between a device and its host
// bridge, nearest the CPU first: the part of the tree NCCL's path types count.
std::vector<std::string> bridges_above(hwloc_obj_t pci) {
    std::vector<std::string> bridges;
    for (hwloc_obj_t up = pci->parent; up != nullptr && up->type == HWLOC_OBJ_BRIDGE; up = up->parent) {
        if (up->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) {
            bridges.insert(bridges.begin(), format_busid(up->attr->bridge.upstream.pci));
        }
    }
    return bridges;
}

PciLinkState link_of(hwloc_obj_t pci) {
    PciLinkState link;
    // hwloc writes 0 when it does not know the link.
    if (pci->attr->pcidev.linkspeed > 0) link.hwloc_gbps = static_cast<double>(pci->attr->pcidev.linkspeed);
    return link;
}

// "nvml3" / "cuda3" -> 3. OpenCL and DRM names do not give the CUDA ordinal.
std::optional<int> cuda_ordinal(const char* name) {
    if (name == nullptr) return std::nullopt;
    std::string_view n(name);
    for (std::string_view prefix : {std::string_view("nvml"), std::string_view("cuda")}) {
        if (n.substr(0, prefix.size()) != prefix || n.size() == prefix.size()) continue;
        int v = 0;
        for (char c : n.substr(prefix.size())) {
            if (c < '0' || c > '9') return std::nullopt;
            v = v * 10 + (c - '0');
        }
        return v;
    }
    return std::nullopt;
}

// hwloc stores the numeric IB port state of ibv_port_attr.
std::string ib_state_name(std::string_view numeric) {
    if (numeric == "1") return "DOWN";
    if (numeric == "2") return "INIT";
    if (numeric == "3") return "ARMED";
    if (numeric == "4") return "ACTIVE";
    if (numeric == "5") return "ACTIVE_DEFER";
    return "UNKNOWN(" + std::string(numeric) + ")";
}

std::vector<IbPort> ib_ports(hwloc_obj_t osdev) {
    std::vector<IbPort> ports;
    for (unsigned i = 0; i < osdev->infos_count; ++i) {
        std::string_view name = osdev->infos[i].name;
        // "Port<N>State"
        if (name.size() <= 9 || name.substr(0, 4) != "Port" || name.substr(name.size() - 5) != "State") continue;
        std::string_view digits = name.substr(4, name.size() - 9);
        if (digits.empty() || digits.size() > 3 ||
            !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
            continue;
        IbPort port;
        port.number = std::stoi(std::string(digits));
        port.state = ib_state_name(osdev->infos[i].value);
        ports.push_back(std::move(port));
    }
    std::sort(ports.begin(), ports.end(), [](const IbPort& a, const IbPort& b) { return a.number < b.number; });
    return ports;
}

struct GpuCandidate {
    Gpu gpu;
    std::optional<int> ordinal;
};

NodeTopology convert(hwloc_topology_t topo, std::string source) {
    NodeTopology out;
    out.source = std::move(source);
    out.all_cpus = to_cpuset(hwloc_topology_get_complete_cpuset(topo));

    for (hwloc_obj_t numa = nullptr; (numa = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, numa)) != nullptr;) {
        out.numa_nodes.push_back(NumaNode{static_cast<int>(numa->os_index), to_cpuset(numa->cpuset)});
    }

    std::vector<GpuCandidate> gpus;
    for (hwloc_obj_t pci = nullptr; (pci = hwloc_get_next_pcidev(topo, pci)) != nullptr;) {
        const auto& attr = pci->attr->pcidev;
        bool nvidia_display =
            attr.vendor_id == kNvidiaVendor && (attr.class_id == kClass3d || attr.class_id == kClassVga);
        bool compute_osdev = false;
        GpuCandidate cand;
        std::vector<hwloc_obj_t> fabrics;
        std::vector<std::string> netdevs;
        for (hwloc_obj_t child = pci->io_first_child; child != nullptr; child = child->next_sibling) {
            if (child->type != HWLOC_OBJ_OS_DEVICE) continue;
            auto type = child->attr->osdev.type;
            auto ordinal = cuda_ordinal(child->name);
            // A DRM "card0" alone is not a compute GPU (every BMC VGA has one);
            // a CUDA/NVML/OpenCL device is.
            if (type == HWLOC_OBJ_OSDEV_COPROC || (type == HWLOC_OBJ_OSDEV_GPU && ordinal)) {
                compute_osdev = true;
                if (ordinal && !cand.ordinal) cand.ordinal = ordinal;
                if (cand.gpu.name.empty() || ordinal) {
                    std::string model = info(child, "GPUModel");
                    if (!model.empty()) cand.gpu.name = model;
                }
                if (cand.gpu.uuid.empty()) cand.gpu.uuid = info(child, "NVIDIAUUID");
            } else if (type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
                fabrics.push_back(child);
            } else if (type == HWLOC_OBJ_OSDEV_NETWORK && child->name != nullptr) {
                netdevs.emplace_back(child->name);
            }
        }
        // NCCL drives NVIDIA GPUs only: an AMD or Intel device with an OpenCL
        // (COPROC) OS device is no GPU of the job's.
        if (attr.vendor_id == kNvidiaVendor && (nvidia_display || compute_osdev)) {
            cand.gpu.busid = busid_of(pci);
            if (cand.gpu.name.empty()) cand.gpu.name = info(pci, "PCIDevice");
            locality(topo, pci, cand.gpu.numa_node, cand.gpu.local_cpus);
            cand.gpu.pci_bridges = bridges_above(pci);
            cand.gpu.link = link_of(pci);
            gpus.push_back(std::move(cand));
        }
        for (hwloc_obj_t fabric : fabrics) {
            Nic nic;
            nic.hca = fabric->name != nullptr ? fabric->name : "";
            nic.netdevs = netdevs;
            nic.busid = busid_of(pci);
            locality(topo, pci, nic.numa_node, nic.local_cpus);
            nic.pci_bridges = bridges_above(pci);
            nic.ports = ib_ports(fabric);
            nic.link = link_of(pci);
            out.nics.push_back(std::move(nic));
        }
    }

    // GPUs named nvmlN/cudaN keep N. The others are numbered after them in
    // PCI bus order, which is the order NVML and CUDA_DEVICE_ORDER=PCI_BUS_ID use.
    int next = 0;
    for (const auto& c : gpus) {
        if (c.ordinal) next = std::max(next, *c.ordinal + 1);
    }
    std::stable_sort(gpus.begin(), gpus.end(),
                     [](const GpuCandidate& a, const GpuCandidate& b) { return a.gpu.busid < b.gpu.busid; });
    for (auto& c : gpus) {
        c.gpu.index = c.ordinal ? *c.ordinal : next++;
        out.gpus.push_back(std::move(c.gpu));
    }
    std::sort(out.gpus.begin(), out.gpus.end(), [](const Gpu& a, const Gpu& b) { return a.index < b.index; });

    for (hwloc_obj_t os = nullptr; (os = hwloc_get_next_osdev(topo, os)) != nullptr;) {
        // hwloc cannot tell whether the link is up; sysfs augmentation can.
        if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && os->name != nullptr)
            out.interfaces.push_back(NetInterface{os->name, true});
    }
    return out;
}

constexpr const char* kXmlLoadFailed =
    "hwloc could not load this XML (malformed, or not an hwloc topology export; "
    "set HWLOC_XML_VERBOSE=1 for hwloc's own diagnostics)";

// hwloc drops I/O objects by default; the GPUs and NICs are the point.
// The size counts the terminating NUL, as hwloc_topology_export_xmlbuffer() reports it.
bool set_xml_input(hwloc_topology_t topo, const std::string& xml) {
    if (hwloc_topology_set_xmlbuffer(topo, xml.data(), static_cast<int>(xml.size() + 1)) != 0) return false;
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
    return true;
}

// libhwloc 2.9 dereferences NULL on some inputs it should reject (a PU
// without complete_cpuset: lstopo crashes too), and an import may loop on
// others. So the first import runs in a child process: if hwloc dies or
// hangs there, the file is refused with exit 2 instead of taking the caller
// down. Only where that child is safe: the CLI and the enroot hook, which
// take the file from whoever runs them. In the Slurm plugin's daemons the
// XML is the site's (plugstack hwloc-xml=) and is imported directly
// (forked_child_may_run_library_code() says why).
Status import_survives(const std::string& xml, const std::string& path) {
    if (!forked_child_may_run_library_code()) return Done{};
    std::fflush(nullptr);  // the child exits with _exit, but keep buffers from being duplicated
    pid_t child = ::fork();
    if (child < 0)
        return make_file_error(path, 0, std::string("cannot fork to import hwloc XML: ") + std::strerror(errno));
    if (child == 0) {
        restore_default_crash_signals();
        ::alarm(kXmlImportSeconds);  // SIGALRM's default action ends a hung import
        hwloc_topology_t topo = nullptr;
        int rc = 1;
        if (hwloc_topology_init(&topo) == 0) {
            if (set_xml_input(topo, xml) && hwloc_topology_load(topo) == 0) rc = 0;
            hwloc_topology_destroy(topo);
        }
        ::_exit(rc);
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0) {
        if (errno != EINTR)
            return make_file_error(path, 0, std::string("cannot wait for the hwloc import: ") + std::strerror(errno));
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        if (sig == SIGALRM) {
            return make_file_error(
                path, 0,
                "hwloc did not finish importing this XML within " + std::to_string(kXmlImportSeconds) + " s: refused");
        }
        return make_file_error(path, 0,
                               std::string("libhwloc crashed importing this XML (") + strsignal(sig) +
                                   "): refused; a PU without complete_cpuset is one known cause");
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return make_file_error(path, 0, kXmlLoadFailed);
    return Done{};
}

// Lowers CAP_SYS_ADMIN in the calling thread's effective set for its
// lifetime, and raises it again after (it stays in the permitted set, so
// raising it back is always allowed). hwloc reads each PCI function's
// config space from sysfs, where the kernel (pci_read_config) gives the
// first 64 bytes to an opener without CAP_SYS_ADMIN and 256 to one with it.
// Those 64 bytes hold all convert() takes from config space: the header
// type and bus numbers of bridges (the tree); hwloc takes the link speed
// from sysfs's current_link_* instead, and the rules read the links from
// sysfs anyway (hardware_rules.cpp). In a VM each config-space read traps to
// the hypervisor: 2 ms a function for 256 bytes against 0.5 ms for 64 on
// the development VM, where a launch of the gate as root went from 16 to 8 ms of CPU
// (docs/performance.md). Capabilities are per thread: other threads of the
// process (a Slurm daemon's) keep theirs throughout.
class WithoutSysAdmin {
public:
    WithoutSysAdmin() {
        __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
        if (::syscall(SYS_capget, &header, saved_) != 0) return;
        constexpr std::uint32_t kSysAdmin = 1U << CAP_SYS_ADMIN;  // CAP_SYS_ADMIN < 32: the first word
        if ((saved_[0].effective & kSysAdmin) == 0) return;
        __user_cap_data_struct lowered[2] = {saved_[0], saved_[1]};
        lowered[0].effective &= ~kSysAdmin;
        dropped_ = ::syscall(SYS_capset, &header, lowered) == 0;
    }
    ~WithoutSysAdmin() {
        if (!dropped_) return;
        __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
        ::syscall(SYS_capset, &header, saved_);
    }
    WithoutSysAdmin(const WithoutSysAdmin&) = delete;
    WithoutSysAdmin& operator=(const WithoutSysAdmin&) = delete;

private:
    __user_cap_data_struct saved_[2]{};
    bool dropped_ = false;
};

// What a live discovery is for: the converted topology the rules read, or
// an XML export (`launchguard gather`), which records the node as hwloc
// sees it, everything included.
enum class LiveUse { rules, full_export };

// This machine, with PCI and OS devices, and the CPUs this process may not use.
Status load_live(TopologyHandle& topo, LiveUse use) {
    if (!topo.ok()) return make_error("hwloc_topology_init failed");
    hwloc_topology_set_io_types_filter(topo.get(), HWLOC_TYPE_FILTER_KEEP_ALL);
    hwloc_topology_set_flags(topo.get(), HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    std::optional<WithoutSysAdmin> lowered;
    if (use == LiveUse::rules) {
        // convert() reads no cache: without them hwloc skips each CPU's
        // cache directories in sysfs (a few files per CPU and level). A
        // device's locality does not change: hwloc hangs it below an object
        // whose CPU set is exactly the device's local CPUs (a group when no
        // cache, core or package has that set), and the NUMA nodes of that
        // object follow from CPU sets alone.
        hwloc_topology_set_cache_types_filter(topo.get(), HWLOC_TYPE_FILTER_KEEP_NONE);
        hwloc_topology_set_icache_types_filter(topo.get(), HWLOC_TYPE_FILTER_KEEP_NONE);
        lowered.emplace();
    }
    if (hwloc_topology_load(topo.get()) != 0) {
        return make_error(std::string("hwloc live discovery failed: ") + std::strerror(errno));
    }
    return Done{};
}

}  // namespace

Result<NodeTopology> load_topology_from_xml(const std::string& path) {
    // Read once through the bounded reader (no FIFOs, no /dev/zero), then let
    // hwloc parse the bytes we checked rather than reopen the path.
    auto xml = read_text_file(path);
    if (!xml) return make_file_error(path, 0, "cannot read hwloc XML: " + xml.error().message);
    if (auto survived = import_survives(*xml, path); !survived) return survived.error();
    TopologyHandle topo;
    if (!topo.ok()) return make_file_error(path, 0, "hwloc_topology_init failed");
    if (!set_xml_input(topo.get(), *xml)) {
        return make_file_error(path, 0,
                               std::string("hwloc cannot use this file as XML input: ") + std::strerror(errno));
    }
    if (hwloc_topology_load(topo.get()) != 0) return make_file_error(path, 0, kXmlLoadFailed);
    return convert(topo.get(), "hwloc XML " + path);
}

Result<NodeTopology> discover_topology() {
    TopologyHandle topo;
    if (auto loaded = load_live(topo, LiveUse::rules); !loaded) return loaded.error();
    return convert(topo.get(), "hwloc live discovery");
}

Result<std::string> export_live_topology_xml() {
    TopologyHandle topo;
    if (auto loaded = load_live(topo, LiveUse::full_export); !loaded) return loaded.error();
    char* buffer = nullptr;
    int length = 0;
    if (hwloc_topology_export_xmlbuffer(topo.get(), &buffer, &length, 0) != 0 || buffer == nullptr) {
        return make_error(std::string("hwloc could not export the topology as XML: ") + std::strerror(errno));
    }
    // The length counts the terminating NUL.
    std::string xml(buffer, length > 0 ? static_cast<std::size_t>(length) - 1 : 0);
    hwloc_free_xmlbuffer(topo.get(), buffer);
    return xml;
}

}  // namespace launchguard
