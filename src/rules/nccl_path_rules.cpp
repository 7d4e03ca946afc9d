// Rules on NCCL's predicted paths (nccl/nccl_paths.h): what NCCL will decide
// at init about GPUDirect RDMA, NIC sharing and P2P, judged before launch
// against what the node class was built for.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nccl/node_paths.h"
#include "rules/families.h"
#include "rules/rule_helpers.h"
#include "rules/table_rule.h"

namespace launchguard {
namespace {

// The model for this launch, or nullopt after saying why it is unknown.
// Computed once per evaluation (SharedAnalysis::node_paths) for all four rules.
const nccl::NodePaths* launch_paths(const RuleInput& in, RuleOutput& out) {
    std::string where;
    std::optional<nccl::Version> version = rules::image_nccl_version(in, where);
    const nccl::NodePaths& paths = in.shared.node_paths(in.ctx, in.files, version);
    if (paths.no_gpu) return nullptr;
    if (!paths.unknown.empty()) {
        out.unknown("cannot predict NCCL's paths: " + paths.unknown);
        return nullptr;
    }
    if (!paths.model.built) {
        out.unknown("cannot predict NCCL's paths from " + paths.source + ": " + paths.model.error);
        return nullptr;
    }
    return &paths;
}

// net.gdr-path-off
void check_gdr_path_off(const RuleInput& in, RuleOutput& out) {
    if (!in.profile.node.gpudirect_rdma) return;
    auto paths = launch_paths(in, out);
    if (!paths) return;
    std::vector<std::string> undecided;
    for (const auto& g : paths->model.gpus) {
        if (g.nic.empty()) continue;
        if (!g.gdr) {
            undecided.push_back(g.busid);
            continue;
        }
        if (*g.gdr) continue;
        const std::string path = g.path ? std::string(nccl::to_string(*g.path)) : "?";
        Finding& f = out.fire("GPU " + g.busid + " will stage its traffic to NIC " + g.nic +
                              " through host memory (GPUDirect RDMA off): " + g.gdr_why);
        f.evidence.emplace_back("gpu", g.busid);
        f.evidence.emplace_back("nic", g.nic);
        f.evidence.emplace_back("path", path);
        f.evidence.emplace_back("cause", g.gdr_cause);
        f.evidence.emplace_back("gdr_level", std::string(nccl::to_string(paths->model.gdr_level)) + " (" +
                                                 paths->model.gdr_level_source + ")");
        f.evidence.emplace_back("source", paths->source);
        if (g.gdr_cause.rfind("setting ", 0) == 0) {
            f.remediation.push_back(RemediationOp::unset_env(g.gdr_cause.substr(8)));
        } else {
            f.remediation.push_back(
                RemediationOp::manual_step("move NIC " + g.nic + " (or GPU " + g.busid +
                                           ") so they share a PCIe switch, or fix the topology file"));
        }
    }
    if (!undecided.empty() && undecided.size() == paths->model.gpus.size()) {
        out.unknown("whether GPUDirect RDMA is on for GPUs " + rules::join(undecided, ", ") +
                    " depends on what the driver and network plugin report, which " + paths->source + " does not show");
    }
}

// topo.nic-uneven
void check_nic_uneven(const RuleInput& in, RuleOutput& out) {
    auto paths = launch_paths(in, out);
    if (!paths) return;
    const auto& m = paths->model;
    std::map<std::string, std::vector<std::string>> by_nic;
    for (const auto& nic : m.nics) by_nic[nic];
    for (const auto& g : m.gpus) {
        if (!g.nic.empty()) by_nic[g.nic].push_back(g.busid);
    }
    if (by_nic.empty() || m.gpus.empty()) return;
    const std::size_t fair = (m.gpus.size() + by_nic.size() - 1) / by_nic.size();
    for (const auto& [nic, gpus] : by_nic) {
        if (gpus.size() <= fair) continue;
        Finding& f = out.fire("NIC " + nic + " carries " + std::to_string(gpus.size()) + " GPUs (" +
                              rules::join(gpus, ", ") + ") where " + std::to_string(m.gpus.size()) + " GPUs and " +
                              std::to_string(by_nic.size()) + " NICs give at most " + std::to_string(fair) +
                              " each: those GPUs share its bandwidth while other NICs idle");
        f.evidence.emplace_back("nic", nic);
        f.evidence.emplace_back("gpus", rules::join(gpus, ", "));
        f.evidence.emplace_back("fair_share", std::to_string(fair));
        f.evidence.emplace_back("source", paths->source);
        f.remediation.push_back(RemediationOp::manual_step("check the NIC placement in " + paths->source +
                                                           " (each GPU should have a NIC on its own PCIe switch)"));
    }
}

// topo.p2p-off
void check_p2p_off(const RuleInput& in, RuleOutput& out) {
    auto paths = launch_paths(in, out);
    if (!paths) return;
    for (const auto& p : paths->model.pairs) {
        const std::optional<nccl::Path> path = p.path ? p.path : p.pci_path;
        if (!path || *path > nccl::Path::pxb || !p.p2p || *p.p2p) continue;
        const bool nvlink = *path <= nccl::Path::nvb;
        Finding& f =
            out.fire("P2P is off between GPUs " + p.a + " and " + p.b + ", which " +
                     (nvlink ? "NVLink" : "a PCIe switch") + " connects (path " + std::string(nccl::to_string(*path)) +
                     "): " + p.p2p_why + ", so their traffic goes through host memory");
        f.evidence.emplace_back("gpus", p.a + " " + p.b);
        f.evidence.emplace_back("path", std::string(nccl::to_string(*path)));
        f.evidence.emplace_back("p2p_level", std::string(nccl::to_string(paths->model.p2p_level)) + " (" +
                                                 paths->model.p2p_level_source + ")");
        const std::string& source = paths->model.p2p_level_source;
        if (source.rfind("NCCL_", 0) == 0) {
            f.remediation.push_back(RemediationOp::unset_env(source.substr(0, source.find('='))));
        }
    }
}

// net.gdr-iommu-groups
std::optional<std::string> grdma_override(const RuleInput& in, std::string& where) {
    constexpr std::string_view kParams = "/proc/driver/nvidia/params";
    if (!in.files) {
        where = "the task's files are unknown";
        return std::nullopt;
    }
    auto text = in.files->read(kParams);
    if (!text) {
        where = std::string(kParams) + " cannot be read: " + text.error().to_string();
        return std::nullopt;
    }
    for (std::string_view key : {"GrdmaPciTopoCheckOverride: ", "GrdmaPciTopoCheckOverride="}) {
        auto at = text->find(key);
        if (at == std::string::npos) continue;
        auto end = text->find_first_of("\n;, ", at + key.size());
        return text->substr(at + key.size(), end == std::string::npos ? std::string::npos : end - at - key.size());
    }
    where = std::string(kParams) + " does not list GrdmaPciTopoCheckOverride";
    return std::nullopt;
}

bool smmu_node(const RuleInput& in) {
    if (in.profile.node.grace) return true;
    if (!in.ctx.node.iommu_units) return false;
    const auto& units = in.ctx.node.iommu_units.value();
    return std::any_of(units.begin(), units.end(), [](const IommuUnit& u) { return u.kind.rfind("arm-smmu", 0) == 0; });
}

void check_gdr_iommu_groups(const RuleInput& in, RuleOutput& out) {
    if (!smmu_node(in)) return;
    auto paths = launch_paths(in, out);
    if (!paths) return;
    if (!in.ctx.node.iommu_groups) {
        out.unknown("cannot compare the GPUs' and NICs' IOMMU groups: " + in.ctx.node.iommu_groups.reason());
        return;
    }
    std::map<std::string, std::string> group_of;
    for (const auto& group : in.ctx.node.iommu_groups.value()) {
        for (const auto& d : group.devices) group_of[d] = group.id;
    }
    std::string where;
    const std::optional<std::string> override_value = grdma_override(in, where);
    if (override_value && *override_value == "1") return;
    for (const auto& g : paths->model.gpus) {
        if (g.nic.empty()) continue;
        auto gg = group_of.find(g.busid);
        auto ng = group_of.find(g.nic);
        if (gg == group_of.end() || ng == group_of.end()) {
            out.unknown("/sys/kernel/iommu_groups does not list GPU " + g.busid + " or NIC " + g.nic);
            continue;
        }
        if (gg->second == ng->second) continue;
        if (!override_value) {
            out.unknown("GPU " + g.busid + " and NIC " + g.nic +
                        " sit in different IOMMU groups; whether the driver "
                        "refuses DMA-BUF GPUDirect RDMA depends on NVreg_GrdmaPciTopoCheckOverride, unknown because " +
                        where);
            continue;
        }
        Finding& f = out.fire(
            "GPU " + g.busid + " (IOMMU group " + gg->second + ") and NIC " + g.nic + " (group " + ng->second +
            ") sit in different IOMMU groups and "
            "NVreg_GrdmaPciTopoCheckOverride is " +
            *override_value + ": the driver refuses DMA-BUF GPUDirect RDMA and NCCL silently falls back to sockets");
        f.evidence.emplace_back("gpu", g.busid);
        f.evidence.emplace_back("nic", g.nic);
        f.evidence.emplace_back("gpu_iommu_group", gg->second);
        f.evidence.emplace_back("nic_iommu_group", ng->second);
        f.evidence.emplace_back("NVreg_GrdmaPciTopoCheckOverride", *override_value);
        f.remediation.push_back(
            RemediationOp::manual_step("load the NVIDIA driver with NVreg_GrdmaPciTopoCheckOverride=1 (options nvidia "
                                       "NVreg_GrdmaPciTopoCheckOverride=1 in /etc/modprobe.d) and reboot the node"));
    }
}

const TableRule kGdrPathOff{
    RuleInfo{
        .id = "net.gdr-path-off",
        .title = "NCCL will not use GPUDirect RDMA between a GPU and its NIC",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeNode | kScopeLive | kScopeCli,
        .nccl_only = true,
        .checks = "On a node class whose profile sets `node.gpudirect_rdma: true`: predicts, as NCCL's "
                  "ncclTopoCheckGdr does, whether each GPU's NIC gets GPUDirect RDMA, from the topology "
                  "(NCCL_TOPO_FILE or the node's PCI tree), the path type, the effective NCCL_NET_GDR_LEVEL "
                  "(default P2C from NCCL 2.29.2, PXB before), NCCL_NET_GDR_READ, NCCL_NET_GDR_C2C and PXN.",
        .why = "With GPUDirect RDMA off, every network transfer of that GPU is staged through host memory: "
               "NCCL says so only in INFO logs after launch, and the job runs slower with no error.",
        .evidence = "The GPU, its NIC, the path type, what refused GDR (a setting or the slot) and the level.",
        .fix = "Unset the variable that lowers the level, or put GPU and NIC under one PCIe switch.",
    },
    check_gdr_path_off};

const TableRule kNicUneven{
    RuleInfo{
        .id = "topo.nic-uneven",
        .title = "GPUs unevenly share their NICs",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeNode | kScopeLive | kScopeCli,
        .nccl_only = true,
        .checks = "Predicts the NIC each GPU uses on its first channel (ncclTopoGetLocal, ncclTopoGetLocalNet) and "
                  "fires for a NIC that carries more GPUs than the node's GPU/NIC ratio allows (rounded up).",
        .why = "Two GPUs forced onto one NIC halve their network bandwidth while another NIC idles: a NIC in the "
               "wrong slot, or a topology file that hangs it under the other socket.",
        .evidence = "The NIC, the GPUs that use it and the fair share.",
        .fix = "Correct the topology file, or move the NIC to the PCIe switch of the GPU it serves.",
    },
    check_nic_uneven};

const TableRule kP2pOff{
    RuleInfo{
        .id = "topo.p2p-off",
        .title = "P2P off between GPUs that NVLink or a PCIe switch connects",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeNode | kScopeLive | kScopeCli,
        .nccl_only = true,
        .checks = "Predicts ncclTopoCheckP2p for each GPU pair: the path (NVL, NVB, PIX, PXB) against the P2P "
                  "level (PXB by default, NCCL_P2P_LEVEL, NCCL_P2P_DISABLE=1 meaning LOC).",
        .why = "Without P2P, NCCL sends GPU-to-GPU traffic through host memory even where NVLink joins the GPUs.",
        .evidence = "The GPU pair, the path and the P2P level with its source.",
        .fix = "Unset NCCL_P2P_DISABLE / NCCL_P2P_LEVEL.",
    },
    check_p2p_off};

const TableRule kGdrIommuGroups{
    RuleInfo{
        .id = "net.gdr-iommu-groups",
        .title = "DMA-BUF GPUDirect RDMA refused across IOMMU groups",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeNode | kScopeLive | kScopeCli,
        .nccl_only = true,
        .checks = "On Grace or Arm SMMU nodes (profile `node.grace`, or an arm-smmu IOMMU in /sys/class/iommu): "
                  "for each GPU and the NIC NCCL gives it, whether /sys/kernel/iommu_groups puts them in different "
                  "groups while the NVIDIA driver's GrdmaPciTopoCheckOverride (/proc/driver/nvidia/params) is not 1.",
        .why = "The driver then refuses to register GPU memory for DMA-BUF RDMA and NCCL silently falls back to "
               "sockets (field reports on GB200 with EKS, OKE and Azure bare metal).",
        .evidence = "The GPU, the NIC, both IOMMU groups and the parameter's value.",
        .fix = "Load the driver with NVreg_GrdmaPciTopoCheckOverride=1.",
    },
    check_gdr_iommu_groups};

}  // namespace

void register_nccl_path_rules(std::vector<const Rule*>& rules) {
    rules.push_back(&kGdrPathOff);
    rules.push_back(&kNicUneven);
    rules.push_back(&kP2pOff);
    rules.push_back(&kGdrIommuGroups);
}

}  // namespace launchguard
