// `launchguard topo FILE [--hwloc-xml F] [--paths]`: read a topology file the
// way NCCL does and show what it maps, what drifted against a node, and (with
// --paths) what NCCL will decide about its paths.
#include <unistd.h>
#include <algorithm>
#include <boost/json.hpp>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/command.h"
#include "cli/path_output.h"
#include "nccl/topology_drift.h"
#include "nccl/topology_elements.h"
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
    bool paths = false;
    std::string env_file;
    std::string nccl_version;
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

boost::json::value optional_json(const std::optional<bool>& v) {
    if (!v) return nullptr;
    return *v;
}

boost::json::value path_json(const std::optional<nccl::Path>& p) {
    if (!p) return nullptr;
    return boost::json::string(nccl::to_string(*p));
}

std::string yes_no(const std::optional<bool>& v) { return !v ? "unknown" : *v ? "yes" : "no"; }

std::string path_text(const std::optional<nccl::Path>& p) { return p ? std::string(nccl::to_string(*p)) : "?"; }

int run_topo_paths(const TopoArgs& args, std::string_view text) {
    nccl::PathSettings settings;
    if (!args.nccl_version.empty()) {
        auto version = nccl::parse_version(args.nccl_version);
        if (!version) {
            return bad_input("--nccl-version " + printable_text(args.nccl_version) +
                             ": not an NCCL release number (expected MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. 2.27.3)");
        }
        if (auto why = nccl::unmodelled_nccl_version(*version); !why.empty())
            return bad_input("--nccl-version " + args.nccl_version + ": " + why);
        settings.nccl_version = version;
        settings.version_source = "--nccl-version";
    }
    if (auto error = read_nccl_env(args.env_file, settings.env); !error.empty()) return bad_input(error);
    nccl::PathModel model = nccl::compute_paths(nccl::parse_topology_tree(text), settings);
    print_path_model(model, args.file, args.format);
    return model.built ? kExitAllow : kExitBlock;
}

int run_topo(const TopoArgs& args) {
    auto text = read_text_file(args.file);
    if (!text) return bad_input(text.error().to_string());
    if (args.paths) return run_topo_paths(args, *text);
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

std::string read_nccl_env(const std::string& env_file, std::map<std::string, std::string>& env) {
    for (char** e = environ; e && *e; ++e) {
        std::string_view entry(*e);
        auto eq = entry.find('=');
        if (eq != std::string_view::npos && entry.substr(0, 5) == "NCCL_")
            env[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
    }
    if (env_file.empty()) return "";
    auto text = read_text_file(env_file);
    if (!text) return text.error().to_string();
    std::istringstream lines(*text);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.rfind("export ", 0) == 0) line = line.substr(7);
        auto eq = line.find('=');
        if (eq == std::string::npos || line.rfind("NCCL_", 0) != 0) continue;
        std::string value = line.substr(eq + 1);
        if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
            value = value.substr(1, value.size() - 2);
        env[line.substr(0, eq)] = value;
    }
    return "";
}

void print_path_model(const nccl::PathModel& model, const std::string& source, const std::string& format) {
    if (format == "json") {
        boost::json::object o;
        o["source"] = source;
        o["nccl_version"] = model.nccl_version;
        if (!model.built) o["error"] = model.error;
        o["gdr_level"] = nccl::to_string(model.gdr_level);
        o["gdr_level_source"] = model.gdr_level_source;
        o["p2p_level"] = nccl::to_string(model.p2p_level);
        o["p2p_level_source"] = model.p2p_level_source;
        o["pxn_disabled"] = model.pxn_disabled;
        boost::json::array gpus;
        for (const auto& g : model.gpus) {
            boost::json::object j;
            j["busid"] = g.busid;
            j["line"] = g.line;
            j["nics"] = boost::json::array(g.nics.begin(), g.nics.end());
            j["nic"] = g.nic;
            boost::json::object nic_paths;
            for (std::size_t i = 0; i < g.nic_paths.size() && i < model.nics.size(); ++i)
                nic_paths[model.nics[i]] = nccl::to_string(g.nic_paths[i]);
            j["nic_paths"] = std::move(nic_paths);
            j["path"] = path_json(g.path);
            j["nccl_path"] = path_json(g.nccl_path);
            if (!g.pxn_via.empty()) j["pxn_via"] = g.pxn_via;
            j["gdr"] = optional_json(g.gdr);
            j["gdr_read"] = optional_json(g.gdr_read);
            if (!g.gdr_mode.empty()) j["gdr_mode"] = g.gdr_mode;
            j["gdr_why"] = g.gdr_why;
            if (!g.gdr_cause.empty()) j["gdr_cause"] = g.gdr_cause;
            if (!g.unknown.empty()) j["unknown"] = g.unknown;
            gpus.push_back(std::move(j));
        }
        o["gpus"] = std::move(gpus);
        boost::json::array pairs;
        for (const auto& p : model.pairs) {
            boost::json::object j;
            j["a"] = p.a;
            j["b"] = p.b;
            j["path"] = path_json(p.path);
            j["pci_path"] = path_json(p.pci_path);
            j["nccl_path"] = path_json(p.nccl_path);
            if (!p.transport.empty()) j["transport"] = p.transport;
            j["p2p"] = optional_json(p.p2p);
            j["p2p_why"] = p.p2p_why;
            if (!p.unknown.empty()) j["unknown"] = p.unknown;
            pairs.push_back(std::move(j));
        }
        o["gpu_pairs"] = std::move(pairs);
        o["nics"] = boost::json::array(model.nics.begin(), model.nics.end());
        o["notes"] = boost::json::array(model.notes.begin(), model.notes.end());
        std::cout << pretty_json(o);
        return;
    }
    std::cout << printable_text(source) << ": NCCL " << model.nccl_version << " paths\n";
    if (!model.built) {
        std::cout << "  no path model: " << printable_text(model.error) << "\n";
        return;
    }
    std::cout << "  GDR level " << nccl::to_string(model.gdr_level) << " (" << printable_text(model.gdr_level_source)
              << "), P2P level " << nccl::to_string(model.p2p_level) << " (" << printable_text(model.p2p_level_source)
              << ")" << (model.pxn_disabled ? ", PXN disabled" : "") << "\n";
    std::cout << "GPU            NIC            path  GDR      why\n";
    for (const auto& g : model.gpus) {
        std::cout << std::left << std::setw(15) << g.busid << std::setw(15) << (g.nic.empty() ? "-" : g.nic)
                  << std::setw(6) << path_text(g.path) << std::setw(9) << yes_no(g.gdr) << printable_text(g.gdr_why)
                  << (g.pxn_via.empty() ? "" : " (PXN via " + g.pxn_via + ")") << "\n";
        if (g.nics.size() > 1) std::cout << "               local NICs: " << join_ids(g.nics) << "\n";
    }
    // Skeleton files repeat one reason per GPU: show the first, count the rest.
    const auto unknown =
        std::count_if(model.gpus.begin(), model.gpus.end(), [](const auto& g) { return !g.unknown.empty(); });
    for (const auto& g : model.gpus) {
        if (g.unknown.empty()) continue;
        std::cout << "unknown: " << printable_text(g.unknown)
                  << (unknown > 1 ? " (and " + std::to_string(unknown - 1) + " more GPUs alike)" : "") << "\n";
        break;
    }
    if (!model.pairs.empty()) std::cout << "GPU pair                       path  P2P      why\n";
    for (const auto& p : model.pairs) {
        std::cout << std::left << std::setw(31) << (p.a + " " + p.b) << std::setw(6) << path_text(p.path)
                  << std::setw(9) << yes_no(p.p2p) << printable_text(p.p2p_why)
                  << (p.transport == "NET" ? "; NCCL sends it through the network (a NIC is faster)" : "") << "\n";
    }
    // The matrix: GPUs and NICs as rows and columns, as nvidia-smi topo -m lays them out.
    std::vector<std::string> names;
    for (std::size_t i = 0; i < model.gpus.size(); ++i) names.push_back("GPU" + std::to_string(i));
    for (std::size_t i = 0; i < model.nics.size(); ++i) names.push_back("NIC" + std::to_string(i));
    auto cell = [&model](std::size_t r, std::size_t c) -> std::string {
        const std::size_t ng = model.gpus.size();
        if (r == c) return "X";
        if (r < ng && c < ng) {
            auto [a, b] = std::minmax(r, c);
            std::size_t idx = a * ng - a * (a + 1) / 2 + (b - a - 1);
            return path_text(model.pairs[idx].path ? model.pairs[idx].path : std::nullopt);
        }
        if (r >= ng && c >= ng) return "";
        const auto& g = model.gpus[r < ng ? r : c];
        const std::size_t nic = (r < ng ? c : r) - ng;
        return nic < g.nic_paths.size() ? std::string(nccl::to_string(g.nic_paths[nic])) : "";
    };
    std::cout << "\n      ";
    for (const auto& n : names) std::cout << std::setw(6) << n;
    std::cout << "\n";
    for (std::size_t r = 0; r < names.size(); ++r) {
        std::cout << std::setw(6) << names[r];
        for (std::size_t c = 0; c < names.size(); ++c) std::cout << std::setw(6) << cell(r, c);
        std::cout << "\n";
    }
    for (std::size_t i = 0; i < model.nics.size(); ++i) std::cout << "NIC" << i << ": " << model.nics[i] << "\n";
    for (const auto& n : model.notes) std::cout << "note: " << printable_text(n) << "\n";
}

void add_topo_command(CLI::App& app, CommandRunner& runner) {
    auto args = std::make_shared<TopoArgs>();
    CLI::App* cmd = app.add_subcommand("topo", "Parse an NCCL topology file as NCCL would; show mapping and drift");
    cmd->add_option("file", args->file, "NCCL topology XML (what NCCL_TOPO_FILE points at)")->required();
    auto* xml = cmd->add_option("--hwloc-xml", args->hwloc_xml, "Compare against the node described by this hwloc XML");
    cmd->add_flag("--live", args->live, "Compare against this machine (live hwloc discovery)")->excludes(xml);
    cmd->add_flag("--paths", args->paths,
                  "Predict NCCL's paths: each GPU's NICs, path and GPUDirect RDMA, each GPU pair's path and P2P");
    cmd->add_option("--env-file", args->env_file, "NCCL environment (KEY=VALUE lines) on top of the process's");
    cmd->add_option("--nccl-version", args->nccl_version,
                    "With --paths: the NCCL release whose logic to apply (e.g. 2.27.3; default 2.30.7)");
    cmd->add_option("--format", args->format, "text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    cmd->callback([&runner, args] { runner = [args] { return run_topo(*args); }; });
}

}  // namespace launchguard::cli
