#include "nccl/node_paths.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "nccl/topology_elements.h"

namespace launchguard::nccl {
namespace {

// How NCCL's sysfs reader writes a link speed (ncclTopoGetPciNode copies
// /sys/.../current_link_speed, "16.0 GT/s PCIe" on current kernels).
std::string link_speed_text(double gts) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GT/s PCIe", gts);
    return buf;
}

std::string link_attrs(const std::optional<PcieLink>& link) {
    if (!link || link->width <= 0 || link->speed_gts <= 0) return "";
    return " link_speed=\"" + link_speed_text(link->speed_gts) + "\" link_width=\"" + std::to_string(link->width) +
           "\"";
}

// ncclTopoGetXmlFromSys: a GPU's link is what NVML reports now (current
// generation and width); any other device's is its sysfs max_link_speed and
// max_link_width (NCCL also caps them by the port above, which we do not read).
std::string gpu_link_attrs(const PciLinkState& link) { return link_attrs(link.current); }
std::string nic_link_attrs(const PciLinkState& link) { return link_attrs(link.max ? link.max : link.current); }

// ncclTopoGetXmlFromSys climbs the device's sysfs path two directories at a
// time: the parent of a device or switch is the bridge two levels up (a
// switch's downstream port and a root port are skipped), and a root complex
// met on the way ends the climb at the CPU. Of the bridges above a device,
// nearest the CPU first, that keeps the second from the device, the fourth,
// and so on.
std::vector<std::string> nccl_parent_bridges(const std::vector<std::string>& bridges) {
    std::vector<std::string> kept;
    for (auto i = static_cast<std::ptrdiff_t>(bridges.size()) - 2; i >= 0; i -= 2) {
        kept.insert(kept.begin(), bridges[static_cast<std::size_t>(i)]);
    }
    return kept;
}

// A PCI subtree under one CPU: bridges by bus id, then the devices below them.
struct Subtree {
    std::map<std::string, Subtree> bridges;
    std::vector<std::string> devices;  // complete <pci .../> elements
};

void write(const Subtree& tree, std::string& out, int depth) {
    const std::string indent(static_cast<std::size_t>(depth) * 2, ' ');
    for (const auto& [busid, sub] : tree.bridges) {
        out += indent + "<pci busid=\"" + busid + "\" class=\"0x060400\">\n";
        write(sub, out, depth + 1);
        out += indent + "</pci>\n";
    }
    for (const auto& d : tree.devices) out += indent + d + "\n";
}

// NCCL's IB plugin reports one device per ACTIVE port and none for an HCA
// whose ports are all down (ncclIbInit): such a NIC is not in NCCL's graph.
// Unknown ports keep the NIC.
bool no_active_port(const Nic& nic) {
    if (nic.ports.empty()) return false;
    return std::none_of(nic.ports.begin(), nic.ports.end(), [](const IbPort& p) { return p.state == "ACTIVE"; });
}

}  // namespace

std::map<std::string, std::string> nccl_variables(const Environment& env) {
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : env) {
        if (k.rfind("NCCL_", 0) == 0) out.emplace(k, v);
    }
    return out;
}

std::string topology_xml_from_node(const NodeTopology& node) {
    std::map<int, Subtree> cpus;
    auto place = [&cpus](int numa, const std::vector<std::string>& bridges, std::string element) {
        Subtree* at = &cpus[numa];  // sysfs numa_node as NCCL copies it, -1 included
        for (const auto& b : nccl_parent_bridges(bridges)) at = &at->bridges[b];
        at->devices.push_back(std::move(element));
    };
    for (const auto& g : node.gpus) {
        place(g.numa_node, g.pci_bridges,
              "<pci busid=\"" + g.busid + "\" class=\"0x030200\"" + gpu_link_attrs(g.link) + "/>");
    }
    std::set<std::string> nics;
    for (const auto& n : node.nics) {
        if (n.busid.empty() || no_active_port(n) || !nics.insert(n.busid).second) continue;
        place(n.numa_node, n.pci_bridges,
              "<pci busid=\"" + n.busid + "\" class=\"0x020700\"" + nic_link_attrs(n.link) + "/>");
    }
    std::string out = "<system version=\"1\">\n";
    for (const auto& [numa, tree] : cpus) {
        out += "  <cpu numaid=\"" + std::to_string(numa) + "\">\n";
        write(tree, out, 2);
        out += "  </cpu>\n";
    }
    out += "</system>\n";
    return out;
}

NodePaths predict_node_paths(const LaunchContext& ctx, const FileView* files, std::optional<Version> version) {
    NodePaths out;
    PathSettings settings;
    settings.nccl_version = version;
    if (ctx.env) settings.env = nccl_variables(ctx.env.value());

    // ncclTopoGetSystem: NCCL_TOPO_FILE, else the file NVIDIA's topology daemon writes.
    std::string topo_path;
    if (auto it = settings.env.find("NCCL_TOPO_FILE"); it != settings.env.end() && !it->second.empty()) {
        topo_path = it->second;
        out.source = "NCCL_TOPO_FILE=" + topo_path;
    } else if (files && files->stat(kDefaultTopoPath).kind == FileKind::regular) {
        topo_path = std::string(kDefaultTopoPath);
        out.source = topo_path + " (read when NCCL_TOPO_FILE is unset)";
    }
    if (!topo_path.empty()) {
        if (!files) {
            out.unknown = "the task's files are unknown, so " + topo_path + " cannot be read";
            return out;
        }
        auto text = files->read(topo_path);
        if (!text) {
            out.unknown = text.error().to_string();
            return out;
        }
        out.model = compute_paths(parse_topology_tree(*text), settings);
        return out;
    }
    out.source = "this node, as NCCL reads it from sysfs";
    if (!ctx.topology) {
        out.unknown = "the node's topology is unknown: " + ctx.topology.reason();
        return out;
    }
    if (ctx.topology.value().gpus.empty()) {
        out.no_gpu = true;
        return out;
    }
    out.model = compute_paths(parse_topology_tree(topology_xml_from_node(ctx.topology.value())), settings);
    return out;
}

}  // namespace launchguard::nccl
