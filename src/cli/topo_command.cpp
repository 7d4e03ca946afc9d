// `launchguard topo FILE [--hwloc-xml F]`: read a topology file the way NCCL
// does and show what it maps, and (with a node topology) what drifted.
#include <boost/json.hpp>
#include <iostream>

#include "cli/command.h"
#include "nccl/topology_drift.h"
#include "nccl/topology_file.h"
#include "nccl/topology_placement.h"
#include "probe/hwloc_probe.h"
#include "report/json_report.h"
#include "util/input_file.h"
#include "util/text_escape.h"

namespace launchguard::cli {
namespace {

struct TopoArgs {
    std::string file;
    std::string hwloc_xml;
    bool live = false;
    std::string format = "text";
};

std::string device_kind(const std::string& cls) {
    if (cls.rfind("0x0302", 0) == 0 || cls.rfind("0x0300", 0) == 0) return "gpu";
    if (cls.rfind("0x0207", 0) == 0) return "ib-nic";
    if (cls.rfind("0x0200", 0) == 0) return "eth-nic";
    if (cls.rfind("0x0604", 0) == 0) return "bridge";
    return cls.empty() ? "pci" : "pci " + cls;
}

// The NUMA node this node puts a GPU or NIC on, when the node is known and has it.
std::optional<int> node_numa(const std::optional<NodeTopology>& node, const std::string& busid) {
    if (!node) return std::nullopt;
    for (const auto& g : node->gpus) {
        if (g.busid == busid && g.numa_node >= 0) return g.numa_node;
    }
    for (const auto& n : node->nics) {
        if (n.busid == busid && n.numa_node >= 0) return n.numa_node;
    }
    return std::nullopt;
}

std::string join_ids(const std::vector<std::string>& ids) {
    std::string joined;
    for (const auto& id : ids) joined += (joined.empty() ? "" : ", ") + id;
    return joined;
}

int run_topo(const TopoArgs& args) {
    auto text = read_text_file(args.file);
    if (!text) return bad_input(text.error().to_string());
    nccl::TopologyFile topo = nccl::parse_topology(*text);

    std::optional<NodeTopology> node;
    if (!args.hwloc_xml.empty() || args.live) {
        auto loaded = args.live ? discover_topology() : load_topology_from_xml(args.hwloc_xml);
        if (!loaded) return bad_input(loaded.error().to_string());
        node = std::move(loaded.value());
    }
    std::optional<nccl::TopologyDrift> drift;
    std::optional<nccl::PlacementDrift> placement;
    if (node) {
        drift = nccl::compare_with_node(topo, *node);
        placement = nccl::compare_placement(topo, *node);
    }

    if (args.format == "json") {
        boost::json::object o;
        o["file"] = args.file;
        o["outcome"] = nccl::to_string(topo.outcome);
        o["reason"] = topo.reason;
        o["line"] = topo.line;
        boost::json::array cpus;
        for (const auto& c : topo.cpus) {
            boost::json::object cpu;
            cpu["numaid"] = c.numaid;
            cpu["affinity"] = c.affinity;
            cpu["line"] = c.line;
            cpus.push_back(std::move(cpu));
        }
        o["cpus"] = std::move(cpus);
        boost::json::array pcis;
        for (const auto& p : topo.pcis) {
            boost::json::object pci;
            pci["busid"] = p.busid;
            pci["class"] = p.cls;
            pci["kind"] = device_kind(p.cls);
            pci["numaid"] = p.numaid;
            if (auto numa = node_numa(node, p.busid)) pci["node_numa"] = *numa;
            pci["line"] = p.line;
            pcis.push_back(std::move(pci));
        }
        o["pci"] = std::move(pcis);
        boost::json::array upper(topo.upper_case_busids.begin(), topo.upper_case_busids.end());
        o["upper_case_busids"] = std::move(upper);
        if (drift) {
            boost::json::object d;
            d["node"] = node->source;
            d["gpus_missing"] = boost::json::array(drift->gpus_missing.begin(), drift->gpus_missing.end());
            d["nics_missing"] = boost::json::array(drift->nics_missing.begin(), drift->nics_missing.end());
            d["not_on_node"] = boost::json::array(drift->not_on_node.begin(), drift->not_on_node.end());
            boost::json::array misplaced;
            for (const auto& m : placement->devices) {
                boost::json::object device;
                device["kind"] = m.kind;
                device["busid"] = m.busid;
                device["line"] = m.line;
                device["file_numa"] = m.file_numa;
                device["node_numa"] = m.node_numa;
                device["file_cpus"] = m.file_cpus;
                device["node_cpus"] = m.node_cpus;
                misplaced.push_back(std::move(device));
            }
            d["misplaced"] = std::move(misplaced);
            boost::json::array pairings;
            for (const auto& p : placement->pairings) {
                boost::json::object pairing;
                pairing["gpu"] = p.gpu_busid;
                pairing["line"] = p.gpu_line;
                pairing["file_nearest"] = boost::json::array(p.file_nearest.begin(), p.file_nearest.end());
                pairing["file_path"] = nccl::to_string(p.file_path);
                pairing["node_nearest"] = boost::json::array(p.node_nearest.begin(), p.node_nearest.end());
                pairing["node_path"] = nccl::to_string(p.node_path);
                pairings.push_back(std::move(pairing));
            }
            d["nic_pairings"] = std::move(pairings);
            o["drift"] = std::move(d);
        }
        std::cout << pretty_json(o);
    } else {
        // Attribute values come from the file: escape them for the terminal.
        std::cout << printable_text(args.file) << ": NCCL would "
                  << (topo.outcome == nccl::TopoOutcome::accepted   ? "accept this file"
                      : topo.outcome == nccl::TopoOutcome::rejected ? "FAIL communicator init"
                                                                    : "SILENTLY IGNORE this file and auto-detect")
                  << "\n";
        if (!topo.reason.empty()) {
            std::cout << "  " << (topo.line > 0 ? "line " + std::to_string(topo.line) + ": " : "")
                      << printable_text(topo.reason) << "\n";
        }
        for (const auto& c : topo.cpus) {
            std::cout << "  cpu numaid=" << printable_text(c.numaid)
                      << (c.affinity.empty() ? "" : " affinity=" + printable_text(c.affinity)) << "\n";
        }
        for (const auto& p : topo.pcis) {
            std::cout << "    " << printable_text(p.busid) << "  " << printable_text(device_kind(p.cls)) << "  NUMA "
                      << printable_text(p.numaid);
            if (auto numa = node_numa(node, p.busid)) {
                std::cout << (std::to_string(*numa) == p.numaid ? " (node agrees)"
                                                                : " (node: NUMA " + std::to_string(*numa) + ")");
            }
            std::cout << "  (line " << p.line << ")\n";
        }
        for (const auto& b : topo.upper_case_busids) {
            std::cout << "  bus id " << printable_text(b) << " has upper-case hex: NCCL never matches it\n";
        }
        if (drift) {
            std::cout << "drift against " << node->source << ":\n";
            for (const auto& b : drift->gpus_missing)
                std::cout << "  GPU " << printable_text(b) << " is not in the file\n";
            for (const auto& b : drift->nics_missing)
                std::cout << "  NIC " << printable_text(b) << " is not in the file\n";
            for (const auto& b : drift->not_on_node)
                std::cout << "  file lists " << printable_text(b) << ", which this node lacks\n";
            for (const auto& m : placement->devices) {
                std::cout << "  " << m.kind << " " << printable_text(m.busid) << " (line " << m.line << "): file NUMA "
                          << m.file_numa << (m.file_cpus.empty() ? "" : " CPUs " + printable_text(m.file_cpus))
                          << ", node NUMA " << m.node_numa << (m.node_cpus.empty() ? "" : " CPUs " + m.node_cpus)
                          << "\n";
            }
            for (const auto& p : placement->pairings) {
                std::cout << "  GPU " << printable_text(p.gpu_busid) << " (line " << p.gpu_line
                          << "): nearest NIC by the file " << printable_text(join_ids(p.file_nearest)) << " ("
                          << nccl::to_string(p.file_path) << "), by the node " << join_ids(p.node_nearest) << " ("
                          << nccl::to_string(p.node_path) << ")\n";
            }
            if (!drift->drifted() && drift->not_on_node.empty() && !placement->drifted()) {
                std::cout << "  none: every GPU and NIC is listed where the node has it\n";
            }
        }
    }
    bool bad = topo.outcome != nccl::TopoOutcome::accepted || !topo.upper_case_busids.empty() ||
               (drift && drift->drifted()) || (placement && placement->drifted());
    return bad ? kExitBlock : kExitAllow;
}

}  // namespace

void add_topo_command(CLI::App& app, CommandRunner& runner) {
    auto args = std::make_shared<TopoArgs>();
    CLI::App* cmd = app.add_subcommand("topo", "Parse an NCCL topology file as NCCL would; show mapping and drift");
    cmd->add_option("file", args->file, "NCCL topology XML (what NCCL_TOPO_FILE points at)")->required();
    auto* xml = cmd->add_option("--hwloc-xml", args->hwloc_xml, "Compare against the node described by this hwloc XML");
    cmd->add_flag("--live", args->live, "Compare against this machine (live hwloc discovery)")->excludes(xml);
    cmd->add_option("--format", args->format, "text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    cmd->callback([&runner, args] { runner = [args] { return run_topo(*args); }; });
}

}  // namespace launchguard::cli
