// Builds NCCL's topology graph from the parsed XML and runs its path search.
// Our own code, following the decisions of NCCL 2.30's src/graph/topo.cc and
// paths.cc; each function names the NCCL function whose outcome it mirrors.
#include "nccl/nccl_topo_graph.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>

namespace launchguard::nccl::graph {
namespace {

// Bandwidths in GB/s from NCCL's src/graph/topo.h.
constexpr double kLocBw = 5000.0;
constexpr double kArmBw = 6.0;
constexpr double kP9Bw = 32.0;
constexpr double kAmdBw = 16.0;

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
        connect_cpus();
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
        int id = add_node(cpu);
        cpu_of_element_[index] = id;
        for (std::size_t i = static_cast<std::size_t>(index) + 1; i < file_.elements.size(); ++i) {
            const auto& sub = file_.elements[i];
            if (sub.parent != index) continue;
            if (sub.name == "pci") add_pci(static_cast<int>(i), id, cpu.numaid);
            if (sub.name == "nic") add_cpu_nic(static_cast<int>(i), id, cpu.numaid);
            if (!g_.error.empty()) return;
        }
    }

    // The <nic> directly under a <cpu> (ncclTopoAddCpu): one NIC per NUMA node.
    void add_cpu_nic(int index, int cpu, const std::string& numaid) {
        std::string key = "cpu" + numaid;
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
    void add_pci(int index, int parent, const std::string& numaid) {
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
            if (!xg.attr("rank")) return;  // NCCL skips the whole <pci> (ncclTopoAddPci)
            Node gpu = make_node(NodeType::gpu, busid, e.line);
            gpu.sm = to_int(xg.attr("sm"), -1);
            gpu.dev = to_int(xg.attr("dev"), -1);
            if (const auto* v = xg.attr("gdr")) gpu.gdr = to_int(v, 0) != 0;
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
            std::string key = numaid + "/" + busid;
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
        int sw = add_node(make_node(NodeType::pci, busid, e.line));
        pci_by_busid_.emplace_back(busid, sw);
        for (std::size_t i = static_cast<std::size_t>(index) + 1; i < file_.elements.size() && g_.error.empty(); ++i) {
            if (file_.elements[i].parent == index && file_.elements[i].name == "pci")
                add_pci(static_cast<int>(i), sw, numaid);
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
            if (const auto* v = xn.attr("gdr")) {
                net.gdr = to_int(v, 0) != 0;
            } else {
                net.gdr = false;  // xmlGetAttrIntDefault(..., "gdr", 0)
            }
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
        const std::string* tclass = required(e, "tclass");
        if (!count_text || !tclass) return;
        const double bw = to_int(count_text, 0) * nvlink_bw(g_.nodes[static_cast<std::size_t>(gpu)].sm);
        PciClass target = pci_class(*tclass);
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

    // ncclTopoConnectCpus / ncclTopoGetInterCpuBw
    void connect_cpus() {
        auto cpus = g_.of_type(NodeType::cpu);
        for (int a : cpus) {
            const auto& c = g_.nodes[static_cast<std::size_t>(a)];
            double bw = kLocBw;
            if (c.arch == "ppc64") bw = kP9Bw;
            if (c.arch == "arm64") bw = kArmBw;
            if (c.arch == "x86_64" && c.vendor == "GenuineIntel") bw = intel_qpi_bw(a);
            if (c.arch == "x86_64" && c.vendor == "AuthenticAMD") bw = kAmdBw;
            for (int b : cpus) {
                if (a != b) connect(g_, a, b, LinkType::sys, bw);
            }
        }
    }

    double intel_qpi_bw(int cpu) const {
        // familyid/modelid of the <cpu>: ERP 40, SRP 22, SKL 10, else BDW 6.
        for (const auto& [element, node] : cpu_of_element_) {
            if (node != cpu) continue;
            const auto& e = elem(element);
            int family = to_int(e.attr("familyid"), 0);
            int model = to_int(e.attr("modelid"), 0);
            if (family == 6 && model >= 0xCF) return 40.0;
            if (family == 6 && model >= 0x8F) return 22.0;
            if (family == 6 && model >= 0x55) return 10.0;
        }
        return 6.0;
    }

    const TopologyTree& file_;
    Graph g_;
    std::vector<std::pair<std::string, int>> nic_keys_;
    std::vector<std::pair<std::string, int>> gpu_by_busid_;
    std::vector<std::pair<std::string, int>> pci_by_busid_;
    std::map<int, int> cpu_of_element_;
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
    std::string out = busid;
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    // NCCL dumps write "0000:1b:00.0"; a bus id without the domain gets one.
    if (std::count(out.begin(), out.end(), ':') == 1) out = "0000:" + out;
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
