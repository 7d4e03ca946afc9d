// Virtualization and the IOMMU (field case 1: a GB200 NVL72 VM spent 24% of
// its CPU cycles in arm_smmu_cmdq_issue_cmdlist) and the kernel page size.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rules/families.h"
#include "rules/rule_helpers.h"
#include "rules/table_rule.h"
#include "util/size_parser.h"

namespace launchguard {
namespace {

using rules::join;

// The value of the last `name=` on the kernel command line ("" for a bare
// `name`), nullopt when absent. The kernel applies parameters in order, so a
// later one overrides an earlier one.
std::optional<std::string> kernel_param(std::string_view cmdline, std::string_view name) {
    std::optional<std::string> value;
    std::size_t pos = 0;
    while (pos < cmdline.size()) {
        std::size_t end = cmdline.find_first_of(" \t\n", pos);
        if (end == std::string_view::npos) end = cmdline.size();
        std::string_view token = cmdline.substr(pos, end - pos);
        pos = end + 1;
        if (token.substr(0, name.size()) != name) continue;
        if (token.size() == name.size()) {
            value = std::string();
        } else if (token[name.size()] == '=') {
            value = std::string(token.substr(name.size() + 1));
        }
    }
    return value;
}

// kstrtobool(), which the kernel uses for iommu.passthrough and iommu.strict.
std::optional<bool> kernel_bool(std::string_view value) {
    if (value == "on") return true;
    if (value == "off") return false;
    if (value.empty()) return std::nullopt;
    switch (value.front()) {
        case 'y':
        case 'Y':
        case '1':
            return true;
        case 'n':
        case 'N':
        case '0':
            return false;
        default:
            return std::nullopt;
    }
}

// The parameter that asks for IOMMU passthrough ("iommu.passthrough=1",
// x86's "iommu=pt"), or nullopt.
std::optional<std::string> passthrough_param(std::string_view cmdline) {
    if (auto v = kernel_param(cmdline, "iommu.passthrough"); v && kernel_bool(*v).value_or(false)) {
        return "iommu.passthrough=" + *v;
    }
    if (auto v = kernel_param(cmdline, "iommu"); v && *v == "pt") return std::string("iommu=pt");
    return std::nullopt;
}

// The parameter that makes DMA unmaps invalidate synchronously, or nullopt.
// An Arm kernel has neither the Intel nor the AMD driver, so only
// iommu.strict counts there.
std::optional<std::string> strict_param(std::string_view cmdline, bool arm) {
    if (auto v = kernel_param(cmdline, "iommu.strict"); v && kernel_bool(*v).value_or(false)) {
        return "iommu.strict=" + *v;
    }
    if (arm) return std::nullopt;
    if (auto v = kernel_param(cmdline, "intel_iommu"); v && ("," + *v + ",").find(",strict,") != std::string::npos) {
        return "intel_iommu=" + *v;
    }
    if (auto v = kernel_param(cmdline, "amd_iommu"); v && ("," + *v + ",").find(",fullflush,") != std::string::npos) {
        return "amd_iommu=" + *v;
    }
    return std::nullopt;
}

// DMA = translated with strict invalidation, DMA-FQ = translated with a lazy
// flush queue; identity (passthrough) and blocked do not translate.
bool translates(const IommuGroup& group) { return group.type == "DMA" || group.type == "DMA-FQ"; }

const IommuGroup* group_of(const std::vector<IommuGroup>& groups, const std::string& busid) {
    for (const auto& group : groups) {
        for (const auto& device : group.devices) {
            if (device == busid) return &group;
        }
    }
    return nullptr;
}

// One translated device (or, without a topology, one translated group) as
// shown in messages: "GPU 0 (0000:84:00.0) in group 17 (DMA-FQ)".
struct Translated {
    std::string what;
    std::string group;
};

std::string describe(const std::vector<Translated>& items) {
    std::vector<std::string> parts;
    for (const auto& item : items) parts.push_back(item.what + " in IOMMU group " + item.group);
    return join(parts, "; ");
}

// "8 GPUs and 8 NICs", "all 2 IOMMU groups": the message stays one readable
// line on a large node; the evidence lists every device and group.
std::string summarize(const std::vector<Translated>& items) {
    std::size_t gpus = 0;
    std::size_t nics = 0;
    std::size_t groups = 0;
    for (const auto& item : items) {
        if (item.what.starts_with("GPU "))
            ++gpus;
        else if (item.what.starts_with("NIC "))
            ++nics;
        else
            ++groups;
    }
    auto count = [](std::size_t n, const char* noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); };
    std::vector<std::string> parts;
    if (gpus > 0) parts.push_back(count(gpus, "GPU"));
    if (nics > 0) parts.push_back(count(nics, "NIC"));
    if (groups > 0) parts.push_back("the devices of " + count(groups, "IOMMU group"));
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i)
        out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
    return out;
}

// The GPUs and NICs whose DMA the IOMMU translates. Without a topology the
// kernel's default domain type still tells: it applies to every group, so when
// every group translates (or none does), so do (or don't) the GPUs' and NICs'.
// nullopt = cannot tell.
std::optional<std::vector<Translated>> translated_devices(const LaunchContext& ctx,
                                                          const std::vector<IommuGroup>& groups) {
    std::vector<Translated> found;
    auto label = [](const IommuGroup& g) { return g.id + " (" + g.type + ")"; };
    if (ctx.topology) {
        for (const Gpu& gpu : ctx.topology->gpus) {
            const IommuGroup* group = group_of(groups, gpu.busid);
            if (group != nullptr && translates(*group)) {
                found.push_back({"GPU " + std::to_string(gpu.index) + " (" + gpu.busid + ")", label(*group)});
            }
        }
        for (const Nic& nic : ctx.topology->nics) {
            const IommuGroup* group = nic.busid.empty() ? nullptr : group_of(groups, nic.busid);
            if (group != nullptr && translates(*group)) {
                std::string name = nic.hca.empty() ? (nic.netdevs.empty() ? "NIC" : nic.netdevs.front()) : nic.hca;
                found.push_back({"NIC " + name + " (" + nic.busid + ")", label(*group)});
            }
        }
        return found;
    }
    std::size_t translating = 0;
    for (const auto& group : groups) translating += translates(group) ? 1 : 0;
    if (translating == 0) return found;
    if (translating < groups.size()) return std::nullopt;
    for (const auto& group : groups) found.push_back({"devices " + join(group.devices), label(group)});
    return found;
}

// "smmu3.0x0000000016000000 (arm-smmu-v3)", for evidence.
std::string describe_units(const std::vector<IommuUnit>& units) {
    std::vector<std::string> parts;
    for (const auto& unit : units) parts.push_back(unit.name + (unit.kind.empty() ? "" : " (" + unit.kind + ")"));
    return join(parts);
}

std::vector<RemediationOp> passthrough_remediation(const RuleInput& in) {
    std::vector<RemediationOp> ops;
    bool arm = rules::arm_node(in);
    bool x86 = rules::x86_node(in);
    if (arm || !x86) {
        ops.push_back(RemediationOp::manual_step(
            "Arm guests: add iommu.passthrough=1 iommu.strict=0 to the kernel command line and reboot (Azure's GB200 "
            "images also add arm_smmu_v3.disable_msipolling=1); where the host can pass Grace's SMMU CMDQV (virtual "
            "command queues) to the guest, ask the provider for it"));
    }
    if (x86 || !arm) {
        ops.push_back(RemediationOp::manual_step("x86 guests: add iommu=pt to the kernel command line and reboot"));
    }
    return ops;
}

constexpr BoolParameter kRequireIommuPassthrough{"virtualization.require_iommu_passthrough", false,
                                                 "true blocks instead of warning (Grace profiles always do)"};
constexpr auto kIommuTranslatingParameters = parameter_list(kRequireIommuPassthrough);

void check_iommu_translating(const RuleInput& in, RuleOutput& out) {
    const NodeFacts& node = in.ctx.node;
    const auto& virtualization = node.virtualization;
    if (virtualization && *virtualization == "none") return;
    if (!node.iommu_groups) {
        out.unknown("cannot tell whether the IOMMU translates GPU and NIC DMA because " + node.iommu_groups.reason());
        return;
    }
    auto translated = translated_devices(in.ctx, *node.iommu_groups);
    if (!translated) {
        out.unknown(
            "cannot tell whether the IOMMU translates GPU and NIC DMA: only some IOMMU groups translate and "
            "the node topology, which says which groups hold GPUs and NICs, is unknown: " +
            in.ctx.topology.reason());
        return;
    }
    if (translated->empty()) return;

    std::string guest;
    if (virtualization) {
        guest = *virtualization + " guest";
    } else if (in.profile.node.virtual_machine) {
        guest = "VM (profile " + in.profile.name + ")";
    } else {
        out.unknown("IOMMU groups translate GPU/NIC DMA (" + summarize(*translated) +
                    ") but cannot tell whether this node is a VM because " + virtualization.reason());
        return;
    }

    std::optional<std::string> passthrough;
    if (node.kernel_cmdline) passthrough = passthrough_param(*node.kernel_cmdline);
    std::string message = summarize(*translated) + " in this " + guest + ": ";
    if (passthrough) {
        message += "the IOMMU still translates their DMA although the kernel command line has " + *passthrough;
    } else {
        message += "the IOMMU translates their DMA (" +
                   std::string(node.kernel_cmdline ? "no iommu.passthrough=1 on the kernel command line"
                                                   : "kernel command line unknown") +
                   ")";
    }
    message +=
        ", so every buffer map and unmap costs TLB invalidations on the CPU (24% of cycles in the GB200 VM "
        "field case)";
    Finding& finding = out.fire(std::move(message));
    finding.evidence.emplace_back("translated", describe(*translated));
    finding.evidence.emplace_back("virtualization", virtualization
                                                        ? *virtualization + " (" + virtualization.source() + ")"
                                                        : "unknown: " + virtualization.reason());
    finding.evidence.emplace_back("iommu_groups_source", node.iommu_groups.source());
    if (node.iommu_units && !node.iommu_units->empty())
        finding.evidence.emplace_back("iommu_units", describe_units(*node.iommu_units));
    finding.evidence.emplace_back(
        "kernel_cmdline", node.kernel_cmdline ? *node.kernel_cmdline : "unknown: " + node.kernel_cmdline.reason());
    if (node.arch) finding.evidence.emplace_back("arch", *node.arch);
    if (kRequireIommuPassthrough.in(in.profile) || in.profile.node.grace) {
        finding.action = Action::block;
        finding.evidence.emplace_back("profile", in.profile.name + " requires IOMMU passthrough");
    }
    if (passthrough) {
        finding.remediation.push_back(RemediationOp::manual_step(
            "the kernel was asked for passthrough (" + *passthrough +
            ") yet these groups translate: look for a "
            "per-group override in /sys/kernel/iommu_groups/<N>/type (write identity with the driver unbound) or a "
            "kernel built without passthrough support"));
    } else {
        finding.remediation = passthrough_remediation(in);
    }
}

void check_iommu_strict(const RuleInput& in, RuleOutput& out) {
    const NodeFacts& node = in.ctx.node;
    if (!node.kernel_cmdline) {
        out.unknown("cannot tell whether IOMMU invalidation is strict because " + node.kernel_cmdline.reason());
        return;
    }
    auto strict = strict_param(*node.kernel_cmdline, rules::arm_node(in));
    if (!strict) return;
    // Strictness only applies to translated (DMA) domains.
    if (node.iommu_groups) {
        bool any_translated = false;
        for (const auto& group : *node.iommu_groups) any_translated = any_translated || translates(group);
        if (!any_translated) return;
    }
    Finding& finding = out.fire(*strict +
                                " on the kernel command line: the IOMMU invalidates its TLB synchronously "
                                "on every DMA unmap instead of batching, which costs CPU time on every RDMA and GPU "
                                "buffer unmap");
    finding.evidence.emplace_back("parameter", *strict);
    finding.evidence.emplace_back("kernel_cmdline", *node.kernel_cmdline);
    finding.evidence.emplace_back("source", node.kernel_cmdline.source());
    finding.remediation.push_back(RemediationOp::manual_step(
        "remove " + *strict +
        " from the kernel command line (iommu.strict=0 selects lazy invalidation) or put GPUs "
        "and NICs in passthrough (iommu.passthrough=1, x86: iommu=pt), then reboot"));
}

void check_page_size(const RuleInput& in, RuleOutput& out) {
    const auto& expected = in.profile.node.page_size;
    if (!expected) return;
    const auto& page_size = in.ctx.node.page_size;
    if (!page_size) {
        out.unknown("cannot tell the kernel page size because " + page_size.reason());
        return;
    }
    if (*page_size == *expected) return;
    std::string actual_text = format_byte_size(static_cast<std::uint64_t>(*page_size));
    std::string expected_text = format_byte_size(static_cast<std::uint64_t>(*expected));
    Finding& finding =
        out.fire("kernel page size is " + actual_text + ", profile " + in.profile.name + " expects " + expected_text +
                 ": the node runs a different kernel build than the one its "
                 "performance baseline was measured with");
    finding.evidence.emplace_back("page_size", actual_text + " (" + page_size.source() + ")");
    finding.evidence.emplace_back("expected", expected_text + " (profile " + in.profile.name + ")");
    if (in.ctx.node.arch) finding.evidence.emplace_back("arch", *in.ctx.node.arch);
    finding.remediation.push_back(RemediationOp::manual_step(
        "boot a kernel built for " + expected_text + " pages" +
        (*expected == 65536 ? std::string(" (on Grace: a 64 KiB-page arm64 kernel, such as Ubuntu's linux-nvidia-64k "
                                          "flavour or CONFIG_ARM64_64K_PAGES=y)")
                            : std::string()) +
        ", or select the profile that matches this node class"));
}

const TableRule kIommuTranslating{
    RuleInfo{
        .id = "virt.iommu-translating",
        .title = "IOMMU translates GPU and NIC DMA in a VM",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeNode | kScopeCli,
        .checks = "In a VM (systemd-detect-virt style detection from DMI, hypervisor and cpuinfo), finds the IOMMU "
                  "groups of the node's GPUs and NICs by PCI bus id in /sys/kernel/iommu_groups and fires when any "
                  "is of type DMA or DMA-FQ (translated) rather than identity. Without a node topology it can still "
                  "decide when every group translates (the kernel's default domain). The finding blocks on "
                  "profiles with virtualization.require_iommu_passthrough or node.grace.",
        .why = "With translation on, every DMA map and unmap of GPU and RDMA buffers goes through the guest's "
               "(virtual) SMMU or IOMMU, and each invalidation traps to the hypervisor. Field case 1: a GB200 "
               "NVL72 VM spent 24% of its CPU cycles in arm_smmu_cmdq_issue_cmdlist, and MoE pre-training ran "
               "12-14% slower than bare metal. Nothing in NCCL or CUDA reports it.",
        .evidence = "The translated GPUs and NICs with their group and type, the virtualization and where it was "
                    "detected, the kernel command line, the architecture, and the profile when it makes the finding "
                    "block.",
        .fix = "Boot the guest with iommu.passthrough=1 iommu.strict=0 on Arm (Azure's GB200 images use "
               "iommu.passthrough=1 and arm_smmu_v3.disable_msipolling=1) or iommu=pt on x86; where the host "
               "supports it, pass Grace's SMMU CMDQV to the guest.",
        .parameters = kIommuTranslatingParameters,
    },
    check_iommu_translating};

const TableRule kIommuStrict{
    RuleInfo{
        .id = "virt.iommu-strict",
        .title = "IOMMU in strict invalidation mode",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeNode | kScopeCli,
        .checks = "Fires when the kernel command line has iommu.strict=1 (also intel_iommu=strict or "
                  "amd_iommu=fullflush), unless no IOMMU group translates DMA, where strictness has no effect.",
        .why = "Strict mode invalidates the IOMMU TLB synchronously on every DMA unmap; lazy mode (DMA-FQ) "
               "batches invalidations. Ampere recommends iommu.strict=0 to reduce SMMU TLB invalidation overhead; "
               "in a VM each invalidation may also trap to the hypervisor (field case 1).",
        .evidence = "The parameter, the full kernel command line and where it was read.",
        .fix = "Remove the parameter (iommu.strict=0 selects lazy invalidation), or put GPUs and NICs in "
               "passthrough with iommu.passthrough=1 (x86: iommu=pt), and reboot.",
    },
    check_iommu_strict};

const TableRule kPageSize{
    RuleInfo{
        .id = "virt.page-size",
        .title = "Kernel page size differs from the profile",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeNode | kScopeLive | kScopeCli,
        .checks = "Compares the running kernel's page size (sysconf(_SC_PAGESIZE)) with the profile's "
                  "node.page_size; quiet when the profile does not set one.",
        .why = "Grace profiles expect 64 KiB pages, the kernel NVIDIA's Grace platforms are tuned and measured "
               "with; a 4 KiB kernel maps the same memory with 16 times more pages and TLB entries (more TLB "
               "misses, page-table walks and SMMU work on large host buffers), so the node runs below the "
               "baseline its profile describes.",
        .evidence = "The page size and where it was read, the profile's page size, and the architecture.",
        .fix = "Boot a kernel built for the profile's page size (on Grace a 64 KiB-page arm64 kernel, for "
               "example Ubuntu's linux-nvidia-64k flavour), or select the profile that matches the node.",
    },
    check_page_size};

// ---------------------------------------------------------------------------
// virt.ats-off

constexpr BoolParameter kRequireNicAts{"virtualization.require_nic_ats", false,
                                       "true: passed-through RDMA NICs must have ATS on (false: the rule stays quiet)"};
constexpr auto kAtsOffParameters = parameter_list(kRequireNicAts);

void check_ats_off(const RuleInput& in, RuleOutput& out) {
    if (!kRequireNicAts.in(in.profile)) return;
    const LaunchContext& ctx = in.ctx;
    rules::Condition vm = rules::node_is_vm(ctx, true);
    rules::Condition topo = rules::topology_known(ctx);
    rules::Condition caps = rules::pci_capabilities_known(ctx, "the NICs' ATS settings");
    if (!rules::all_hold(out, "whether the passed-through NICs translate addresses with ATS", {vm, topo, caps})) return;

    std::vector<std::string> off;
    std::vector<std::string> unreadable;
    for (const Nic& nic : ctx.topology->nics) {
        if (nic.hca.empty() || nic.busid.empty()) continue;
        auto it = ctx.node.pci_capabilities->find(nic.busid);
        if (it == ctx.node.pci_capabilities->end() || !it->second.extended_readable) {
            unreadable.push_back(nic.hca + " " + nic.busid);
        } else if (!it->second.ats_control) {
            off.push_back(nic.hca + " " + nic.busid + " (no ATS capability exposed to the VM)");
        } else if ((*it->second.ats_control & PciCapabilities::kAtsEnable) == 0) {
            off.push_back(nic.hca + " " + nic.busid + " (ATS present, Enable clear)");
        }
    }
    if (off.empty()) {
        if (!unreadable.empty()) {
            out.unknown(
                "cannot tell whether ATS is on for " + rules::join(unreadable) +
                " because their configuration space could not be read past its first 64 bytes, or not at all (the "
                "extended space needs root)");
        }
        return;
    }
    Finding& finding = out.fire("ATS is off on " + std::to_string(off.size()) + " passed-through RDMA NIC" +
                                (off.size() == 1 ? "" : "s") + " of this " + *ctx.node.virtualization +
                                " VM, which profile " + in.profile.name + " requires it on (" + rules::join(off) +
                                "): GPUDirect RDMA traffic is translated by the host IOMMU on every access");
    finding.evidence.emplace_back("nics", rules::join(off));
    finding.evidence.emplace_back("virtualization",
                                  *ctx.node.virtualization + " (" + ctx.node.virtualization.source() + ")");
    finding.evidence.emplace_back("source", ctx.node.pci_capabilities.source());
    finding.remediation.push_back(RemediationOp::manual_step(
        "enable ATS for the NIC on the host (ConnectX firmware: mlxconfig ATS_ENABLED=true, then a firmware reset) and "
        "pass the capability through to the VM; the guest's driver enables it when it sees it"));
}

const TableRule kAtsOff{
    RuleInfo{
        .id = "virt.ats-off",
        .title = "ATS off on a passed-through NIC",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeNode | kScopeCli,
        .checks = "In a VM, on profiles with `virtualization.require_nic_ats: true`: each RDMA NIC's ATS extended "
                  "capability (ID 0x000F) in its binary `/sys/bus/pci/devices/<nic>/config`, whose ATS Control "
                  "register (+6) must have Enable (bit 15) set. A NIC that exposes no ATS capability counts as off. "
                  "Reading the extended configuration space needs root; elsewhere the rule says it cannot tell.",
        .why = "In a VM, GPUDirect RDMA between a passed-through NIC and GPU goes through the host's IOMMU. With "
               "ATS the NIC caches translations and peer traffic can go directly between the devices; without it "
               "every access is translated by the host IOMMU or routed through the root complex, and GDR bandwidth "
               "collapses. VM classes built for GDR (e.g. those whose hypervisor enables ATS for ConnectX) rely on it.",
        .evidence = "Each NIC with ATS off or absent, the virtualization, and where the configuration space was "
                    "read.",
        .fix = "Enable ATS in the NIC firmware (`mlxconfig ... ATS_ENABLED=true`) and pass it through to the VM; "
               "then reboot the guest. Drained by node checks until fixed.",
        .parameters = kAtsOffParameters,
    },
    check_ats_off};

}  // namespace

void register_virtualization_rules(std::vector<const Rule*>& rules) {
    rules.push_back(&kIommuTranslating);
    rules.push_back(&kIommuStrict);
    rules.push_back(&kPageSize);
    rules.push_back(&kAtsOff);
}

}  // namespace launchguard
