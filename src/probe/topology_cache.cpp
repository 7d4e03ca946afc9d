#include "probe/topology_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "probe/text_file.h"
#include "util/atomic_file.h"

namespace launchguard {
namespace json = boost::json;
namespace {

json::value link_to_json(const PciLinkState& link) {
    json::object o;
    if (link.current) o["current"] = {{"gts", link.current->speed_gts}, {"width", link.current->width}};
    if (link.max) o["max"] = {{"gts", link.max->speed_gts}, {"width", link.max->width}};
    if (link.hwloc_gbps) o["hwloc_gbps"] = *link.hwloc_gbps;
    return o;
}

// Readers throw boost::system::system_error on a missing key or wrong type;
// topology_from_json turns that into an Error naming the file.
PcieLink link_from_json(const json::value& v) {
    return PcieLink{json::value_to<double>(v.at("gts")), json::value_to<int>(v.at("width"))};
}

PciLinkState link_state_from_json(const json::object& o) {
    PciLinkState link;
    if (auto* c = o.if_contains("current")) link.current = link_from_json(*c);
    if (auto* m = o.if_contains("max")) link.max = link_from_json(*m);
    if (auto* g = o.if_contains("hwloc_gbps")) link.hwloc_gbps = json::value_to<double>(*g);
    return link;
}

std::string str(const json::object& o, const char* key) { return json::value_to<std::string>(o.at(key)); }

CpuSet cpus_from(const json::object& o, const char* key) {
    auto parsed = CpuSet::parse_list(str(o, key));
    if (!parsed) throw std::runtime_error(std::string(key) + ": " + parsed.error().message);
    return *parsed;
}

// Caches written before launchguard recorded PCI bridges lack them: the
// devices then look switchless, which topo.numa-drift treats as a tie.
std::vector<std::string> bridges_from(const json::object& o) {
    const json::value* bridges = o.if_contains("pci_bridges");
    return bridges == nullptr ? std::vector<std::string>{} : json::value_to<std::vector<std::string>>(*bridges);
}

}  // namespace

std::string topology_to_json(const NodeTopology& topo) {
    json::object root;
    root["version"] = kTopologyCacheVersion;
    root["source"] = topo.source;
    root["all_cpus"] = topo.all_cpus.to_list();
    json::array numa;
    for (const auto& n : topo.numa_nodes) numa.push_back({{"os_index", n.os_index}, {"cpus", n.cpus.to_list()}});
    root["numa_nodes"] = std::move(numa);
    json::array gpus;
    for (const auto& g : topo.gpus) {
        json::object o;
        o["index"] = g.index;
        o["busid"] = g.busid;
        o["uuid"] = g.uuid;
        o["name"] = g.name;
        o["numa_node"] = g.numa_node;
        o["local_cpus"] = g.local_cpus.to_list();
        o["pci_bridges"] = json::value_from(g.pci_bridges);
        o["link"] = link_to_json(g.link);
        gpus.push_back(std::move(o));
    }
    root["gpus"] = std::move(gpus);
    json::array nics;
    for (const auto& n : topo.nics) {
        json::object o;
        o["hca"] = n.hca;
        o["netdevs"] = json::value_from(n.netdevs);
        o["busid"] = n.busid;
        o["numa_node"] = n.numa_node;
        o["local_cpus"] = n.local_cpus.to_list();
        o["pci_bridges"] = json::value_from(n.pci_bridges);
        json::array ports;
        for (const auto& p : n.ports) {
            json::object po;
            po["number"] = p.number;
            po["state"] = p.state;
            po["phys_state"] = p.phys_state;
            if (p.rate_gbps) po["rate_gbps"] = *p.rate_gbps;
            po["link_layer"] = p.link_layer;
            ports.push_back(std::move(po));
        }
        o["ports"] = std::move(ports);
        o["link"] = link_to_json(n.link);
        nics.push_back(std::move(o));
    }
    root["nics"] = std::move(nics);
    json::array interfaces;
    for (const auto& i : topo.interfaces) interfaces.push_back({{"name", i.name}, {"up", i.up}});
    root["interfaces"] = std::move(interfaces);
    return json::serialize(root) + "\n";
}

Result<NodeTopology> topology_from_json(std::string_view text, const std::string& origin) {
    try {
        json::value parsed = json::parse(text);
        const json::object& root = parsed.as_object();
        if (json::value_to<int>(root.at("version")) != kTopologyCacheVersion) {
            return make_file_error(origin, 0,
                                   "topology cache version differs from this launchguard's (" +
                                       std::to_string(kTopologyCacheVersion) + "): rewrite it");
        }
        NodeTopology topo;
        topo.source = "topology cache " + origin + " (" + str(root, "source") + ")";
        topo.all_cpus = cpus_from(root, "all_cpus");
        for (const auto& v : root.at("numa_nodes").as_array()) {
            const auto& o = v.as_object();
            topo.numa_nodes.push_back({json::value_to<int>(o.at("os_index")), cpus_from(o, "cpus")});
        }
        for (const auto& v : root.at("gpus").as_array()) {
            const auto& o = v.as_object();
            Gpu g;
            g.index = json::value_to<int>(o.at("index"));
            g.busid = str(o, "busid");
            g.uuid = str(o, "uuid");
            g.name = str(o, "name");
            g.numa_node = json::value_to<int>(o.at("numa_node"));
            g.local_cpus = cpus_from(o, "local_cpus");
            g.pci_bridges = bridges_from(o);
            g.link = link_state_from_json(o.at("link").as_object());
            topo.gpus.push_back(std::move(g));
        }
        for (const auto& v : root.at("nics").as_array()) {
            const auto& o = v.as_object();
            Nic n;
            n.hca = str(o, "hca");
            n.netdevs = json::value_to<std::vector<std::string>>(o.at("netdevs"));
            n.busid = str(o, "busid");
            n.numa_node = json::value_to<int>(o.at("numa_node"));
            n.local_cpus = cpus_from(o, "local_cpus");
            n.pci_bridges = bridges_from(o);
            for (const auto& pv : o.at("ports").as_array()) {
                const auto& po = pv.as_object();
                IbPort p;
                p.number = json::value_to<int>(po.at("number"));
                p.state = str(po, "state");
                p.phys_state = str(po, "phys_state");
                if (auto* r = po.if_contains("rate_gbps")) p.rate_gbps = json::value_to<double>(*r);
                p.link_layer = str(po, "link_layer");
                n.ports.push_back(std::move(p));
            }
            n.link = link_state_from_json(o.at("link").as_object());
            topo.nics.push_back(std::move(n));
        }
        for (const auto& v : root.at("interfaces").as_array()) {
            const auto& o = v.as_object();
            topo.interfaces.push_back({str(o, "name"), json::value_to<bool>(o.at("up"))});
        }
        return topo;
    } catch (const std::exception& e) {
        return make_file_error(origin, 0, std::string("not a launchguard topology cache: ") + e.what());
    }
}

Status save_cache_file(const std::string& path, std::string_view content, std::string_view what) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    if (ec) return make_file_error(path, 0, "cannot create the cache directory: " + ec.message());
    auto written = write_file_atomically(path, content, 0644);
    if (!written) {
        return make_file_error(path, 0, "cannot write the " + std::string(what) + ": " + written.error().message);
    }
    return Done{};
}

Status save_topology_cache(const NodeTopology& topo, const std::string& path) {
    return save_cache_file(path, topology_to_json(topo), "topology cache");
}

Result<NodeTopology> load_topology_cache(const std::string& path) {
    auto text = read_text_file(path);
    if (!text) return text.error();
    return topology_from_json(*text, path);
}

bool topology_cache_is_fresh(const std::string& path, long max_age_seconds) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return false;
    // Boot time from /proc/stat ("btime <epoch>").
    long boot = 0;
    if (auto text = read_text_file("/proc/stat")) {
        auto pos = text->find("\nbtime ");
        if (pos != std::string::npos) boot = std::strtol(text->c_str() + pos + 7, nullptr, 10);
    }
    const long written = static_cast<long>(st.st_mtime);
    const long now = static_cast<long>(std::time(nullptr));
    return written >= boot && now - written <= max_age_seconds;
}

}  // namespace launchguard
