// NCCL's path decisions on one node: ncclTopoComputePaths, ncclTopoCheckP2p,
// ncclTopoCheckGdr, ncclTopoGetLocal and ncclTopoGetLocalNet (NCCL 2.30.7,
// src/graph/paths.cc and topo.cc, with the differences of the releases back
// to 2.23 in ReleaseLogic), re-derived on the graph of nccl_topo_graph.
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

// What differs between the NCCL releases this model knows (git tags
// v2.23.4-1 to v2.30.7-1 of NVIDIA/nccl, src/graph/paths.cc and topo.cc).
struct ReleaseLogic {
    // ncclTopoCheckGdr
    bool gdr_c2c_param = true;        // NCCL_NET_GDR_C2C exists (2.26)
    long gdr_c2c_default = 1;         // 0 in 2.26, 1 from 2.27
    bool gdr_c2c_phb_as_c2c = false;  // 2.26: PHB of a C2C GPU counts as C2C
    bool gdr_c2c_p2c_as_c2c = false;  // 2.27 to 2.29.1: P2C counts as C2C
    bool default_level_p2c = true;    // 2.29.2: the default level is P2C with NET_GDR_C2C
    // ncclTopoComputePaths
    enum class P2c { none, phb_of_c2c_gpu, merged_every_net, merged_local_nets } p2c = P2c::merged_local_nets;
    bool merge_c2c_phb = true;           // addInterStep: C2C then PHB is P2C (2.27.5, mergePathType)
    bool pxn_c2c_param = true;           // NCCL_PXN_C2C exists (2.27)
    long pxn_c2c_default = 1;            // 0 in 2.27, 1 from 2.28
    Path pxn_avoids_beyond = Path::pxn;  // PXB before 2.27.5
    bool pxn_needs_peer_gdr = true;      // 2.30.3
    // ncclTopoGetLocalNet
    bool netdevs_policy = true;    // NCCL_NETDEVS_POLICY (2.28)
    bool dev_modulo_local = true;  // 2.30.7: gpu.dev % local GPUs before mirroring
    // ncclGetLocalCpu and ncclTopoSetPaths
    bool local_cpu_by_bw = true;    // 2.30.7: ncclTopoGetLocal, then fewest hops; before: fewest hops
    bool search_type_first = true;  // 2.30.7: best type, then bandwidth, then hops
};

ReleaseLogic logic_of(const Version& v) {
    ReleaseLogic r;
    r.gdr_c2c_param = v >= Version{2, 26, 0};
    r.gdr_c2c_default = v >= Version{2, 27, 0} ? 1 : 0;
    r.gdr_c2c_phb_as_c2c = v >= Version{2, 26, 0} && v < Version{2, 27, 0};
    r.gdr_c2c_p2c_as_c2c = v >= Version{2, 27, 0} && v < Version{2, 29, 2};
    r.default_level_p2c = v >= Version{2, 29, 2};
    using P2c = ReleaseLogic::P2c;
    r.p2c = v < Version{2, 27, 0}   ? P2c::none
            : v < Version{2, 27, 5} ? P2c::phb_of_c2c_gpu
            : v < Version{2, 29, 2} ? P2c::merged_every_net
                                    : P2c::merged_local_nets;
    r.merge_c2c_phb = v >= Version{2, 27, 5};
    r.pxn_c2c_param = v >= Version{2, 27, 0};
    r.pxn_c2c_default = v >= Version{2, 28, 0} ? 1 : 0;
    r.pxn_avoids_beyond = v >= Version{2, 27, 5} ? Path::pxn : Path::pxb;
    r.pxn_needs_peer_gdr = v >= Version{2, 30, 3};
    r.netdevs_policy = v >= Version{2, 28, 0};
    r.dev_modulo_local = v >= Version{2, 30, 7};
    r.local_cpu_by_bw = v >= Version{2, 30, 7};
    r.search_type_first = v >= Version{2, 30, 7};
    return r;
}

Path merge_path_type(Path a, Path b) {
    // mergePathType (paths.cc): GPU over C2C to a CPU, then PCI to a NIC, is P2C.
    Path hi = std::max(a, b), lo = std::min(a, b);
    if (hi == Path::phb && lo == Path::c2c) return Path::p2c;
    return hi;
}

class Model {
public:
    Model(Graph& g, const PathSettings& s, const Version& version)
        : g_(g), s_(s), version_(version), logic_(logic_of(version)) {
        gpus_ = g_.of_type(NodeType::gpu);
        nets_ = g_.of_type(NodeType::net);
        assign_devs();
    }

    PathModel run() {
        PathModel out;
        out.built = true;
        out.nccl_version = version_.to_string() + " (" +
                           (!s_.nccl_version            ? std::string("assumed")
                            : s_.version_source.empty() ? std::string("from the image")
                                                        : s_.version_source) +
                           ")";
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
        gdr_c2c_ = logic_.gdr_c2c_param && param(s_, "NCCL_NET_GDR_C2C", logic_.gdr_c2c_default) != 0;
        gdr_level_ = (logic_.default_level_p2c && gdr_c2c_) ? Path::p2c : Path::pxb;
        out.gdr_level_source = "NCCL default for " + out.nccl_version;
        if (auto v = env_value(s_, "NCCL_NET_GDR_LEVEL")) {
            if (auto level = parse_level(*v, version_)) {
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
            if (auto level = parse_level(*v, version_)) {
                p2p_level_ = *level;
                out.p2p_level_source = "NCCL_P2P_LEVEL=" + *v;
            }
        }
        out.p2p_level = p2p_level_;
        pxn_disabled_ = param(s_, "NCCL_PXN_DISABLE", 0) == 1;
        out.pxn_disabled = pxn_disabled_;
        pxn_type_ =
            (logic_.pxn_c2c_param && param(s_, "NCCL_PXN_C2C", logic_.pxn_c2c_default) != 0) ? Path::p2c : Path::pxb;
    }

    // ncclGetLocalCpu: from 2.30.7 the local CPUs of ncclTopoGetLocal, the
    // first with the fewest hops among them; before, the first CPU with the
    // fewest hops.
    int local_cpu(int gpu) {
        const std::vector<int> cpus =
            logic_.local_cpu_by_bw ? local(gpu, g_.of_type(NodeType::cpu)) : g_.of_type(NodeType::cpu);
        int best = -1;
        for (int c : cpus) {
            const int hops = path(gpu, c).count;
            if (hops > 0 && (best < 0 || hops < path(gpu, best).count)) best = c;
        }
        return best;
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
        auto policy = logic_.netdevs_policy ? env_value(s_, "NCCL_NETDEVS_POLICY") : std::nullopt;
        if (policy) {
            std::string p = *policy;
            std::transform(p.begin(), p.end(), p.begin(), [](unsigned char c) { return std::toupper(c); });
            if (p == "ALL") per_gpu = count;
            if (p.rfind("MAX:", 0) == 0 && std::atoi(p.c_str() + 4) > 0)
                per_gpu = std::min(std::atoi(p.c_str() + 4), count);
        }
        int n = logic_.dev_modulo_local ? node(gpu).dev % local_gpus : node(gpu).dev;
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
        // Before 2.27.5 (no mergePathType) the worse of the two types.
        p.type = pxn ? Path::pxn : logic_.merge_c2c_phb ? merge_path_type(a.type, b.type) : std::max(a.type, b.type);
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
            if (gdr_read == 0)
                return refused("NCCL_NET_GDR_READ=0 disables GPUDirect RDMA for sends", "setting NCCL_NET_GDR_READ");
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
        if (logic_.gdr_c2c_phb_as_c2c && gdr_c2c_ && distance == Path::phb && c2c_gpu) distance = Path::c2c;
        if (logic_.gdr_c2c_p2c_as_c2c && gdr_c2c_ && distance == Path::p2c) distance = Path::c2c;
        const std::string level = std::string(to_string(gdr_level_)) + (gdr_level_from_env_ ? "" : " (default)");
        if (distance > gdr_level_) {
            r.on = false;
            r.why = "path " + std::string(to_string(distance)) + " is farther than NCCL_NET_GDR_LEVEL " + level;
            r.cause = "slot";  // or a setting: compute_paths tries the model without it
            return r;
        }
        // Through PCI on a C2C GPU the mapping is forced to PCIe: any distance
        // but P2C (C2C before 2.29.2, where P2C was counted as C2C).
        const Path direct = logic_.default_level_p2c ? Path::p2c : Path::c2c;
        r.mode = (c2c_gpu && distance != direct) ? "pci" : "default";
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

    // ncclTopoComputePaths, the C2C + PHB step: a GPU joined to its CPU over
    // C2C reaches a NIC under that CPU at P2C. 2.27.3 marks every NIC at PHB;
    // 2.27.5 every NIC whose merged type is P2C; from 2.29.2 only the GPU's
    // local NICs (ncclTopoGetLocal), so a nearer NIC elsewhere keeps PXN.
    void mark_p2c() {
        using P2c = ReleaseLogic::P2c;
        if (logic_.p2c == P2c::none) return;
        for (int g : gpus_) {
            const int c = local_cpu(g);
            if (c < 0) continue;
            const bool c2c_gpu = path(g, c).type == Path::c2c;
            for (int n : logic_.p2c == P2c::merged_local_nets ? local(g, nets_) : nets_) {
                const bool p2c = logic_.p2c == P2c::phb_of_c2c_gpu
                                     ? c2c_gpu && path(g, n).type == Path::phb
                                     : merge_path_type(path(g, c).type, path(n, c).type) == Path::p2c;
                if (!p2c) continue;
                path(g, n).type = std::min(Path::p2c, path(g, n).type);
                path(n, g).type = std::min(Path::p2c, path(n, g).type);
            }
        }
    }

    // ncclTopoCheckNet: the network is used between two GPUs of the node when
    // both reach a NIC at PXB or better faster than their path to each other.
    bool network_faster(int a, int b) {
        if (param(s_, "NCCL_NET_DISABLE_INTRA", 0) == 1) return false;
        const double between = path(a, b).bw;
        auto best_net = [this](int gpu) {
            double bw = 0;
            for (int n : nets_) {
                if (path(gpu, n).type <= Path::pxb) bw = std::max(bw, path(gpu, n).bw);
            }
            return bw;
        };
        return best_net(a) > between && best_net(b) > between;
    }

    // ncclTopoComputePaths, the transport step for receiver g (p2pCanConnect,
    // shmCanConnect): P2P needs the P2P level and, unless it goes through an
    // intermediate GPU (NVB), no faster network; SHM needs NCCL_SHM_DISABLE
    // unset and no faster network. With neither, NCCL marks the path NET.
    void choose_transports(int g) {
        const bool shm_disabled = param(s_, "NCCL_SHM_DISABLE", 0) == 1;
        for (int p : gpus_) {
            if (p == g) continue;
            const Path checked = original_of(p, g).type;
            const bool use_net = network_faster(p, g);
            const bool p2p = checked <= p2p_level_ && (checked == Path::nvb || !use_net);
            const bool shm = !shm_disabled && !use_net;
            transport_[{p, g}] = p2p ? "P2P" : shm ? "SHM" : "NET";
            if (!p2p && !shm) path(p, g).type = Path::net;
        }
    }

    const PathInfo& original_of(int a, int b) const {
        const auto ia = static_cast<std::size_t>(std::find(gpus_.begin(), gpus_.end(), a) - gpus_.begin());
        const auto ib = static_cast<std::size_t>(std::find(gpus_.begin(), gpus_.end(), b) - gpus_.begin());
        return original_pair_[ia][ib];
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
            choose_transports(g);
        }
        mark_p2c();
        for (int n : nets_) {
            for (int g : gpus_) {
                if (!pxn_disabled_) {
                    int peer = local_gpu_of(n);
                    if (peer != g && peer != -1) {
                        // From 2.30.3 the relay must itself use GDR (sends) to the NIC.
                        const bool peer_gdr = !logic_.pxn_needs_peer_gdr || check_gdr(peer, n, true).on.value_or(true);
                        if (path(peer, n).type <= pxn_type_ && peer_gdr && path(peer, g).type <= Path::nvl &&
                            (path(peer, n).bw > path(g, n).bw || path(g, n).type > logic_.pxn_avoids_beyond)) {
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
        if (std::any_of(transport_.begin(), transport_.end(), [](const auto& t) { return t.second == "NET"; })) {
            out.notes.push_back(
                "some GPU pairs of this node talk through the network (ncclTopoCheckNet); NCCL then keeps in each "
                "rank's view only the GPUs it reaches without it (ncclTopoTrimSystem), which this model does not "
                "do");
        }
    }

    void report(PathModel& out) {
        for (std::size_t i = 0; i < gpus_.size(); ++i) {
            const int g = gpus_[i];
            GpuPathVerdict v;
            v.busid = node(g).busid;
            v.line = node(g).line;
            v.dev = node(g).dev;
            // A NIC with several ports (several <net>) is one bus id: named once.
            for (int n : local(g, nets_)) {
                if (std::find(v.nics.begin(), v.nics.end(), node(n).busid) == v.nics.end())
                    v.nics.push_back(node(n).busid);
            }
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
                v.nccl_path = path(g, used).type;
                auto via = pxn_via_.find({g, used});
                if (via != pxn_via_.end()) v.pxn_via = node(via->second).busid;
                const Gdr& gdr = gdr_[{g, used}];
                v.gdr = gdr.on;
                v.gdr_why = gdr.why;
                v.gdr_cause = gdr.cause;
                v.gdr_mode = gdr.on.value_or(false) ? gdr.mode : "";
                v.gdr_read = check_gdr(g, used, true).on;
                // An NVLink peer the driver may add could relay at a nearer distance (PXN).
                // The nearest a relay can be is PIX, so a level below PIX rules it out.
                if (node(g).from_driver && !pxn_disabled_ && v.path && *v.path > Path::pxn && gdr.cause == "slot" &&
                    gdr_level_ >= Path::pix) {
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
                    pair.nccl_path = path(gpus_[i], gpus_[j]).type;
                    pair.transport = transport_[{gpus_[i], gpus_[j]}];
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
    Version version_;
    ReleaseLogic logic_;
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
    std::map<std::pair<int, int>, std::string> transport_;  // (sender, receiver)
    std::vector<std::vector<PathInfo>> original_pair_;
};

}  // namespace

std::string_view to_string(Path path) {
    static constexpr std::string_view names[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
                                                 "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};
    return names[static_cast<int>(path)];
}

std::optional<Path> parse_level(std::string_view text, const Version& version) {
    for (int i = 0; i <= static_cast<int>(Path::sys); ++i) {
        const auto p = static_cast<Path>(i);
        // The names a release knows: C2C from 2.26, P2C from 2.27.
        if ((p == Path::c2c && version < Version{2, 26, 0}) || (p == Path::p2c && version < Version{2, 27, 0}))
            continue;
        if (text == to_string(p)) return p;
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

std::string unmodelled_nccl_version(const Version& version) {
    if (version.major == kModelNcclVersion.major && version >= kOldestModelledNcclVersion) return "";
    return "NCCL " + version.to_string() + " is outside the releases this model follows (" +
           kOldestModelledNcclVersion.to_string() + " to " + std::to_string(kModelNcclVersion.major) + ".x)";
}

namespace {

PathModel compute_once(const TopologyTree& tree, const PathSettings& settings) {
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
    // A release outside the modelled range gets the nearest modelled logic, said in a note.
    Version version = settings.nccl_version.value_or(kModelNcclVersion);
    std::string unmodelled = unmodelled_nccl_version(version);
    if (!unmodelled.empty())
        version = version < kOldestModelledNcclVersion ? kOldestModelledNcclVersion : kModelNcclVersion;
    graph::compute_base_paths(g, param(settings, "NCCL_NVB_DISABLE", 0) != 0, !logic_of(version).search_type_first);
    out = Model(g, settings, version).run();
    if (!unmodelled.empty()) out.notes.push_back(unmodelled + ": the logic of " + version.to_string() + " was applied");
    if (version < Version{2, 26, 0} && std::any_of(g.nodes.begin(), g.nodes.end(), [](const graph::Node& n) {
            return std::any_of(n.links.begin(), n.links.end(),
                               [](const graph::Link& l) { return l.type == graph::LinkType::c2c; });
        })) {
        out.notes.push_back("NCCL before 2.26 has no C2C links: this file's <c2c> is modelled as 2.26 reads it");
    }
    out.notes.insert(out.notes.end(), g.notes.begin(), g.notes.end());
    return out;
}

}  // namespace

PathModel compute_paths(const TopologyTree& tree, const PathSettings& settings) {
    PathModel out = compute_once(tree, settings);
    // A GPU the distance refuses GDR is blamed on a setting only when the
    // model without that setting gives it GDR (directly or through PXN);
    // otherwise on its slot.
    for (const char* name : {"NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_C2C"}) {
        const bool blamed_on_slot = std::any_of(out.gpus.begin(), out.gpus.end(), [](const GpuPathVerdict& g) {
            return g.gdr == std::optional<bool>(false) && g.gdr_cause == "slot";
        });
        if (!blamed_on_slot || !settings.env.contains(name)) continue;
        PathSettings without = settings;
        without.env.erase(name);
        const PathModel other = compute_once(tree, without);
        for (std::size_t i = 0; i < out.gpus.size() && i < other.gpus.size(); ++i) {
            GpuPathVerdict& g = out.gpus[i];
            if (g.gdr == std::optional<bool>(false) && g.gdr_cause == "slot" && other.gpus[i].gdr == true)
                g.gdr_cause = std::string("setting ") + name;
        }
    }
    return out;
}

}  // namespace launchguard::nccl
