// Network devices under sysfs: InfiniBand HCAs and their ports, network
// interfaces, and the topology they complete (sysfs_probe.h).
#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <utility>

#include "probe/sysfs_pci.h"
#include "probe/sysfs_probe.h"
#include "probe/sysfs_reading.h"
#include "probe/text_file.h"
#include "util/text.h"

namespace launchguard {
namespace {

namespace fs = std::filesystem;
using sysfs::apply_link;
using sysfs::entries;
using sysfs::is_dir;
using sysfs::numbered;
using sysfs::read_attribute;
using sysfs::read_number;
using sysfs::read_pcie_links;
using sysfs::record_link;

// sys/class/infiniband/<hca>/device links to the PCI device directory.
std::string hca_busid(const std::string& hca_dir) {
    std::error_code ec;
    fs::path target = fs::canonical(hca_dir + "/device", ec);
    if (ec) return {};
    record_link(hca_dir + "/device", target);
    std::string name = target.filename().string();
    return name.find(':') != std::string::npos ? ascii_lower(name) : std::string();
}

// The last component of where a sysfs link points ("mlx5_core" for a
// device's driver link); empty when it does not resolve.
std::string link_name(const std::string& link) {
    std::error_code ec;
    fs::path target = fs::canonical(link, ec);
    if (ec) return {};
    record_link(link, target);
    return target.filename().string();
}

}  // namespace

std::optional<double> parse_ib_rate(std::string_view text) {
    std::string s(trim(text));
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || v < 0) return std::nullopt;
    if (trim(std::string_view(end)).substr(0, 6) != "Gb/sec") return std::nullopt;
    return v;
}

std::string parse_ib_state(std::string_view text) {
    text = trim(text);
    std::size_t colon = text.find(':');
    return std::string(colon == std::string_view::npos ? text : trim(text.substr(colon + 1)));
}

std::vector<NetInterface> read_net_interfaces(const std::string& root) {
    std::vector<NetInterface> out;
    std::string net_dir = under_root(root, "sys/class/net");
    for (const auto& name : entries(net_dir)) {
        // "unknown" is what lo and some virtual devices report while passing traffic.
        std::string oper = read_attribute(net_dir + "/" + name + "/operstate").value_or("unknown");
        bool up = oper != "down" && oper != "lowerlayerdown" && oper != "notpresent" && oper != "dormant";
        out.push_back(NetInterface{name, up});
    }
    return out;
}

std::vector<NetInterface> augment_topology_from_sysfs(NodeTopology& topo, const std::string& root,
                                                      const std::map<std::string, PcieLinkRecord>* links,
                                                      Fact<std::map<std::string, PcieLinkRecord>>* gpu_nic_links) {
    bool used = false;

    std::string ib_dir = under_root(root, "sys/class/infiniband");
    for (const auto& hca : entries(ib_dir)) {
        std::string hca_dir = ib_dir + "/" + hca;
        auto nic = std::find_if(topo.nics.begin(), topo.nics.end(), [&](const Nic& n) { return n.hca == hca; });
        if (nic == topo.nics.end()) {
            Nic added;
            added.hca = hca;
            added.busid = hca_busid(hca_dir);
            for (const auto& netdev : entries(hca_dir + "/device/net")) added.netdevs.push_back(netdev);
            added.numa_node = read_number<int>(hca_dir + "/device/numa_node").value_or(-1);
            if (auto cpus = read_attribute(hca_dir + "/device/local_cpulist")) {
                if (auto set = CpuSet::parse_list(*cpus)) added.local_cpus = *set;
            }
            topo.nics.push_back(std::move(added));
            nic = topo.nics.end() - 1;
        }
        if (nic->driver.empty()) nic->driver = link_name(hca_dir + "/device/driver");
        if (nic->uverbs.empty()) {
            for (const auto& name : entries(hca_dir + "/device/infiniband_verbs")) {
                if (name.starts_with("uverbs")) nic->uverbs.push_back(name);
            }
        }
        for (const auto& port_name : entries(hca_dir + "/ports")) {
            auto number = numbered(port_name, "");
            if (!number) continue;
            std::string pdir = hca_dir + "/ports/" + port_name;
            auto port = std::find_if(nic->ports.begin(), nic->ports.end(),
                                     [&](const IbPort& p) { return p.number == static_cast<int>(*number); });
            if (port == nic->ports.end()) {
                IbPort p;
                p.number = static_cast<int>(*number);
                nic->ports.push_back(p);
                port = nic->ports.end() - 1;
            }
            if (auto s = read_attribute(pdir + "/state")) port->state = parse_ib_state(*s);
            if (auto s = read_attribute(pdir + "/phys_state")) port->phys_state = parse_ib_state(*s);
            if (auto s = read_attribute(pdir + "/rate")) port->rate_gbps = parse_ib_rate(*s);
            if (auto s = read_attribute(pdir + "/link_layer")) port->link_layer = *s;
            used = true;
        }
        std::sort(nic->ports.begin(), nic->ports.end(),
                  [](const IbPort& a, const IbPort& b) { return a.number < b.number; });
    }

    std::map<std::string, PcieLinkRecord> read_here;
    if (links == nullptr && gpu_nic_links != nullptr) {
        std::vector<std::string> busids;
        for (const auto& gpu : topo.gpus) busids.push_back(gpu.busid);
        for (const auto& nic : topo.nics) busids.push_back(nic.busid);
        *gpu_nic_links = probe_pcie_links(root, busids);
        links = gpu_nic_links->is_known() ? &gpu_nic_links->value() : &read_here;
    } else if (links == nullptr) {
        read_here = read_pcie_links(root);
        links = &read_here;
    }
    if (!links->empty()) {
        for (auto& gpu : topo.gpus) apply_link(gpu.link, *links, gpu.busid);
        for (auto& nic : topo.nics) apply_link(nic.link, *links, nic.busid);
        used = true;
    }

    std::vector<NetInterface> interfaces = read_net_interfaces(root);
    for (const auto& netdev : interfaces) {
        auto it = std::find_if(topo.interfaces.begin(), topo.interfaces.end(),
                               [&](const NetInterface& i) { return i.name == netdev.name; });
        if (it == topo.interfaces.end())
            topo.interfaces.push_back(netdev);
        else
            it->up = netdev.up;
        used = true;
    }

    if (used)
        topo.source += (topo.source.empty() ? "" : " + ") + std::string("sysfs under ") + (root.empty() ? "/" : root);
    return interfaces;
}

}  // namespace launchguard
