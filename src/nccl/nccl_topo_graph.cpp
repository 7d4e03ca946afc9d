// Builds NCCL's topology graph from the parsed XML and runs its path search.
// Our own code, following the decisions of NCCL 2.30's src/graph/topo.cc and
// paths.cc; each function names the NCCL function whose outcome it mirrors.
#include "nccl/nccl_topo_graph.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

namespace launchguard::nccl::graph {
namespace {

// Bandwidths in GB/s from NCCL's src/graph/topo.h.
constexpr double kLocBw = 5000.0;
constexpr double kArmBw = 6.0;
constexpr double kP9Bw = 32.0;
constexpr double kAmdBw = 16.0;
constexpr double kZpiBw = 6.0;
constexpr double kYongfengZpiBw = 9.0;

// kvConvertToInt (xml.h): a dictionary entry matches when the text starts with it.
bool starts_with(const std::string& text, std::string_view prefix) {
    return text.compare(0, prefix.size(), prefix) == 0;
}

// kvDictPciClass (topo.cc): class prefixes, first match wins, PCI otherwise.
enum class PciClass { bridge, nvswitch, cpu, gpu, nic };
PciClass pci_class(const std::string& cls) {
    auto starts = [&cls](std::string_view p) { return cls.compare(0, p.size(), p) == 0; };
    if (starts("0x060400") || starts("0x080100")) return PciClass::bridge;
    if (starts("0x068000")) return PciClass::nvswitch;
    if (starts("0x068001")) return PciClass::cpu;
    if (starts("0x03")) return PciClass::gpu;
    if (starts("0x02")) return PciClass::nic;
    return PciClass::bridge;
}

// kvDictPciGen (topo.cc): per-lane rate in 100 Mb/s, prefix match, Gen3 when unknown.
int pci_gen_rate(const std::string& speed) {
    static const std::pair<std::string_view, int> rates[] = {
        {"2.5 GT/s", 15},        {"5 GT/s", 30},          {"8 GT/s", 60},         {"16 GT/s", 120},
        {"32 GT/s", 240},        {"2.5 GT/s PCIe", 15},   {"5.0 GT/s PCIe", 30},  {"8.0 GT/s PCIe", 60},
        {"16.0 GT/s PCIe", 120}, {"32.0 GT/s PCIe", 240}, {"64.0 GT/s PCIe", 480}};
    for (const auto& [prefix, rate] : rates) {
        if (speed.compare(0, prefix.size(), prefix) == 0) return rate;
    }
    return 60;
}

// ncclTopoNVLinkBw (topo.h): per-link NVLink bandwidth by compute capability.
double nvlink_bw(int sm) {
    if (sm >= 100) return 40.1;
    if (sm >= 90) return 20.6;
    if (sm == 86) return 12.0;
    if (sm >= 80) return 20.0;
    if (sm >= 70) return 20.0;
    if (sm >= 60) return 18.0;
    return 20.0;
}

Node make_node(NodeType type, std::string busid, int line) {
    Node node;
    node.type = type;
    node.busid = std::move(busid);
    node.line = line;
    return node;
}

int to_int(const std::string* text, int fallback) {
    if (!text || text->empty()) return fallback;
    return static_cast<int>(std::strtol(text->c_str(), nullptr, 0));
}

// ncclTopoConnectNodes: links to the same node of the same type add up;
// the list stays sorted by bandwidth, highest first.
void connect(Graph& g, int from, int to, LinkType type, double bw) {
    auto& links = g.nodes[static_cast<std::size_t>(from)].links;
    auto it = std::find_if(links.begin(), links.end(), [&](const Link& l) { return l.remote == to && l.type == type; });
    Link link{type, bw, to};
    if (it != links.end()) {
        link.bw += it->bw;
        links.erase(it);
    }
    auto pos = std::find_if(links.begin(), links.end(), [&](const Link& l) { return l.bw < link.bw; });
    links.insert(pos, link);
}

class Builder {
public:
    explicit Builder(const TopologyTree& file) : file_(file) {}

    Graph run() {
        for (std::size_t i = 0; i < file_.elements.size(); ++i) {
            const auto& e = file_.elements[i];
            if (e.name == "cpu" && e.parent >= 0 && elem(e.parent).name == "system") add_cpu(static_cast<int>(i));
            if (!g_.error.empty()) return std::move(g_);
        }
        // ncclTopoAddNvLinks / ncclTopoAddC2c / ncclTopoAddPciLinks run after every node exists.
        for (std::size_t i = 0; i < file_.elements.size() && g_.error.empty(); ++i) {
            const auto& e = file_.elements[i];
            if (e.name == "nvlink") add_nvlink(e);
            if (e.name == "c2c") add_c2c(e);
            if (e.name == "pcilink") add_pcilink(e);
        }
        note_c2c_from_driver();
        note_fused_ports();
        flatten_bcm_switches();
        connect_cpus();
        sort_links();
        return std::move(g_);
    }

private:
    const TopoElement& elem(int i) const { return file_.elements[static_cast<std::size_t>(i)]; }

    std::vector<int> children(int parent, std::string_view name) const {
        std::vector<int> out;
        for (std::size_t i = static_cast<std::size_t>(parent) + 1; i < file_.elements.size(); ++i) {
            if (file_.elements[i].parent == parent && file_.elements[i].name == name)
                out.push_back(static_cast<int>(i));
        }
        return out;
    }

    int add_node(Node node) {
        g_.nodes.push_back(std::move(node));
        return static_cast<int>(g_.nodes.size()) - 1;
    }

    void fail(std::string message, int line) {
        if (!g_.error.empty()) return;
        g_.error = std::move(message);
        g_.error_line = line;
    }

    const std::string* required(const TopoElement& e, std::string_view key) {
        const std::string* v = e.attr(key);
        if (!v) fail("Attribute " + std::string(key) + " of node " + e.name + " not found", e.line);
        return v;
    }

    // ncclTopoAddCpu
    void add_cpu(int index) {
        const auto& e = elem(index);
        Node cpu = make_node(NodeType::cpu, "", e.line);
        const std::string* numa = required(e, "numaid");
        if (!numa) return;
        cpu.numaid = *numa;
        if (const auto* v = e.attr("arch")) cpu.arch = *v;
        if (const auto* v = e.attr("vendor")) cpu.vendor = *v;
        cpu.family = to_int(e.attr("familyid"), 0);
        cpu.model = to_int(e.attr("modelid"), 0);
        int id = add_node(cpu);
        for (std::size_t i = static_cast<std::size_t>(index) + 1; i < file_.elements.size(); ++i) {
            const auto& sub = file_.elements[i];
            if (sub.parent != index) continue;
            if (sub.name == "pci") add_pci(static_cast<int>(i), id);
            if (sub.name == "nic") add_cpu_nic(static_cast<int>(i), id);
            if (!g_.error.empty()) return;
        }
    }

    // The <nic> directly under a <cpu> (ncclTopoAddCpu). Its id is
    // NCCL_TOPO_LOCAL_NIC_ID(numaid, 0) put through NCCL_TOPO_ID, whose mask
    // drops the NUMA bits: every such <nic>, whatever its socket, is one NIC
    // node, linked only to the first CPU that holds one.
    void add_cpu_nic(int index, int cpu) {
        const std::string key = "cpu-level";
        int nic = find_nic(key);
        if (nic < 0) {
            nic = add_node(make_node(NodeType::nic, "", elem(index).line));
            nic_keys_.emplace_back(key, nic);
            connect(g_, cpu, nic, LinkType::pci, kLocBw);
            connect(g_, nic, cpu, LinkType::pci, kLocBw);
        }
        add_nets(index, nic);
    }

    int find_nic(const std::string& key) const {
        for (const auto& [k, v] : nic_keys_) {
            if (k == key) return v;
        }
        return -1;
    }

    // ncclTopoAddPci
    void add_pci(int index, int parent) {
        const auto& e = elem(index);
        const std::string* cls = required(e, "class");
        const std::string* busid_text = required(e, "busid");
        if (!cls || !busid_text) return;
        const std::string busid = normalize_busid(*busid_text);
        const std::string* width_text = e.attr("link_width");
        const std::string* speed_text = e.attr("link_speed");
        if (!width_text || !speed_text) {
            // NCCL fills these from sysfs when the device is on the node; assume Gen4 x16.
            g_.notes.push_back("line " + std::to_string(e.line) + ": <pci busid=\"" + busid +
                               "\"> has no link_width/link_speed: NCCL reads them from sysfs; assumed equal for all");
        }
        int width = to_int(width_text, 16);
        if (width == 0) width = 16;
        const double bw = width * (speed_text ? pci_gen_rate(*speed_text) : 120) / 80.0;

        PciClass kind = pci_class(*cls);
        auto gpus = children(index, "gpu");
        for (int gpu_index : gpus) {
            const auto& xg = elem(gpu_index);
            // ncclTopoAddPci skips a <pci> whose <gpu> has no rank, but by then
            // ncclTopoGetSystem has set the rank of every GPU a rank of the job
            // runs on (ncclTopoFillGpu); the model takes every GPU as used.
            if (!xg.attr("rank"))
                g_.notes.push_back(
                    "line " + std::to_string(xg.line) +
                    ": <gpu> has no rank: NCCL sets it for a GPU the job uses and drops the GPU otherwise; "
                    "taken as used");
            Node gpu = make_node(NodeType::gpu, busid, e.line);
            gpu.sm = to_int(xg.attr("sm"), -1);
            gpu.dev = to_int(xg.attr("dev"), -1);
            if (const auto* v = xg.attr("gdr")) gpu.gdr = to_int(v, 0) != 0;
            // ncclTopoGetXmlFromGpu asks NVML for the NVLinks of a <gpu> that
            // lists none (sm 60 and later).
            if (children(gpu_index, "nvlink").empty() && (gpu.sm < 0 || gpu.sm >= 60))
                g_.notes.push_back("line " + std::to_string(xg.line) +
                                   ": <gpu> lists no <nvlink>: NCCL asks NVML for its NVLinks at init; taken as none");
            int id = add_node(gpu);
            gpu_by_busid_.emplace_back(busid, id);
            connect(g_, id, parent, LinkType::pci, bw);
            connect(g_, parent, id, LinkType::pci, bw);
        }
        if (!gpus.empty()) return;

        auto nics = children(index, "nic");
        if (!nics.empty() || (kind == PciClass::nic && nics.empty())) {
            // With no <nic>, the network plugin adds one for a device it reports
            // (ncclTopoFillNet); we assume it reports every network-class device.
            // The NIC's id is its bus id alone: NCCL_TOPO_ID masks out the NUMA
            // bits of NCCL_TOPO_LOCAL_NIC_ID, so <pci> elements with one bus id
            // are one NIC (ncclTopoAddPci).
            const std::string& key = busid;
            int nic = find_nic(key);
            if (nic < 0) {
                nic = add_node(make_node(NodeType::nic, busid, e.line));
                nic_keys_.emplace_back(key, nic);
                connect(g_, nic, parent, LinkType::pci, bw);
                connect(g_, parent, nic, LinkType::pci, bw);
            }
            if (nics.empty()) {
                Node net = make_node(NodeType::net, busid, e.line);
                net.from_plugin = true;
                net.net_bw = 10000 / 8000.0;
                net.nic = nic;
                add_net_node(net, nic);
            } else {
                for (int x : nics) add_nets(x, nic);
            }
            return;
        }
        if (kind == PciClass::gpu) {
            // No <gpu>: NCCL's ncclTopoFillGpu adds it from the driver for the GPUs its ranks use.
            Node gpu = make_node(NodeType::gpu, busid, e.line);
            gpu.from_driver = true;
            int id = add_node(gpu);
            gpu_by_busid_.emplace_back(busid, id);
            connect(g_, id, parent, LinkType::pci, bw);
            connect(g_, parent, id, LinkType::pci, bw);
            return;
        }
        if (kind != PciClass::bridge) return;
        Node pci = make_node(NodeType::pci, busid, e.line);
        pci.device = int_device(e);
        int sw = add_node(std::move(pci));
        pci_by_busid_.emplace_back(busid, sw);
        for (std::size_t i = static_cast<std::size_t>(index) + 1; i < file_.elements.size() && g_.error.empty(); ++i) {
            if (file_.elements[i].parent == index && file_.elements[i].name == "pci") add_pci(static_cast<int>(i), sw);
        }
        connect(g_, sw, parent, LinkType::pci, bw);
        connect(g_, parent, sw, LinkType::pci, bw);
    }

    // ncclTopoAddNic / ncclTopoAddNet: each <net dev> is a NET node behind the NIC.
    void add_nets(int nic_index, int nic) {
        for (int x : children(nic_index, "net")) {
            const auto& xn = elem(x);
            if (!xn.attr("dev")) continue;
            if (to_int(xn.attr("net"), 1) == 0) continue;
            Node net = make_node(NodeType::net, g_.nodes[static_cast<std::size_t>(nic)].busid, xn.line);
            net.dev = to_int(xn.attr("dev"), 0);
            int mbps = to_int(xn.attr("speed"), 0);
            if (mbps <= 0) mbps = 10000;
            net.net_bw = mbps / 8000.0;
            // Without gdr in the file the plugin's answer fills it in
            // (ncclTopoPopulateNics, for a <net> of the name it reports): unknown.
            if (const auto* v = xn.attr("gdr")) net.gdr = to_int(v, 0) != 0;
            net.nic = nic;
            add_net_node(net, nic);
        }
    }

    void add_net_node(Node net, int nic) {
        if (net.dev < 0) net.dev = next_plugin_dev_;
        next_plugin_dev_ = std::max(next_plugin_dev_, net.dev + 1);
        double bw = net.net_bw;
        int id = add_node(std::move(net));
        connect(g_, nic, id, LinkType::net, bw);
        connect(g_, id, nic, LinkType::net, bw);
    }

    int gpu_node(const std::string& busid) const {
        for (const auto& [b, id] : gpu_by_busid_) {
            if (b == busid) return id;
        }
        return -1;
    }

    int enclosing_gpu(const TopoElement& e) const {
        if (e.parent < 0) return -1;
        const auto& xg = elem(e.parent);
        if (xg.parent < 0) return -1;
        const auto* busid = elem(xg.parent).attr("busid");
        return busid ? gpu_node(normalize_busid(*busid)) : -1;
    }

    int local_cpu(int node) const {
        // findLocalCpu: up the PCI tree through switches only.
        std::vector<int> stack{node};
        std::vector<bool> seen(g_.nodes.size(), false);
        while (!stack.empty()) {
            int n = stack.back();
            stack.pop_back();
            if (seen[static_cast<std::size_t>(n)]) continue;
            seen[static_cast<std::size_t>(n)] = true;
            const auto& nd = g_.nodes[static_cast<std::size_t>(n)];
            if (nd.type == NodeType::cpu) return n;
            for (const auto& l : nd.links) {
                const auto& r = g_.nodes[static_cast<std::size_t>(l.remote)];
                if (l.type == LinkType::pci && (r.type == NodeType::pci || r.type == NodeType::cpu))
                    stack.push_back(l.remote);
            }
        }
        return -1;
    }

    // ncclTopoAddNvLinks
    void add_nvlink(const TopoElement& e) {
        int gpu = enclosing_gpu(e);
        if (gpu < 0) return;
        const std::string* count_text = required(e, "count");
        if (!count_text) return;
        const double bw = to_int(count_text, 0) * nvlink_bw(g_.nodes[static_cast<std::size_t>(gpu)].sm);
        const std::string* tclass = e.attr("tclass");
        const PciClass target = tclass ? pci_class(*tclass) : missing_tclass(e);
        if (target == PciClass::gpu) {
            const std::string* t = required(e, "target");
            if (!t) return;
            int remote = gpu_node(normalize_busid(*t));
            if (remote >= 0) connect(g_, gpu, remote, LinkType::nvl, bw);
            return;
        }
        int remote = -1;
        if (target == PciClass::cpu) {
            remote = local_cpu(gpu);
        } else {
            if (nvswitch_ < 0) nvswitch_ = add_node(make_node(NodeType::nvs, "", e.line));
            remote = nvswitch_;
        }
        if (remote < 0) return;
        connect(g_, gpu, remote, LinkType::nvl, bw);
        connect(g_, remote, gpu, LinkType::nvl, bw);
    }

    // ncclTopoGetXmlFromGpu fills a missing tclass before the graph is built:
    // the target's class from sysfs, or NVSwitch when the target is not
    // visible. A target that is a GPU of this file is a GPU there too.
    PciClass missing_tclass(const TopoElement& e) {
        const std::string* target = e.attr("target");
        const bool is_gpu = target && gpu_node(normalize_busid(*target)) >= 0;
        g_.notes.push_back("line " + std::to_string(e.line) +
                           ": <nvlink> has no tclass: NCCL reads the target's class " + "from sysfs; taken as " +
                           (is_gpu ? "the GPU of this file" : "an NVSwitch"));
        return is_gpu ? PciClass::gpu : PciClass::nvswitch;
    }

    // ncclTopoAddC2c
    void add_c2c(const TopoElement& e) {
        int gpu = enclosing_gpu(e);
        if (gpu < 0) return;
        const std::string* count = required(e, "count");
        const std::string* bw_text = required(e, "bw");
        if (!count || !bw_text) return;
        const double bw = to_int(bw_text, 0) * to_int(count, 0) / 1000.0;
        int cpu = local_cpu(gpu);
        if (cpu < 0) return;
        connect(g_, gpu, cpu, LinkType::c2c, bw);
        connect(g_, cpu, gpu, LinkType::c2c, bw);
    }

    // ncclTopoAddPciLinks: one direction per element.
    void add_pcilink(const TopoElement& e) {
        const auto* parent_busid = elem(e.parent).attr("busid");
        const auto* target = required(e, "target");
        if (!parent_busid || !target) return;
        int from = -1, to = -1;
        for (const auto& [b, id] : pci_by_busid_) {
            if (b == normalize_busid(*parent_busid)) from = id;
            if (b == normalize_busid(*target)) to = id;
        }
        if (from < 0) {
            fail("Add PCI Link error : could not find PCI SW " + *parent_busid, e.line);
            return;
        }
        if (to >= 0) connect(g_, from, to, LinkType::loc, kLocBw);
    }

    // ncclTopoGetInterCpuBw: the SYS bandwidth out of one CPU, by the arch,
    // vendor and model ncclTopoAddCpu read (kvDictCpuArch, kvDictCpuVendor).
    static double inter_cpu_bw(const Node& c) {
        if (starts_with(c.arch, "ppc64")) return kP9Bw;
        if (starts_with(c.arch, "arm64")) return kArmBw;
        if (!starts_with(c.arch, "x86_64")) return kLocBw;
        if (starts_with(c.vendor, "GenuineIntel")) {
            if (c.family == 6 && c.model >= 0xCF) return 40.0;  // ERP_QPI_BW
            if (c.family == 6 && c.model >= 0x8F) return 22.0;  // SRP_QPI_BW
            if (c.family == 6 && c.model >= 0x55) return 10.0;  // SKL_QPI_BW
            return 6.0;                                         // BDW_QPI_BW
        }
        if (starts_with(c.vendor, "AuthenticAMD")) return kAmdBw;
        if (starts_with(c.vendor, "CentaurHauls") || starts_with(c.vendor, "  Shanghai  "))
            return c.family == 7 && c.model == 0x5B ? kYongfengZpiBw : kZpiBw;
        return kLocBw;
    }

    // ncclTopoConnectCpus: every CPU to every other, SYS links.
    void connect_cpus() {
        auto cpus = g_.of_type(NodeType::cpu);
        for (int a : cpus) {
            const double bw = inter_cpu_bw(g_.nodes[static_cast<std::size_t>(a)]);
            for (int b : cpus) {
                if (a != b) connect(g_, a, b, LinkType::sys, bw);
            }
        }
    }

    // ncclTopoGetXmlFromGpu asks NVML for the C2C links of a <gpu> of sm 90
    // or later that lists none; only a Grace (arm64) CPU has them.
    void note_c2c_from_driver() {
        for (int gpu : g_.of_type(NodeType::gpu)) {
            const Node& n = g_.nodes[static_cast<std::size_t>(gpu)];
            if (n.from_driver || n.sm < 90) continue;
            const bool has_c2c =
                std::any_of(n.links.begin(), n.links.end(), [](const Link& l) { return l.type == LinkType::c2c; });
            const int cpu = local_cpu(gpu);
            if (has_c2c || cpu < 0 || !starts_with(g_.nodes[static_cast<std::size_t>(cpu)].arch, "arm64")) continue;
            g_.notes.push_back("line " + std::to_string(n.line) + ": GPU " + n.busid +
                               " on an arm64 CPU lists no <c2c>: NCCL asks NVML for its C2C links at init; taken as "
                               "none");
        }
    }

    // ncclTopoGetPath (topo.cc) calls NICs whose bus ids differ in the last
    // character only, under one parent, two ports of one device (PATH_PORT),
    // and ncclTopoAutoMerge fuses them at the default NCCL_NET_MERGE_LEVEL
    // when the plugin can (the IB plugin, NCCL_IB_MERGE_NICS=1): one virtual
    // NIC of their summed speed at a made-up bus id. Not modelled: said.
    void note_fused_ports() {
        const auto nics = g_.of_type(NodeType::nic);
        for (int nic : nics) {
            const auto& links = g_.nodes[static_cast<std::size_t>(nic)].links;
            const auto nets =
                std::count_if(links.begin(), links.end(), [](const Link& l) { return l.type == LinkType::net; });
            if (nets > 1)
                g_.notes.push_back("NIC " + g_.nodes[static_cast<std::size_t>(nic)].busid + " has " +
                                   std::to_string(nets) +
                                   " <net> ports: with the IB plugin NCCL fuses them into one virtual NIC of their "
                                   "summed speed (NCCL_NET_MERGE_LEVEL=PORT, NCCL_IB_MERGE_NICS=1 by default); the "
                                   "model keeps them apart");
        }
        for (std::size_t i = 0; i < nics.size(); ++i) {
            const Node& a = g_.nodes[static_cast<std::size_t>(nics[i])];
            for (std::size_t j = i + 1; j < nics.size(); ++j) {
                const Node& b = g_.nodes[static_cast<std::size_t>(nics[j])];
                if (a.busid.empty() || a.busid.size() != b.busid.size() ||
                    a.busid.compare(0, a.busid.size() - 1, b.busid, 0, b.busid.size() - 1) != 0 ||
                    pci_parent(nics[i]) != pci_parent(nics[j]))
                    continue;
                g_.notes.push_back("NICs " + a.busid + " and " + b.busid +
                                   " are two ports of one device: with the IB plugin NCCL fuses them into one "
                                   "virtual NIC of their summed speed (NCCL_NET_MERGE_LEVEL=PORT, "
                                   "NCCL_IB_MERGE_NICS=1 by default); the model keeps them apart");
            }
        }
    }

    int pci_parent(int node) const {
        for (const Link& l : g_.nodes[static_cast<std::size_t>(node)].links) {
            if (l.type == LinkType::pci) return l.remote;
        }
        return -1;
    }

    // ncclTopoGetIntDevice: the four PCI ids of a <pci>, read as C's strtol
    // with base 0 reads them.
    std::uint64_t int_device(const TopoElement& e) const {
        auto id = [&e](std::string_view key) -> std::uint64_t {
            const std::string* v = e.attr(key);
            return v ? static_cast<std::uint64_t>(std::strtol(v->c_str(), nullptr, 0)) : 0;
        };
        return (id("vendor") << 48) + (id("device") << 32) + (id("subsystem_vendor") << 16) + id("subsystem_device");
    }

    // getBcmGen: a Broadcom PEX Gen4 switch shows the same ids at both levels,
    // a Gen5 one subsystem device 0x0xxx on top and 0x1xxx below.
    static int bcm_gen(std::uint64_t device, int level) {
        if ((device & 0xfffffffffffff000ULL) == 0x1000c0101000a000ULL) return 4;
        if ((device & 0xfffffffffffff000ULL) == (0x1000c03010000000ULL | static_cast<std::uint64_t>(level) * 0x1000))
            return 5;
        return 0;
    }

    // ncclTopoFlattenBcmSwitches: a Broadcom switch presents itself as a top
    // switch over sub switches with matching ids; the sub switches are
    // removed and what hung below them hangs off the top switch directly, so
    // a GPU and a NIC on two of its sub switches are PIX, not PXB. The top
    // switch's ids are then marked (subsystem device 0xffff) so it is not
    // flattened twice, and the scan starts over.
    void flatten_bcm_switches() {
        for (bool again = true; again;) {
            again = false;
            for (int top : g_.of_type(NodeType::pci)) {
                Node& sw = g_.nodes[static_cast<std::size_t>(top)];
                const int gen = bcm_gen(sw.device, 0);
                if (gen == 0) continue;
                std::vector<int> subs;
                std::erase_if(sw.links, [&](const Link& l) {
                    const Node& sub = g_.nodes[static_cast<std::size_t>(l.remote)];
                    if (sub.type != NodeType::pci || bcm_gen(sub.device, 1) != gen) return false;
                    subs.push_back(l.remote);
                    return true;
                });
                for (int sub : subs) {
                    for (const Link& l : g_.nodes[static_cast<std::size_t>(sub)].links) {
                        if (l.remote == top) continue;
                        // Appended as is, not merged or re-sorted.
                        g_.nodes[static_cast<std::size_t>(top)].links.push_back(l);
                        auto& back = g_.nodes[static_cast<std::size_t>(l.remote)].links;
                        auto it =
                            std::find_if(back.begin(), back.end(), [sub](const Link& b) { return b.remote == sub; });
                        if (it != back.end()) it->remote = top;
                    }
                }
                remove_nodes(subs);
                g_.nodes[static_cast<std::size_t>(top - count_below(subs, top))].device |= 0xffff;
                again = true;
                break;
            }
        }
    }

    static int count_below(const std::vector<int>& removed, int index) {
        return static_cast<int>(std::count_if(removed.begin(), removed.end(), [index](int r) { return r < index; }));
    }

    // ncclTopoRemoveNode: the nodes go, with every link that points at them.
    void remove_nodes(const std::vector<int>& removed) {
        if (removed.empty()) return;
        std::vector<int> new_index(g_.nodes.size(), -1);
        std::vector<Node> kept;
        for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
            if (std::find(removed.begin(), removed.end(), static_cast<int>(i)) != removed.end()) continue;
            new_index[i] = static_cast<int>(kept.size());
            kept.push_back(std::move(g_.nodes[i]));
        }
        for (Node& n : kept) {
            std::erase_if(n.links, [&](const Link& l) { return new_index[static_cast<std::size_t>(l.remote)] < 0; });
            for (Link& l : n.links) l.remote = new_index[static_cast<std::size_t>(l.remote)];
            if (n.nic >= 0) n.nic = new_index[static_cast<std::size_t>(n.nic)];
        }
        g_.nodes = std::move(kept);
        auto remap = [&new_index](int& id) {
            if (id >= 0) id = new_index[static_cast<std::size_t>(id)];
        };
        for (auto& entry : nic_keys_) remap(entry.second);
        for (auto& entry : gpu_by_busid_) remap(entry.second);
        for (auto& entry : pci_by_busid_) remap(entry.second);
        remap(nvswitch_);
    }

    // ncclTopoSortSystem / ncclTopoSort: from each CPU down the PCI tree,
    // every node's link towards the CPU moves to the end of its list, so the
    // search walks NVLinks, then PCI down, then PCI up, then SYS.
    void sort_links() {
        for (int cpu : g_.of_type(NodeType::cpu)) sort_below(cpu, -1);
    }

    void sort_below(int node, int up) {
        auto& links = g_.nodes[static_cast<std::size_t>(node)].links;
        if (up >= 0) {
            auto it = std::find_if(links.begin(), links.end(), [up](const Link& l) { return l.remote == up; });
            if (it != links.end()) std::rotate(it, it + 1, links.end());
        }
        for (std::size_t l = 0; l < g_.nodes[static_cast<std::size_t>(node)].links.size(); ++l) {
            const Link link = g_.nodes[static_cast<std::size_t>(node)].links[l];
            if (link.type == LinkType::pci && link.remote != up) sort_below(link.remote, node);
        }
    }

    const TopologyTree& file_;
    Graph g_;
    std::vector<std::pair<std::string, int>> nic_keys_;
    std::vector<std::pair<std::string, int>> gpu_by_busid_;
    std::vector<std::pair<std::string, int>> pci_by_busid_;
    int nvswitch_ = -1;
    int next_plugin_dev_ = 0;
};

// ncclTopoSetPaths: breadth first from `base`, keeping for each node the
// best path by type, then bandwidth, then hop count (NCCL 2.30.7); releases
// before it (`first_reach`) keep the first path to reach a node, replaced
// only by a wider one of no more hops.
void set_paths(Graph& g, int base, bool nvb_disabled, bool first_reach) {
    auto& to_base = g.paths[static_cast<std::size_t>(base)];
    to_base.assign(g.nodes.size(), PathInfo{});
    to_base[static_cast<std::size_t>(base)] = PathInfo{Path::loc, kLocBw, 0};
    std::vector<int> frontier{base};
    while (!frontier.empty()) {
        std::vector<int> next;
        for (int n : frontier) {
            const Node& node = g.nodes[static_cast<std::size_t>(n)];
            const PathInfo here = to_base[static_cast<std::size_t>(n)];
            for (const Link& link : node.links) {
                const Node& remote = g.nodes[static_cast<std::size_t>(link.remote)];
                // Traffic may cross a GPU only as one NVLink hop to another GPU (NVB).
                if (n != base && node.type == NodeType::gpu &&
                    (nvb_disabled || link.type != LinkType::nvl || remote.type != NodeType::gpu || here.count > 1)) {
                    continue;
                }
                const double bw = std::min(here.bw, link.bw);
                int type = link.type == LinkType::net ? 0 : static_cast<int>(link.type);
                if (node.type == NodeType::pci && remote.type == NodeType::pci) type = static_cast<int>(Path::pxb);
                if (link.type == LinkType::pci && (node.type == NodeType::cpu || remote.type == NodeType::cpu))
                    type = static_cast<int>(Path::phb);
                if (node.type == NodeType::gpu && n != base && here.type == Path::nvl &&
                    type == static_cast<int>(Path::nvl) && here.count == 1)
                    type = static_cast<int>(Path::nvb);
                type = std::max(static_cast<int>(here.type), type);
                PathInfo& there = to_base[static_cast<std::size_t>(link.remote)];
                const Path new_type = static_cast<Path>(type);
                const bool better =
                    first_reach ? (there.bw == 0 || there.count > here.count) && there.bw < bw
                                : new_type < there.type || (new_type == there.type && there.bw < bw) ||
                                      (new_type == there.type && there.bw == bw && there.count > here.count + 1);
                if (better) {
                    there = PathInfo{new_type, bw, here.count + 1};
                    if (std::find(next.begin(), next.end(), link.remote) == next.end()) next.push_back(link.remote);
                }
            }
        }
        frontier = std::move(next);
    }
}

}  // namespace

std::vector<int> Graph::of_type(NodeType type) const {
    std::vector<int> out;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (nodes[i].type == type) out.push_back(static_cast<int>(i));
    }
    return out;
}

std::string normalize_busid(const std::string& busid) {
    // busIdToInt64 (utils.cc): the hex digits up to the first other character,
    // ':' and '.' skipped, at most 16. Written back as dddd:bb:dd.f, so
    // "1B:00.0", "0000:1b:00.0" and "00000000:1b:00.0" are one device.
    std::string digits;
    for (char c : busid) {
        if (c == ':' || c == '.') continue;
        if (!std::isxdigit(static_cast<unsigned char>(c)) || digits.size() == 16) break;
        digits += c;
    }
    const unsigned long long id = digits.empty() ? 0 : std::strtoull(digits.c_str(), nullptr, 16);
    char out[40];
    std::snprintf(out, sizeof out, "%04llx:%02llx:%02llx.%llx", id >> 20, (id >> 12) & 0xff, (id >> 4) & 0xff,
                  id & 0xf);
    return out;
}

Graph build_graph(const TopologyTree& tree) { return Builder(tree).run(); }

void compute_base_paths(Graph& graph, bool nvb_disabled, bool first_reach) {
    graph.paths.assign(graph.nodes.size(), {});
    for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
        auto type = graph.nodes[i].type;
        if (type == NodeType::cpu || type == NodeType::gpu || type == NodeType::net)
            set_paths(graph, static_cast<int>(i), nvb_disabled, first_reach);
    }
}

}  // namespace launchguard::nccl::graph
