// net.ib-port-degraded, net.gdr-level-low, net.gdr-read-off, net.gdr-unavailable:
// the links a job's data crosses between the GPU and the fabric (the port's
// speed, the GPU-NIC path GPUDirect RDMA may take). The rest of net.* is in
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

#include "nccl/device_filter.h"
#include "nccl/library_search.h"
#include "rules/network_ports.h"
#include "rules/rule_helpers.h"
#include "rules/table_rule.h"
#include "util/text.h"

namespace launchguard {
namespace {

using net_rules::is_active;
using net_rules::port_name;
using rules::add_setting_evidence;
using rules::effective_int;
using rules::format_number;
using rules::join;
using rules::restore_default;
using rules::setting_or_unknown;

// The files NCCL's ncclIbGdrSupport takes as "peer memory is there" (src/transport/net_ib/gdr.cc).
constexpr std::array kPeerMemoryFiles = std::to_array<std::string_view>({
    "/sys/kernel/mm/memory_peers/nv_mem/version",
    "/sys/kernel/mm/memory_peers/nv_mem_nc/version",
    "/sys/module/nvidia_peermem/version",
});

// ---------------------------------------------------------------------------
// net.ib-port-degraded

struct PortSelection {
    std::string described;  // "NCCL_IB_HCA=mlx5_0 (environment)", "profile node.hcas", "all HCAs"
    std::optional<nccl::DeviceFilter> filter;
    std::vector<std::string> profile_hcas;

    // port -1: any port of the HCA.
    [[nodiscard]] bool selects(const Nic& nic, int port = -1) const {
        if (filter) return nccl::matches(*filter, nic.hca, port);
        if (!profile_hcas.empty())
            return std::find(profile_hcas.begin(), profile_hcas.end(), nic.hca) != profile_hcas.end();
        return true;
    }
};

PortSelection ports_the_job_uses(const RuleInput& in) {
    PortSelection selection;
    if (const nccl::Setting* hca = in.nccl.get("NCCL_IB_HCA")) {
        selection.filter = nccl::parse_hca_filter(hca->value);
        selection.described = "NCCL_IB_HCA=" + hca->value + " (" + hca->origin + ")";
    } else if (!in.profile.node.hcas.empty()) {
        selection.profile_hcas = in.profile.node.hcas;
        selection.described = "profile '" + in.profile.name + "' node.hcas";
    } else {
        selection.described = "all HCAs (NCCL_IB_HCA unset)";
    }
    return selection;
}

void check_ib_port_degraded(const RuleInput& in, RuleOutput& out) {
    if (!in.ctx.topology) {
        out.unknown("cannot tell whether the node's IB ports are healthy because " + in.ctx.topology.reason());
        return;
    }
    const NodeTopology& topo = *in.ctx.topology;
    const std::optional<double> expected = in.profile.node.ib_rate_gbps;
    PortSelection selection = ports_the_job_uses(in);
    std::vector<std::string> unknown_state;
    std::vector<std::string> unknown_rate;
    for (const auto& nic : topo.nics) {
        if (nic.hca.empty()) continue;
        if (nic.ports.empty() && selection.selects(nic)) unknown_state.push_back(nic.hca);
        for (const auto& port : nic.ports) {
            if (!selection.selects(nic, port.number)) continue;
            std::vector<std::string> problems;
            if (port.state.empty()) {
                unknown_state.push_back(port_name(nic, port));
            } else if (!is_active(port)) {
                problems.push_back("is " + port.state);
            }
            if (!port.phys_state.empty() && port.phys_state != "LinkUp") {
                problems.push_back("physical state " + port.phys_state);
            }
            if (expected && port.rate_gbps && *port.rate_gbps < *expected) {
                problems.push_back("runs at " + format_number(*port.rate_gbps) + " Gb/s, below the profile's " +
                                   format_number(*expected) + " Gb/s");
            } else if (expected && !port.rate_gbps && is_active(port)) {
                unknown_rate.push_back(port_name(nic, port));
            }
            if (problems.empty()) continue;

            std::string consequence = is_active(port) ? "every transfer through it is capped"
                                                      : "NCCL skips it and the job runs on fewer rails";
            Finding& finding = out.fire(nic.hca + " port " + std::to_string(port.number) + " " + join(problems) + ": " +
                                        consequence + " (selected by " + selection.described + ")");
            finding.evidence.emplace_back("hca", nic.hca);
            finding.evidence.emplace_back("port", std::to_string(port.number));
            finding.evidence.emplace_back("state", port.state.empty() ? "unknown" : port.state);
            finding.evidence.emplace_back("phys_state", port.phys_state.empty() ? "unknown" : port.phys_state);
            finding.evidence.emplace_back("rate_gbps", port.rate_gbps ? format_number(*port.rate_gbps) : "unknown");
            if (expected) finding.evidence.emplace_back("expected_rate_gbps", format_number(*expected));
            if (!port.link_layer.empty()) finding.evidence.emplace_back("link_layer", port.link_layer);
            finding.evidence.emplace_back("selected_by", selection.described);
            finding.evidence.emplace_back("topology", topo.source);
            finding.remediation.push_back(RemediationOp::manual_step(
                "drain the node and check " + nic.hca + " port " + std::to_string(port.number) +
                " (cable, transceiver, switch port; `ibstat " + nic.hca + " " + std::to_string(port.number) + "`)"));
        }
    }
    if (!unknown_state.empty()) {
        out.unknown("cannot tell whether " + join(unknown_state) + " are ACTIVE because " + topo.source +
                    " does not give their port state");
    }
    if (!unknown_rate.empty()) {
        out.unknown("cannot tell whether " + join(unknown_rate) + " run at the profile's " + format_number(*expected) +
                    " Gb/s because " + topo.source + " does not give port rates (sysfs does)");
    }
}

const TableRule kIbPortDegraded{
    RuleInfo{
        .id = "net.ib-port-degraded",
        .title = "IB/RoCE port down or slow",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeNode | kScopeLive | kScopeCli,
        .checks = "Every port of the HCAs the job will use — those `NCCL_IB_HCA` selects, else the profile's "
                  "`node.hcas`, else all — must be ACTIVE, in physical state LinkUp (when sysfs says), and at least "
                  "as fast as the profile's `node.ib_rate_gbps`.",
        .why = "NCCL silently skips ports that are not ACTIVE, so a node with a dead cable runs on fewer rails, and a "
               "port that trained at a lower rate (e.g. 200 instead of 400 Gb/s) caps every ring through it. One such "
               "node slows the whole job; nothing in NCCL's default output says so.",
        .evidence = "For each bad port: HCA, port, state, physical state, rate and the profile's rate, link layer, "
                    "what selected the HCA, and the topology source.",
        .fix = "Drain the node and repair the link (cable, transceiver, switch port; check with `ibstat`). In "
               "prolog context this is a node finding: the scheduler should not place jobs on it.",
    },
    check_ib_port_degraded};

// ---------------------------------------------------------------------------
// net.gdr-level-low, net.gdr-read-off

// ncclTopoCheckGdr (graph/paths.cc): without NCCL_NET_GDR_LEVEL the limit is
// P2C when NCCL_NET_GDR_C2C is on (its default since 2.27), else PXB. On x86
// no GPU-NIC path is P2C, so PXB and P2C allow the same pairs there; on Grace
// a NIC reached through the CPU's C2C link is at P2C.
// NCCL_NET_GDR_C2C came in 2.26.2 defaulting to 0 and defaults to 1 from
// 2.27.3 (NCCL_PARAM(NetGdrC2c, ...) in src/graph/paths.cc). With the
// variable unset the image's NCCL decides; an unknown version is taken as
// a current one.
constexpr nccl::Version kGdrC2cDefaultOn{2, 27, 3};

bool gdr_c2c_on(const RuleInput& in) {
    const nccl::Setting* c2c = in.nccl.get("NCCL_NET_GDR_C2C");
    if (c2c != nullptr) return effective_int(*c2c).value_or(1) != 0;
    if (!in.profile.node.grace) return true;  // no C2C path: only the fix's wording depends on it
    std::string where;
    auto version = rules::image_nccl_version(in, where);
    return !version || *version >= kGdrC2cDefaultOn;
}

int default_gdr_level(const RuleInput& in) {
    // Off Grace no GPU-NIC path is P2C: the default does not matter, and the
    // image's NCCL is not looked up.
    return in.profile.node.grace && gdr_c2c_on(in) ? rules::kPathP2c : rules::kPathPxb;
}

void check_gdr_level_low(const RuleInput& in, RuleOutput& out) {
    const nccl::Setting* level_setting =
        setting_or_unknown(in, out, "NCCL_NET_GDR_LEVEL", "whether GPUDirect RDMA is restricted");
    if (level_setting == nullptr) return;
    auto level = rules::parse_path_level(level_setting->value);
    if (!level) return;  // not a level NCCL knows: it keeps its default
    int threshold = default_gdr_level(in);
    if (*level >= threshold) return;

    std::string name(rules::path_level_name(*level));
    std::string shown = level_setting->value == name ? name : level_setting->value + " (" + name + ")";
    std::string reach = threshold == rules::kPathP2c ? "NICs reached through the Grace CPU (path P2C) and every pair"
                                                     : "every GPU–NIC pair";
    Finding& finding =
        out.fire("NCCL_NET_GDR_LEVEL=" + shown + " is below NCCL's default " +
                 std::string(rules::path_level_name(threshold)) + ": GPUDirect RDMA is off for " + reach +
                 " farther apart than " + name + ", so network traffic is staged through host memory");
    add_setting_evidence(finding, *level_setting);
    finding.evidence.emplace_back("level", name);
    finding.evidence.emplace_back("default_level", std::string(rules::path_level_name(threshold)));
    finding.remediation = restore_default(*level_setting, gdr_c2c_on(in) ? "P2C" : "PXB");
}

const TableRule kGdrLevelLow{
    RuleInfo{
        .id = "net.gdr-level-low",
        .title = "NCCL_NET_GDR_LEVEL below the default",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "The effective `NCCL_NET_GDR_LEVEL`, read as ncclGetLevel does (exact upper-case names LOC, NVL, "
                  "NVB, C2C, PIX, PXB, P2C, PXN, PHB, SYS; legacy integers 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and above "
                  "SYS; anything else is ignored), below NCCL's default: PXB, or P2C on Grace profiles while "
                  "`NCCL_NET_GDR_C2C` is on (its default since 2.27).",
        .why = "The level is the farthest GPU–NIC distance at which NCCL uses GPUDirect RDMA (ncclTopoCheckGdr). A "
               "lower level turns GDR off for the pairs beyond it and every network transfer is copied through host "
               "memory — slower, and costly in CPU memory bandwidth — without any message. On Grace, NCCL 2.30 "
               "replaces its P2C default with the user's level, so `PXB` there drops GDR for C2C-attached NICs.",
        .evidence = "The value and where it was set, the level NCCL reads from it, and NCCL's default level.",
        .fix = "Unset `NCCL_NET_GDR_LEVEL` (it is a workaround for VMs without a topology file — provide the file "
               "instead). From a conf file, the environment overrides it with NCCL's default level until the line "
               "is removed.",
    },
    check_gdr_level_low};

void check_gdr_read_off(const RuleInput& in, RuleOutput& out) {
    const nccl::Setting* read =
        setting_or_unknown(in, out, "NCCL_NET_GDR_READ", "whether GPUDirect RDMA reads are off");
    if (read == nullptr) return;
    auto value = effective_int(*read);
    if (!value || *value != 0) return;
    Finding& finding = out.fire("NCCL_NET_GDR_READ=" + read->value +
                                " turns GPUDirect RDMA off on the send path: every network send is first copied from "
                                "GPU to host memory");
    add_setting_evidence(finding, *read);
    finding.evidence.emplace_back("parsed", std::to_string(*value));
    finding.remediation = restore_default(*read, "-2");
}

const TableRule kGdrReadOff{
    RuleInfo{
        .id = "net.gdr-read-off",
        .title = "NCCL_NET_GDR_READ=0",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "The effective `NCCL_NET_GDR_READ` reads as 0 under strtoll (`0`, but also `off` or `false`).",
        .why =
            "NCCL enables GDR reads by default on Ampere and newer GPUs (and on NVLink systems before that). With 0, "
            "ncclTopoCheckGdr refuses GDR for sends, so outgoing network data is staged through host memory: "
            "lower bandwidth and more CPU memory traffic, silently.",
        .evidence = "The value, where it was set, and the value NCCL parses.",
        .fix = "Unset `NCCL_NET_GDR_READ`. From a conf file, the environment overrides it with `-2` (NCCL's automatic "
               "default) until the line is removed.",
    },
    check_gdr_read_off};

// ---------------------------------------------------------------------------
// net.gdr-unavailable

// Why DMA-BUF, NCCL's other GPUDirect RDMA path (ncclIbDmaBufSupport in
// src/transport/net_ib/gdr.cc, tried when no peer-memory module is there),
// certainly cannot work; "" when launchguard cannot rule it out, which is
// most of the time: NCCL decides it with CUDA's
// CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED and a trial ibv_reg_dmabuf_mr.
std::string dmabuf_ruled_out(const RuleInput& in, const GpuDirectRdma& gdr) {
    if (const nccl::Setting* enable = in.nccl.get("NCCL_DMABUF_ENABLE")) {
        if (auto value = effective_int(*enable); value && *value == 0)
            return "NCCL_DMABUF_ENABLE=" + enable->value + " turns it off";
    }
    // Only the open GPU kernel modules export GPU memory as DMA-BUF; their
    // /proc/driver/nvidia/version reads "NVIDIA UNIX Open Kernel Module".
    if (gdr.nvidia_driver && gdr.nvidia_driver->find("Open Kernel Module") == std::string::npos &&
        gdr.nvidia_driver->find("NVIDIA") != std::string::npos) {
        return "the proprietary NVIDIA kernel module is loaded (" + *gdr.nvidia_driver +
               "); only the open kernel modules export GPU memory as DMA-BUF";
    }
    // RDMA registration of DMA-BUF memory (ib_umem_dmabuf) came with Linux 5.12.
    if (gdr.kernel_release) {
        // "5.4.0-150-generic": the major and minor numbers lead.
        std::vector<std::string> parts = split_list(*gdr.kernel_release, '.');
        auto major =
            parts.size() >= 2
                ? nccl::parse_version(parts[0] + "." + parts[1].substr(0, parts[1].find_first_not_of("0123456789")))
                : std::nullopt;
        if (major && *major < nccl::Version{5, 12, 0})
            return "Linux " + *gdr.kernel_release + " predates DMA-BUF memory registration for RDMA (5.12)";
    }
    return {};
}

void check_gdr_unavailable(const RuleInput& in, RuleOutput& out) {
    if (!in.profile.node.gpudirect_rdma) return;
    const auto& gdr = in.ctx.node.gpudirect;
    if (!gdr) {
        out.unknown("cannot tell whether GPUDirect RDMA is available because " + gdr.reason());
        return;
    }
    if (!gdr->peer_memory.empty()) return;  // ncclIbGdrSupport succeeds
    std::string dmabuf = dmabuf_ruled_out(in, *gdr);
    if (dmabuf.empty()) {
        out.unknown("cannot tell whether GPUDirect RDMA is available: no peer-memory module is registered (" +
                    join(std::vector<std::string>(kPeerMemoryFiles.begin(), kPeerMemoryFiles.end())) +
                    " absent), and whether DMA-BUF works is decided by a CUDA driver query launchguard does not make");
        return;
    }
    Finding& finding = out.fire("profile " + in.profile.name +
                                " needs GPUDirect RDMA, but no peer-memory module is registered "
                                "(nvidia_peermem not loaded) and DMA-BUF cannot work: " +
                                dmabuf + ". NCCL stages every network transfer through host memory");
    finding.evidence.emplace_back(
        "peer_memory", "none of " + join(std::vector<std::string>(kPeerMemoryFiles.begin(), kPeerMemoryFiles.end())));
    finding.evidence.emplace_back("nvidia_peermem_module", gdr->peermem_module_loaded ? "loaded" : "not loaded");
    finding.evidence.emplace_back("dmabuf", dmabuf);
    if (gdr->nvidia_driver) finding.evidence.emplace_back("nvidia_driver", *gdr->nvidia_driver);
    if (gdr->kernel_release) finding.evidence.emplace_back("kernel", *gdr->kernel_release);
    finding.evidence.emplace_back("source", gdr.source());
    finding.remediation.push_back(RemediationOp::manual_step(
        "load the peer-memory module on the node: modprobe nvidia_peermem, and list it in /etc/modules-load.d so it "
        "loads after every boot and driver upgrade; or run the open NVIDIA kernel modules on Linux 5.12 or later "
        "for DMA-BUF"));
}

const TableRule kGdrUnavailable{
    RuleInfo{
        .id = "net.gdr-unavailable",
        .title = "GPUDirect RDMA unavailable on the node",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeNode | kScopeLive | kScopeCli,
        .checks = "On a node class whose profile sets `node.gpudirect_rdma: true`: whether either of NCCL's "
                  "GPUDirect RDMA paths can work. The peer-memory path works when one of the files NCCL's "
                  "ncclIbGdrSupport tests exists (`/sys/kernel/mm/memory_peers/nv_mem/version`, "
                  "`/sys/kernel/mm/memory_peers/nv_mem_nc/version`, `/sys/module/nvidia_peermem/version`). The "
                  "DMA-BUF path is decided by a CUDA driver query; launchguard rules it out only when "
                  "`NCCL_DMABUF_ENABLE=0`, the proprietary (not the open) NVIDIA kernel module is loaded, or the "
                  "kernel predates 5.12. Otherwise it says it cannot tell — never that GDR is missing.",
        .why = "Without GPUDirect RDMA the NIC cannot read or write GPU memory: NCCL copies every network transfer "
               "through host memory, with lower bandwidth and CPU memory traffic, and says so only at INFO/TRACE "
               "(\"GPU Direct RDMA Disabled for GPU ... / HCA ...\", ncclTopoCheckGdr in src/graph/paths.cc). The "
               "usual cause is an nvidia_peermem module that did not load after a driver upgrade.",
        .evidence = "Which peer-memory files are absent, whether the nvidia_peermem module is loaded, why DMA-BUF "
                    "cannot work, the driver and kernel versions.",
        .fix = "`modprobe nvidia_peermem` and load it at boot (`/etc/modules-load.d`); or use the open NVIDIA kernel "
               "modules on Linux 5.12 or later, which give NCCL DMA-BUF. In node checks the node is drained until "
               "then.",
    },
    check_gdr_unavailable};
}  // namespace

void net_rules::register_network_link_rules(std::vector<const Rule*>& rules) {
    rules.push_back(&kIbPortDegraded);
    rules.push_back(&kGdrLevelLow);
    rules.push_back(&kGdrReadOff);
    rules.push_back(&kGdrUnavailable);
}

}  // namespace launchguard
