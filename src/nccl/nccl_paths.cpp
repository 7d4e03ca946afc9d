// NCCL's path decisions on one node: ncclTopoComputePaths, ncclTopoCheckP2p,
// ncclTopoCheckGdr, ncclTopoGetLocal and ncclTopoGetLocalNet (NCCL 2.30,
// src/graph/paths.cc and topo.cc), re-derived on the graph of nccl_topo_graph.
#include "nccl/nccl_paths.h"

#include <algorithm>
#include <cstdlib>

#include "nccl/nccl_topo_graph.h"

namespace launchguard::nccl {
namespace {

using graph::Graph;
using graph::NodeType;
using graph::PathInfo;

constexpr int kMaxChannels = 64;  // MAXCHANNELS

std::optional<std::string> env_value(const PathSettings& s, const std::string& name) {
    auto it = s.env.find(name);
    if (it == s.env.end()) return std::nullopt;
    return it->second;
}

// NCCL_PARAM: an integer from the environment, else the default.
long param(const PathSettings& s, const std::string& name, long fallback) {
    auto v = env_value(s, name);
    if (!v || v->empty()) return fallback;
    return std::strtol(v->c_str(), nullptr, 0);
}

// The releases whose logic differs here: before 2.27 there is no P2C path and
// NCCL_NET_GDR_C2C defaults to 0; 2.27 to 2.29.1 count a P2C NIC as C2C inside
// ncclTopoCheckGdr; from 2.29.2 the default GDR level itself is P2C.
enum class Release { before_2_27, v2_27, v2_29_2 };
Release release_of(const std::optional<Version>& v) {
    if (!v) return Release::v2_29_2;
    if (*v < Version{2, 27, 0}) return Release::before_2_27;
    if (*v < Version{2, 29, 2}) return Release::v2_27;
    return Release::v2_29_2;
}

Path merge_path_type(Path a, Path b) {
    // mergePathType (paths.cc): GPU over C2C to a CPU, then PCI to a NIC, is P2C.
    Path hi = std::max(a, b), lo = std::min(a, b);
    if (hi == Path::phb && lo == Path::c2c) return Path::p2c;
    return hi;
}

class Model {
public:
    Model(Graph& g, const PathSettings& s) : g_(g), s_(s), release_(release_of(s.nccl_version)) {
        gpus_ = g_.of_type(NodeType::gpu);
        nets_ = g_.of_type(NodeType::net);
        assign_devs();
    }

    PathModel run() {
        PathModel out;
        out.built = true;
        out.nccl_version = s_.nccl_version ? s_.nccl_version->to_string() + " (from the image)" : "2.30 (assumed)";
        settle_levels(out);
        compute(out);
        report(out);
        return out;
    }

private:
    graph::Node& node(int i) { return g_.nodes[static_cast<std::size_t>(i)]; }
    PathInfo& path(int from, int to) { return g_.path(from, to); }

    // Without <gpu dev>, the NVML index follows bus id order.
    void assign_devs() {
        std::vector<int> sorted = gpus_;
        std::sort(sorted.begin(), sorted.end(), [this](int a, int b) { return node(a).busid < node(b).busid; });
        for (std::size_t i = 0; i < sorted.size(); ++i) {
            if (node(sorted[i]).dev < 0) node(sorted[i]).dev = static_cast<int>(i);
        }
    }

    void settle_levels(PathModel& out) {
        // ncclTopoCheckGdr: the default level, then NCCL_NET_GDR_LEVEL.
        const long c2c = param(s_, "NCCL_NET_GDR_C2C", release_ == Release::before_2_27 ? 0 : 1);
        gdr_c2c_ = c2c != 0;
        gdr_level_ = (release_ == Release::v2_29_2 && gdr_c2c_) ? Path::p2c : Path::pxb;
        out.gdr_level_source = "NCCL default for " + out.nccl_version;
        if (auto v = env_value(s_, "NCCL_NET_GDR_LEVEL")) {
            if (auto level = parse_level(*v)) {
                gdr_level_ = *level;
                out.gdr_level_source = "NCCL_NET_GDR_LEVEL=" + *v;
                gdr_level_from_env_ = true;
            } else {
                out.notes.push_back("NCCL_NET_GDR_LEVEL=" + *v + " is not a level NCCL knows: it keeps its default");
            }
        }
        out.gdr_level = gdr_level_;

        // ncclTopoCheckP2p: PXB, or SYS on AMD with at most two GPUs; then the user's setting.
        p2p_level_ = Path::pxb;
        out.p2p_level_source = "NCCL default";
        auto cpus = g_.of_type(NodeType::cpu);
        if (!cpus.empty() && node(cpus[0]).arch == "x86_64" && node(cpus[0]).vendor == "AuthenticAMD" &&
            gpus_.size() <= 2) {
            p2p_level_ = Path::sys;
            out.p2p_level_source = "NCCL default (AMD CPU, at most two GPUs)";
        }
        auto disable = env_value(s_, "NCCL_P2P_DISABLE");
        if (disable && std::strtol(disable->c_str(), nullptr, 0) == 1) {
            p2p_level_ = Path::loc;
            out.p2p_level_source = "NCCL_P2P_DISABLE=1";
        } else if (auto v = env_value(s_, "NCCL_P2P_LEVEL")) {
            if (auto level = parse_level(*v)) {
                p2p_level_ = *level;
                out.p2p_level_source = "NCCL_P2P_LEVEL=" + *v;
            }
        }
        out.p2p_level = p2p_level_;
        pxn_disabled_ = param(s_, "NCCL_PXN_DISABLE", 0) == 1;
        out.pxn_disabled = pxn_disabled_;
        pxn_type_ = (release_ != Release::before_2_27 && param(s_, "NCCL_PXN_C2C", 1) != 0) ? Path::p2c : Path::pxb;
    }

    // ncclGetLocalCpu: the CPU a GPU is closest to (ncclTopoGetLocal GPU->CPU).
    int local_cpu(int gpu) {
        auto l = local(gpu, g_.of_type(NodeType::cpu));
        return l.empty() ? -1 : l[0];
    }

    // ncclTopoGetLocal: highest bandwidth, then best path type.
    std::vector<int> local(int from, const std::vector<int>& targets) {
        std::vector<int> out;
        Path best_type = Path::dis;
        double best_bw = 0;
        for (int t : targets) {
            const PathInfo& p = path(from, t);
            if (p.bw > best_bw || (p.bw == best_bw && p.type < best_type)) {
                best_bw = p.bw;
                best_type = p.type;
                out.clear();
            }
            if (p.bw == best_bw && p.type == best_type) out.push_back(t);
        }
        return out;
    }

    // ncclTopoGetLocalNetType (NCCL_NETDEVS_POLICY AUTO/ALL/MAX:n): which
    // local NET a GPU uses on a channel.
    int net_for_channel(int gpu, int channel) {
        auto nets = local(gpu, nets_);
        if (nets.empty()) return -1;
        auto gpus = local(nets[0], gpus_);
        const int local_gpus = std::max<int>(1, static_cast<int>(gpus.size()));
        const int count = static_cast<int>(nets.size());
        int per_gpu = (count + local_gpus - 1) / local_gpus;
        if (auto policy = env_value(s_, "NCCL_NETDEVS_POLICY")) {
            std::string p = *policy;
            std::transform(p.begin(), p.end(), p.begin(), [](unsigned char c) { return std::toupper(c); });
            if (p == "ALL") per_gpu = count;
            if (p.rfind("MAX:", 0) == 0 && std::atoi(p.c_str() + 4) > 0)
                per_gpu = std::min(std::atoi(p.c_str() + 4), count);
        }
        int n = node(gpu).dev % local_gpus;
        if ((count & (count - 1)) == 0) {
            int mirror = 0;
            for (int b = 1, mb = count >> 1; b < count; b <<= 1, mb >>= 1) {
                if (n & b) mirror |= mb;
            }
            n = mirror;
        }
        n += channel % per_gpu;
        return nets[static_cast<std::size_t>(n % count)];
    }

    // ncclTopoGetLocalGpu: the first local GPU that uses the NET on some channel.
    int local_gpu_of(int net) {
        auto gpus = local(net, gpus_);
        for (int c = 0; c < kMaxChannels; ++c) {
            for (int g : gpus) {
                if (net_for_channel(g, c) == net) return g;
            }
        }
        return -1;
    }

    // addInterStep: route from -> to through `via`.
    void inter_step(int via, int from, int to, bool pxn) {
        const PathInfo a = path(from, via);
        const PathInfo b = path(via, to);
        PathInfo& p = path(from, to);
        p.count = a.count + b.count;
        p.type = pxn ? Path::pxn : merge_path_type(a.type, b.type);
        p.bw = std::min(a.bw, b.bw);
    }

    struct Gdr {
        std::optional<bool> on;
        std::string why;
        std::string cause;
        std::string mode;
        int proxy = -1;
    };

    static Gdr refused(std::string why, std::string cause) {
        Gdr r;
        r.on = false;
        r.why = std::move(why);
        r.cause = std::move(cause);
        return r;
    }

    // ncclTopoCheckGdr
    Gdr check_gdr(int gpu, int net, bool read) {
        Gdr r;
        const auto& n = node(net);
        const auto& gn = node(gpu);
        std::string unknown;
        if (n.gdr && !*n.gdr)
            return refused("the network plugin reports no GPUDirect RDMA for this NIC (gdr=0)", "plugin");
        if (gn.gdr && !*gn.gdr) return refused("the GPU reports no GPUDirect RDMA (gdr=0)", "driver");
        if (!n.gdr) unknown = "whether the network plugin reports GPUDirect RDMA for the NIC";
        if (!gn.gdr) unknown = "whether the driver reports GPUDirect RDMA for the GPU (nvidia-peermem or DMA-BUF)";
        if (read) {
            const long gdr_read = param(s_, "NCCL_NET_GDR_READ", -2);
            if (gdr_read == 0) return refused("NCCL_NET_GDR_READ=0 disables GPUDirect RDMA for sends", "setting");
            if (gdr_read < 0 && gn.sm >= 0 && gn.sm < 80) {
                bool nvlink = gpus_.size() == 1;
                for (int o : gpus_) {
                    if (o != gpu && path(gpu, o).type == Path::nvl) nvlink = true;
                }
                if (!nvlink) return refused("a pre-Ampere GPU without an NVLink peer does not read over GDR", "gpu");
            } else if (gdr_read < 0 && gn.sm < 0) {
                unknown = "the GPU's compute capability (sends use GDR from Ampere on)";
            }
        }
        Path distance = path(gpu, net).type;
        int g = gpu;
        if (distance == Path::pxn) {
            auto it = pxn_via_.find({gpu, net});
            if (it != pxn_via_.end()) {
                g = it->second;
                r.proxy = g;
                distance = path(g, net).type;
            }
        }
        const int cpu = local_cpu(g);
        const bool c2c_gpu = cpu >= 0 && path(g, cpu).type == Path::c2c;
        if (release_ == Release::before_2_27 && gdr_c2c_ && distance == Path::phb && c2c_gpu) distance = Path::c2c;
        if (release_ == Release::v2_27 && gdr_c2c_ && distance == Path::p2c) distance = Path::c2c;
        const std::string level = std::string(to_string(gdr_level_)) + (gdr_level_from_env_ ? "" : " (default)");
        if (distance > gdr_level_) {
            r.on = false;
            r.why = "path " + std::string(to_string(distance)) + " is farther than NCCL_NET_GDR_LEVEL " + level;
            r.cause = gdr_level_from_env_ ? "setting NCCL_NET_GDR_LEVEL" : "slot";
            if (c2c_gpu && !gdr_c2c_) r.cause = "setting NCCL_NET_GDR_C2C";
            return r;
        }
        r.mode = (c2c_gpu && distance != Path::p2c && distance != Path::c2c) ? "pci" : "default";
        if (!unknown.empty()) {
            r.on = std::nullopt;
            r.why = "path " + std::string(to_string(distance)) + " is within NCCL_NET_GDR_LEVEL " + level +
                    "; unknown: " + unknown + " is not in the file";
            return r;
        }
        r.on = true;
        r.why = "path " + std::string(to_string(distance)) + " is within NCCL_NET_GDR_LEVEL " + level;
        return r;
    }

    // ncclTopoComputePaths after the base paths.
    void compute(PathModel& out) {
        // P2P between GPUs; without it traffic goes through the receiver's CPU.
        original_pair_.assign(gpus_.size(), std::vector<PathInfo>(gpus_.size()));
        for (std::size_t i = 0; i < gpus_.size(); ++i)
            for (std::size_t j = 0; j < gpus_.size(); ++j) original_pair_[i][j] = path(gpus_[i], gpus_[j]);
        for (int g : gpus_) {
            for (int p : gpus_) {
                if (path(p, g).type > p2p_level_) {
                    int cpu = local_cpu(g);
                    if (cpu >= 0) inter_step(cpu, p, g, false);
                }
            }
        }
        // P2C: a C2C GPU whose local NIC hangs off the same CPU.
        if (release_ != Release::before_2_27) {
            for (int g : gpus_) {
                int c = local_cpu(g);
                if (c < 0) continue;
                for (int n : local(g, nets_)) {
                    if (merge_path_type(path(g, c).type, path(n, c).type) == Path::p2c) {
                        path(g, n).type = std::min(Path::p2c, path(g, n).type);
                        path(n, g).type = std::min(Path::p2c, path(n, g).type);
                    }
                }
            }
        }
        for (int n : nets_) {
            for (int g : gpus_) {
                if (!pxn_disabled_) {
                    int peer = local_gpu_of(n);
                    if (peer != g && peer != -1) {
                        Gdr peer_gdr = check_gdr(peer, n, true);
                        if (path(peer, n).type <= pxn_type_ && peer_gdr.on.value_or(true) &&
                            path(peer, g).type <= Path::nvl &&
                            (path(peer, n).bw > path(g, n).bw || path(g, n).type > Path::pxn)) {
                            inter_step(peer, g, n, true);
                            pxn_via_[{g, n}] = peer;
                        }
                    }
                }
                Gdr gdr = check_gdr(g, n, false);
                checked_path_[{g, n}] = path(g, n).type;
                gdr_[{g, n}] = gdr;
                if (path(g, n).type < Path::phb && gdr.on.has_value() && !*gdr.on) {
                    int cpu = local_cpu(g);
                    if (cpu >= 0) {
                        inter_step(cpu, n, g, false);
                        inter_step(cpu, g, n, false);
                    }
                }
            }
        }
        for (int n : nets_) out.nics.push_back(node(n).busid);
    }

    void report(PathModel& out) {
        for (std::size_t i = 0; i < gpus_.size(); ++i) {
            const int g = gpus_[i];
            GpuPathVerdict v;
            v.busid = node(g).busid;
            v.line = node(g).line;
            v.dev = node(g).dev;
            for (int n : local(g, nets_)) v.nics.push_back(node(n).busid);
            for (int n : nets_) v.nic_paths.push_back(checked_path_[{g, n}]);
            const int used = net_for_channel(g, 0);
            if (node(g).from_driver) {
                v.unknown =
                    "the file has no <gpu> for " + v.busid +
                    ": the driver adds it with its NVLinks at init, so NVLink paths (NVL, NVB, PXN) are unknown";
            }
            if (used >= 0) {
                v.nic = node(used).busid;
                v.path = checked_path_[{g, used}];
                auto via = pxn_via_.find({g, used});
                if (via != pxn_via_.end()) v.pxn_via = node(via->second).busid;
                const Gdr& gdr = gdr_[{g, used}];
                v.gdr = gdr.on;
                v.gdr_why = gdr.why;
                v.gdr_cause = gdr.cause;
                v.gdr_mode = gdr.on.value_or(false) ? gdr.mode : "";
                v.gdr_read = check_gdr(g, used, true).on;
                // An NVLink peer the driver may add could relay at a nearer distance (PXN).
                if (node(g).from_driver && !pxn_disabled_ && v.path && *v.path > Path::pxn && gdr.cause == "slot") {
                    v.gdr = std::nullopt;
                    v.gdr_read = std::nullopt;
                    v.gdr_why +=
                        "; unknown: an NVLink peer (added by the driver) could relay through a nearer NIC "
                        "(PXN)";
                }
                if (node(used).from_plugin) {
                    std::string note =
                        "the file has no <nic>/<net> for " + v.nic + ": assumed the network plugin reports it";
                    v.unknown += (v.unknown.empty() ? "" : "; ") + note;
                }
            } else {
                v.gdr = false;
                v.gdr_why = "no NIC in the file";
            }
            out.gpus.push_back(std::move(v));
        }
        for (std::size_t i = 0; i < gpus_.size(); ++i) {
            for (std::size_t j = i + 1; j < gpus_.size(); ++j) {
                GpuPairVerdict pair;
                pair.a = node(gpus_[i]).busid;
                pair.b = node(gpus_[j]).busid;
                const Path p = original_pair_[i][j].type;
                pair.pci_path = p;
                const bool driver = node(gpus_[i]).from_driver || node(gpus_[j]).from_driver;
                const std::string level = std::string(to_string(p2p_level_));
                if (!driver) {
                    pair.path = p;
                    pair.p2p = p <= p2p_level_;
                    pair.p2p_why = "path " + std::string(to_string(p)) +
                                   (*pair.p2p ? " is within " : " is farther than ") + "P2P level " + level;
                } else {
                    pair.unknown = "NVLinks between these GPUs are added by the driver: the file shows only PCI";
                    if (p <= p2p_level_) {
                        pair.p2p = true;
                        pair.p2p_why = "PCI path " + std::string(to_string(p)) + " is within P2P level " + level +
                                       " (an NVLink would only be nearer)";
                    } else if (p2p_level_ < Path::nvl) {
                        pair.p2p = false;
                        pair.p2p_why = "P2P level " + level + " refuses every path between two GPUs";
                    } else {
                        pair.p2p_why = "PCI path " + std::string(to_string(p)) + " is farther than P2P level " + level +
                                       "; unknown whether an NVLink joins them";
                    }
                }
                out.pairs.push_back(std::move(pair));
            }
        }
    }

    Graph& g_;
    const PathSettings& s_;
    Release release_;
    std::vector<int> gpus_;
    std::vector<int> nets_;
    Path gdr_level_ = Path::pxb;
    bool gdr_level_from_env_ = false;
    bool gdr_c2c_ = true;
    Path p2p_level_ = Path::pxb;
    bool pxn_disabled_ = false;
    Path pxn_type_ = Path::p2c;
    std::map<std::pair<int, int>, int> pxn_via_;
    std::map<std::pair<int, int>, Path> checked_path_;
    std::map<std::pair<int, int>, Gdr> gdr_;
    std::vector<std::vector<PathInfo>> original_pair_;
};

}  // namespace

std::string_view to_string(Path path) {
    static constexpr std::string_view names[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
                                                 "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};
    return names[static_cast<int>(path)];
}

std::optional<Path> parse_level(std::string_view text) {
    for (int i = 0; i <= static_cast<int>(Path::sys); ++i) {
        if (text == to_string(static_cast<Path>(i))) return static_cast<Path>(i);
    }
    if (!text.empty() && text[0] >= '0' && text[0] <= '9') {
        // Old numbering: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and above SYS.
        static constexpr Path old_levels[] = {Path::loc, Path::pix, Path::pxb, Path::phb, Path::sys, Path::sys};
        long level = std::strtol(std::string(text).c_str(), nullptr, 0);
        level = std::clamp(level, 0L, 5L);
        return old_levels[level];
    }
    return std::nullopt;
}

PathModel compute_paths(const TopologyTree& tree, const PathSettings& settings) {
    PathModel out;
    const TopologyFile& file = tree.file;
    if (file.outcome != TopoOutcome::accepted) {
        out.error = "NCCL does not use this file (" + std::string(to_string(file.outcome)) + "): " + file.reason;
        return out;
    }
    Graph g = graph::build_graph(tree);
    if (!g.error.empty()) {
        out.error = (g.error_line > 0 ? "line " + std::to_string(g.error_line) + ": " : std::string()) + g.error +
                    " (NCCL fails communicator init)";
        return out;
    }
    graph::compute_base_paths(g, param(settings, "NCCL_NVB_DISABLE", 0) != 0);
    out = Model(g, settings).run();
    out.notes.insert(out.notes.end(), g.notes.begin(), g.notes.end());
    return out;
}

}  // namespace launchguard::nccl
