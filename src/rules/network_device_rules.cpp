// net.verbs-missing, net.imex-channel-missing: what the container must hold
// for NCCL to open the fabric (rdma-core's library and providers, the
// uverbs and IMEX channel devices). The rest of net.* is in
// rules/network_rules.cpp.
#include <algorithm>
#include <array>
#include <cctype>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "context/memo_file_view.h"
#include "nccl/device_filter.h"
#include "nccl/library_search.h"
#include "rules/network_ports.h"
#include "rules/rule_helpers.h"
#include "rules/table_rule.h"
#include "util/text.h"

namespace launchguard {
namespace {

using net_rules::add_rdma_evidence;
using net_rules::is_active;
using net_rules::multi_node_job;
using net_rules::node_has_rdma;
using net_rules::rdma_description;
using rules::all_hold;
using rules::Condition;
using rules::effective_int;
using rules::join;

// ---------------------------------------------------------------------------
// net.verbs-missing

// The rdma-core provider (lib<name>-rdmav<N>.so in a libibverbs/ directory)
// that drives each kernel RDMA driver.
std::string verbs_provider(std::string_view driver, std::string_view hca) {
    struct Pair {
        std::string_view driver;
        std::string_view provider;
    };
    static constexpr std::array kProviders = std::to_array<Pair>({
        {"mlx5_core", "mlx5"},
        {"mlx4_core", "mlx4"},
        {"bnxt_en", "bnxt_re"},
        {"irdma", "irdma"},
        {"ice", "irdma"},
        {"i40e", "irdma"},
        {"efa", "efa"},
        {"qede", "qedr"},
        {"hfi1", "hfi1verbs"},
        {"mana", "mana"},
        {"erdma", "erdma"},
        {"vmw_pvrdma", "vmw_pvrdma"},
    });
    for (const auto& pair : kProviders) {
        if (driver == pair.driver) return std::string(pair.provider);
    }
    // Without a driver link the device name's prefix is the kernel driver's ("mlx5_0").
    for (const auto& pair : kProviders) {
        if (hca.starts_with(pair.provider)) return std::string(pair.provider);
    }
    return {};
}

struct VerbsProblems {
    std::vector<std::string> missing;    // what the container lacks, in words
    std::vector<std::string> undecided;  // paths the view cannot answer for
    std::vector<std::string> fixes;
    std::string library;  // the libibverbs found
};

// The HCAs NCCL would open: those NCCL_IB_HCA selects, else those with an ACTIVE port.
std::vector<const Nic*> used_hcas(const RuleInput& in) {
    std::vector<const Nic*> nics;
    if (!in.ctx.topology) return nics;
    const nccl::Setting* hca = in.nccl.get("NCCL_IB_HCA");
    std::optional<nccl::DeviceFilter> filter;
    if (hca != nullptr) filter = nccl::parse_hca_filter(hca->value);
    for (const auto& nic : in.ctx.topology->nics) {
        if (nic.hca.empty() || !std::any_of(nic.ports.begin(), nic.ports.end(), is_active)) continue;
        if (filter && !nccl::matches(*filter, nic.hca)) continue;
        nics.push_back(&nic);
    }
    return nics;
}

void check_verbs_library(const RuleInput& in, const nccl::LoaderDirs& dirs, VerbsProblems& problems) {
    // buildIbvSymbols (src/misc/ibvsymbols.cc) dlopens NCCL_IBVERBS_LIB when
    // set (recent NCCL), then libibverbs.so, then libibverbs.so.1.
    std::vector<std::string> names;
    if (const nccl::Setting* lib = in.nccl.get("NCCL_IBVERBS_LIB")) names.push_back(lib->value);
    names.emplace_back("libibverbs.so");
    names.emplace_back("libibverbs.so.1");
    for (const auto& name : names) {
        if (name.find('/') != std::string::npos) {
            FileInfo info = in.files->stat(name);
            if (info.kind == FileKind::regular) {
                problems.library = name;
                return;
            }
            if (info.kind == FileKind::unknown) problems.undecided.push_back(name);
            continue;
        }
        nccl::LibraryFound found = nccl::find_in_dirs(*in.files, dirs, name);
        if (!found.path.empty()) {
            problems.library = found.path;
            return;
        }
        problems.undecided.insert(problems.undecided.end(), found.undecided.begin(), found.undecided.end());
    }
    if (!problems.undecided.empty()) return;
    problems.missing.push_back("no libibverbs.so.1 on the library path");
    problems.fixes.emplace_back(
        "use an image with rdma-core's verbs library and providers (Debian/Ubuntu: libibverbs1 and "
        "ibverbs-providers; RHEL: libibverbs), or mount the host's MOFED/DOCA libraries into the container");
}

void check_verbs_providers(const RuleInput& in, const nccl::LoaderDirs& dirs, const std::vector<const Nic*>& hcas,
                           VerbsProblems& problems) {
    // rdma-core loads providers from <libdir>/libibverbs/lib<name>-rdmav<ABI>.so.
    std::vector<std::string> provider_dirs;
    if (!problems.library.empty())
        provider_dirs.push_back(problems.library.substr(0, problems.library.rfind('/')) + "/libibverbs");
    for (const auto& dir : dirs.dirs) provider_dirs.push_back(dir + "/libibverbs");
    std::set<std::string> providers;
    for (const Nic* nic : hcas) {
        std::string provider = verbs_provider(nic->driver, nic->hca);
        if (!provider.empty()) providers.insert(provider);
    }
    std::set<std::string> seen;
    for (const auto& provider : providers) {
        std::string prefix = "lib" + provider + "-rdmav";
        bool found = false;
        // Past a bound of the check the rest was not looked at: the provider
        // may be there, so it is undecided, not missing.
        std::string not_looked_at = dirs.not_searched;
        for (const auto& dir : provider_dirs) {
            if (!seen.insert(dir + "|" + provider).second) continue;
            for (const auto& name : in.files->list(dir)) {
                if (name.starts_with(prefix) && name.ends_with(".so")) found = true;
            }
            if (found) break;
            // A listing past the check's bound is not "empty" (context/memo_file_view.h).
            if (listing_refused(*in.files, dir)) {
                not_looked_at = dir + " (" + in.files->stat(dir).detail + ")";
                break;
            }
        }
        if (found) continue;
        if (!not_looked_at.empty()) {
            problems.undecided.push_back(std::move(not_looked_at));
            continue;
        }
        problems.missing.push_back("no " + prefix + "*.so verbs provider for the node's HCAs");
        problems.fixes.emplace_back(
            "install rdma-core's providers in the image (ibverbs-providers, or the "
            "MOFED/DOCA libibverbs and lib" +
            provider + " packages)");
    }
}

void check_uverbs_devices(const RuleInput& in, const std::vector<const Nic*>& hcas, VerbsProblems& problems) {
    std::vector<std::string> absent;
    bool any_named = false;
    for (const Nic* nic : hcas) {
        for (const auto& uverbs : nic->uverbs) {
            any_named = true;
            std::string path = "/dev/infiniband/" + uverbs;
            FileInfo info = in.files->stat(path);
            if (info.kind == FileKind::missing || info.kind == FileKind::dangling_symlink) {
                absent.push_back(path + " (" + nic->hca + ")");
            } else if (info.kind == FileKind::unknown) {
                problems.undecided.push_back(path);
            }
        }
    }
    if (!any_named) {
        // sysfs did not name the devices: any uverbs device will do for the question.
        FileInfo dir = in.files->stat("/dev/infiniband");
        if (dir.kind == FileKind::unknown) {
            problems.undecided.emplace_back("/dev/infiniband");
            return;
        }
        auto names = in.files->list("/dev/infiniband");
        if (listing_refused(*in.files, "/dev/infiniband")) {
            problems.undecided.push_back("/dev/infiniband/uverbs* (" + in.files->stat("/dev/infiniband").detail + ")");
            return;
        }
        if (std::none_of(names.begin(), names.end(), [](const std::string& n) { return n.starts_with("uverbs"); }))
            absent.emplace_back("/dev/infiniband/uverbs*");
    }
    if (absent.empty()) return;
    problems.missing.push_back("no " + join(absent));
    problems.fixes.emplace_back(
        "pass the RDMA devices into the container: docker/podman --device=/dev/infiniband; enroot/pyxis: mount "
        "/dev/infiniband (enroot's default hooks do when the host has it); Kubernetes: request the RDMA device "
        "plugin's resource (e.g. rdma/ib) for the pod");
}

void check_verbs_missing(const RuleInput& in, RuleOutput& out) {
    if (const nccl::Setting* disable = in.nccl.get("NCCL_IB_DISABLE")) {
        if (auto value = effective_int(*disable); value && *value != 0) return;  // net.ib-disabled
    }
    if (const nccl::Setting* net = in.nccl.get("NCCL_NET")) {
        // Another transport chosen on purpose (a net plugin, sockets); NCCL compares names case-insensitively.
        std::string upper = net->value;
        std::transform(upper.begin(), upper.end(), upper.begin(),
                       [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
        if (upper != "IB") return;
    }
    Condition rdma = node_has_rdma(in);
    Condition multi_node = multi_node_job(in.ctx);
    if (rdma.fails() || multi_node.fails()) return;
    Condition view =
        in.files != nullptr ? Condition::known(true) : Condition::unknown("the task's file view is unknown");
    if (!all_hold(out, "whether the container can open the node's RDMA devices", {rdma, multi_node, view})) return;

    const nccl::LoaderDirs dirs = nccl::loader_dirs(rules::task_env(in), in.files, rules::node_arch(in));
    std::vector<const Nic*> hcas = used_hcas(in);
    VerbsProblems problems;
    check_verbs_library(in, dirs, problems);
    if (!problems.library.empty()) check_verbs_providers(in, dirs, hcas, problems);
    check_uverbs_devices(in, hcas, problems);
    if (problems.missing.empty()) {
        if (!problems.undecided.empty()) {
            out.unknown("cannot tell whether the container can open the node's RDMA devices because " +
                        in.files->describe() + " cannot say whether " + join(problems.undecided) + " exists");
        }
        return;
    }
    Finding& finding = out.fire("this " + std::to_string(*in.ctx.job.nodes) + "-node job runs on " +
                                rdma_description(in) + ", but the container has " + join(problems.missing, "; ") +
                                ": NCCL's IB transport cannot open a device and NCCL falls back to TCP sockets");
    finding.evidence.emplace_back("missing", join(problems.missing, "; "));
    if (!problems.library.empty()) finding.evidence.emplace_back("libibverbs", problems.library);
    std::vector<std::string> hca_names;
    for (const Nic* nic : hcas) {
        hca_names.push_back(nic->hca + (nic->driver.empty() ? "" : " (" + nic->driver + ")") +
                            (nic->uverbs.empty() ? "" : " " + join(nic->uverbs, "/")));
    }
    if (!hca_names.empty()) finding.evidence.emplace_back("hcas", join(hca_names));
    finding.evidence.emplace_back("job_nodes", std::to_string(*in.ctx.job.nodes));
    add_rdma_evidence(finding, in);
    finding.evidence.emplace_back("searched", join(dirs.dirs, ":"));
    finding.evidence.emplace_back("container_view", in.files->describe());
    rules::add_container_evidence(finding, in.ctx);
    for (auto& fix : problems.fixes) finding.remediation.push_back(RemediationOp::manual_step(std::move(fix)));
}

const TableRule kVerbsMissing{
    RuleInfo{
        .id = "net.verbs-missing",
        .title = "Container cannot open the node's RDMA devices",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeLive | kScopeCli,
        .checks = "A multi-node job on a node with ACTIVE IB/RoCE ports (or a profile that declares RDMA NICs), "
                  "unless `NCCL_IB_DISABLE` is set or `NCCL_NET` names another transport. In the container's view: "
                  "`libibverbs.so` or `libibverbs.so.1` (or `NCCL_IBVERBS_LIB`) along the loader's path; the "
                  "rdma-core provider for the kernel driver of each HCA NCCL will use (`mlx5_core` → "
                  "`libibverbs/libmlx5-rdmav*.so`); and the `/dev/infiniband/uverbsN` device of each of those "
                  "HCAs, as sysfs names them (`/sys/class/infiniband/<hca>/device/infiniband_verbs`).",
        .why = "NCCL loads libibverbs with dlopen (buildIbvSymbols, src/misc/ibvsymbols.cc) and opens each HCA "
               "through its uverbs device. An image without rdma-core, without the provider for the HCA, or a "
               "runtime that did not pass /dev/infiniband gives NCCL no IB device; it logs \"NET/IB : No device "
               "found\" at INFO and runs over TCP sockets, at a fraction of the fabric's bandwidth.",
        .evidence = "What is missing, the libibverbs found, the HCAs with their drivers and uverbs devices, the "
                    "directories searched and the container view.",
        .fix = "Use an image with rdma-core's libibverbs and providers (or mount the host's MOFED/DOCA libraries), "
               "and pass `/dev/infiniband` into the container (`--device=/dev/infiniband`, enroot's device mount, "
               "the RDMA device plugin's resource in Kubernetes).",
    },
    check_verbs_missing};

// ---------------------------------------------------------------------------
// net.imex-channel-missing

// ncclMnnvlCheck (src/mnnvl.cc) allocates FABRIC-handle memory, which needs an
// IMEX channel device. Multi-node NVLink arrived in NCCL 2.20.3; up to 2.26 a
// failed allocation silently left MNNVL off, from 2.27.3 it fails init.
constexpr nccl::Version kMnnvlFirst{2, 20, 3};
constexpr nccl::Version kMnnvlFatal{2, 27, 3};

void check_imex_channel_missing(const RuleInput& in, RuleOutput& out) {
    if (!in.profile.node.mnnvl) return;
    // init.cc: MNNVL is checked when nNodes > 1 and NCCL_MNNVL_ENABLE != 0, or when it is 1.
    std::optional<long long> enable;
    if (const nccl::Setting* setting = in.nccl.get("NCCL_MNNVL_ENABLE")) enable = effective_int(*setting);
    if (enable && *enable == 0) return;
    Condition multi_node = enable && *enable == 1 ? Condition::known(true) : multi_node_job(in.ctx);
    Condition view =
        in.files != nullptr ? Condition::known(true) : Condition::unknown("the task's file view is unknown");
    if (!all_hold(out, "whether NCCL can use multi-node NVLink", {multi_node, view})) return;

    constexpr std::string_view kDir = "/dev/nvidia-caps-imex-channels";
    FileInfo dir = in.files->stat(kDir);
    if (dir.kind == FileKind::unknown) {
        out.unknown("cannot tell whether the container has an IMEX channel because " + in.files->describe() +
                    " cannot say whether " + std::string(kDir) + " exists");
        return;
    }
    std::vector<std::string> channels;
    for (const auto& name : in.files->list(kDir)) {
        if (name.starts_with("channel")) channels.push_back(name);
    }
    if (!channels.empty()) return;
    if (listing_refused(*in.files, kDir)) {
        out.unknown("cannot tell whether the container has an IMEX channel because " + in.files->stat(kDir).detail);
        return;
    }

    std::string where;
    auto version = rules::image_nccl_version(in, where);
    if (version && *version < kMnnvlFirst) {
        out.unknown("does not apply: NCCL " + version->to_string() + " in the image (" + where +
                    ") predates multi-node NVLink (2.20.3) and never uses IMEX channels");
        return;
    }
    std::string consequence;
    if (!version) {
        consequence =
            "NCCL 2.27.3 and later fail communicator init (\"MNNVL ... is available but not working on this "
            "system. Check the IMEX channel configuration\"); earlier versions silently use the network "
            "instead of NVLink across nodes";
    } else if (*version >= kMnnvlFatal) {
        consequence = "NCCL " + version->to_string() +
                      " fails communicator init (\"MNNVL ... is available but not working on this system. Check the "
                      "IMEX channel configuration\")";
    } else {
        consequence = "NCCL " + version->to_string() +
                      " silently skips multi-node NVLink and sends inter-node traffic over the network";
    }
    Finding& finding = out.fire("profile " + in.profile.name +
                                " is a multi-node NVLink class, but the container has "
                                "no IMEX channel (" +
                                std::string(kDir) + "/channelN): " + consequence);
    finding.evidence.emplace_back("imex_channels", std::string(kDir) + " " + std::string(to_string(dir.kind)));
    finding.evidence.emplace_back("nccl_version",
                                  version ? version->to_string() + " (" + where + ")" : "unknown: " + where);
    if (in.ctx.job.nodes) finding.evidence.emplace_back("job_nodes", std::to_string(*in.ctx.job.nodes));
    rules::add_container_evidence(finding, in.ctx);
    finding.remediation.push_back(RemediationOp::manual_step(
        "run nvidia-imex on the nodes and give the container a channel: NVIDIA_IMEX_CHANNELS=0 with the NVIDIA "
        "container toolkit, or a bind of /dev/nvidia-caps-imex-channels/channel0; in Kubernetes, a ComputeDomain "
        "of the NVIDIA DRA driver"));
}

const TableRule kImexChannelMissing{
    RuleInfo{
        .id = "net.imex-channel-missing",
        .title = "No IMEX channel in a multi-node NVLink container",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeLive | kScopeCli,
        .checks = "On a profile with `node.mnnvl: true` (GB200/GB300 NVL72), a job NCCL checks multi-node NVLink "
                  "for (more than one node and `NCCL_MNNVL_ENABLE` not 0, or `NCCL_MNNVL_ENABLE=1`) whose container "
                  "shows no `/dev/nvidia-caps-imex-channels/channelN`. The NCCL in the image decides the message: "
                  "before 2.20.3 the rule does not apply and says so.",
        .why = "NCCL shares memory across the NVLink domain through FABRIC handles, which need an IMEX channel "
               "(ncclMnnvlCheck, src/mnnvl.cc). Without one, NCCL 2.20-2.26 silently left multi-node NVLink off and "
               "used the network — a fraction of NVLink's bandwidth — and NCCL 2.27.3 and later fail init.",
        .evidence = "The IMEX channel directory as the container sees it, the NCCL version in the image and where it "
                    "was read, the job's node count.",
        .fix = "Run nvidia-imex on the nodes and give the container a channel (`NVIDIA_IMEX_CHANNELS=0` with the "
               "NVIDIA container toolkit, a bind of `/dev/nvidia-caps-imex-channels/channel0`, or a ComputeDomain "
               "of the NVIDIA DRA driver in Kubernetes); `NCCL_MNNVL_ENABLE=0` only where NVLink across nodes is "
               "not wanted.",
    },
    check_imex_channel_missing};
}  // namespace

void net_rules::register_network_device_rules(std::vector<const Rule*>& rules) {
    rules.push_back(&kVerbsMissing);
    rules.push_back(&kImexChannelMissing);
}

}  // namespace launchguard
