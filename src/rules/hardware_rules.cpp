// Silent hardware-installation defects: PCIe links trained below their
// capability and devices missing from the node. Both are node findings: the
// fix is to drain the node, not to change the job.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rules/families.h"
#include "rules/rule_helpers.h"
#include "rules/table_rule.h"

namespace launchguard {
namespace {

using rules::join;

// One GPU or NIC and the PCIe link state known for it.
struct PcieDevice {
    bool gpu = false;
    std::string name;  // "GPU 0", "NIC mlx5_0"
    std::string busid;
    std::optional<PcieLink> current;
    std::optional<PcieLink> max;
    std::string source;
};

std::string nic_name(const Nic& nic) {
    if (!nic.hca.empty()) return nic.hca;
    return nic.netdevs.empty() ? std::string("NIC") : nic.netdevs.front();
}

// The link from the topology (sysfs-augmented), else from the node's sysfs
// PCIe records.
void fill_link(PcieDevice& device, const PciLinkState& link, const LaunchContext& ctx) {
    if (link.current && link.max) {
        device.current = link.current;
        device.max = link.max;
        device.source = ctx.topology->source;
        return;
    }
    if (!ctx.node.pcie_links) return;
    auto it = ctx.node.pcie_links->find(device.busid);
    if (it == ctx.node.pcie_links->end()) return;
    if (it->second.current.width > 0 || it->second.current.speed_gts > 0) device.current = it->second.current;
    if (it->second.max.width > 0 || it->second.max.speed_gts > 0) device.max = it->second.max;
    device.source = ctx.node.pcie_links.source();
}

std::vector<PcieDevice> pcie_devices(const LaunchContext& ctx) {
    std::vector<PcieDevice> devices;
    for (const Gpu& gpu : ctx.topology->gpus) {
        PcieDevice device{true, "GPU " + std::to_string(gpu.index), gpu.busid, {}, {}, {}};
        fill_link(device, gpu.link, ctx);
        devices.push_back(std::move(device));
    }
    for (const Nic& nic : ctx.topology->nics) {
        if (nic.busid.empty()) continue;
        PcieDevice device{false, "NIC " + nic_name(nic), nic.busid, {}, {}, {}};
        fill_link(device, nic.link, ctx);
        devices.push_back(std::move(device));
    }
    return devices;
}

std::string describe_link(const PcieLink& link) {
    std::string text;
    if (link.speed_gts > 0) text += rules::format_number(link.speed_gts) + " GT/s";
    if (link.width > 0) text += std::string(text.empty() ? "" : " ") + "x" + std::to_string(link.width);
    return text.empty() ? "unknown" : text;
}

bool below(double current, double max) { return current > 0 && max > 0 && current + 1e-6 < max; }

// What is degraded, in words; empty when the link is as wide and (for NICs)
// as fast as it can be. GPUs lower their link speed when idle to save power,
// so for them only a narrower link is a defect.
std::string degradation(const PcieDevice& device) {
    std::vector<std::string> parts;
    if (below(device.current->width, device.max->width)) {
        parts.push_back("x" + std::to_string(device.current->width) + " of x" + std::to_string(device.max->width) +
                        " lanes");
    }
    if (!device.gpu && below(device.current->speed_gts, device.max->speed_gts)) {
        parts.push_back(rules::format_number(device.current->speed_gts) + " of " +
                        rules::format_number(device.max->speed_gts) + " GT/s");
    }
    return join(parts, " and ");
}

void check_pcie_degraded(const RuleInput& in, RuleOutput& out) {
    const LaunchContext& ctx = in.ctx;
    if (!ctx.topology) {
        out.unknown("cannot tell which PCIe devices are GPUs or NICs because the node topology is unknown: " +
                    ctx.topology.reason());
        return;
    }
    std::vector<PcieDevice> devices = pcie_devices(ctx);
    if (devices.empty()) return;
    bool any_link = false;
    for (const auto& device : devices) {
        if (!device.current || !device.max) continue;
        any_link = true;
        std::string degraded = degradation(device);
        if (degraded.empty()) continue;
        std::string share =
            device.current->width > 0 && device.max->width > 0 && device.current->width < device.max->width
                ? " (" + std::to_string(100 * device.current->width / device.max->width) + "% of its lanes)"
                : std::string();
        Finding& finding = out.fire(device.name + " (" + device.busid + ") PCIe link runs at " + degraded + share +
                                    ": host-device copies and RDMA through it are capped below the node's design, "
                                    "with no error anywhere");
        finding.evidence.emplace_back("device", device.name);
        finding.evidence.emplace_back("busid", device.busid);
        finding.evidence.emplace_back("current_link", describe_link(*device.current));
        finding.evidence.emplace_back("max_link", describe_link(*device.max));
        finding.evidence.emplace_back("source", device.source);
        finding.remediation.push_back(RemediationOp::manual_step("drain the node and reseat or replace " + device.name +
                                                                 " (" + device.busid +
                                                                 ") or its riser/cable; "
                                                                 "confirm with lspci -vv -s " +
                                                                 device.busid + " (LnkSta against LnkCap)"));
    }
    if (!any_link) {
        out.unknown(
            "cannot tell whether GPU and NIC PCIe links are degraded: no current and maximum link state for "
            "them (hwloc XML records only the current bandwidth; sysfs current_link_* / max_link_* not read: " +
            (ctx.node.pcie_links ? std::string("no record for their bus ids") : ctx.node.pcie_links.reason()) + ")");
    }
}

// "1 GPU", "4 GPUs".
std::string count_of(std::size_t n, const std::string& noun) {
    return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// One inventory count that differs from the profile.
void report_count(RuleOutput& out, const Profile& profile, const std::string& noun, std::size_t found, int expected,
                  const std::vector<std::string>& seen, const std::string& source, const std::string& why) {
    if (found == static_cast<std::size_t>(expected)) return;
    Finding& finding = out.fire("node has " + count_of(found, noun) + ", profile " + profile.name + " expects " +
                                std::to_string(expected) + ": " + why);
    finding.evidence.emplace_back("found", count_of(found, noun));
    finding.evidence.emplace_back("expected", std::to_string(expected) + " (profile " + profile.name + ")");
    finding.evidence.emplace_back("present", seen.empty() ? "none" : join(seen));
    finding.evidence.emplace_back("source", source);
    finding.remediation.push_back(RemediationOp::manual_step(
        "drain the node (scontrol update nodename=<node> state=drain reason=\"" + noun + "s " + std::to_string(found) +
        "/" + std::to_string(expected) + "\") and check it with nvidia-smi, lspci and ibstat"));
}

void check_inventory(const RuleInput& in, RuleOutput& out) {
    const Profile::Node& expected = in.profile.node;
    if (!expected.gpus && !expected.rdma_nics && !expected.active_ib_ports) return;
    const LaunchContext& ctx = in.ctx;
    if (!ctx.topology) {
        out.unknown("cannot count the node's GPUs, RDMA NICs and IB ports because the node topology is unknown: " +
                    ctx.topology.reason());
        return;
    }
    const NodeTopology& topo = *ctx.topology;
    if (expected.gpus) {
        std::vector<std::string> seen;
        for (const Gpu& gpu : topo.gpus) seen.push_back(gpu.busid);
        report_count(out, in.profile, "GPU", topo.gpus.size(), *expected.gpus, seen, topo.source,
                     "a GPU that fell off the bus or is hidden leaves jobs with fewer ranks per node or fails them "
                     "late");
    }
    if (expected.rdma_nics) {
        std::vector<std::string> seen;
        for (const Nic& nic : topo.nics) {
            if (!nic.hca.empty()) seen.push_back(nic.hca + (nic.busid.empty() ? "" : " (" + nic.busid + ")"));
        }
        report_count(out, in.profile, "RDMA NIC", seen.size(), *expected.rdma_nics, seen, topo.source,
                     "NCCL spreads traffic over the NICs it finds, so a missing NIC silently removes a rail");
    }
    if (expected.active_ib_ports) {
        std::vector<std::string> seen;
        for (const Nic& nic : topo.nics) {
            for (const IbPort& port : nic.ports) {
                if (port.state == "ACTIVE") seen.push_back(nic.hca + ":" + std::to_string(port.number));
            }
        }
        report_count(out, in.profile, "ACTIVE IB/RoCE port", topo.active_ib_port_count(), *expected.active_ib_ports,
                     seen, topo.source,
                     "NCCL uses only ACTIVE ports, so each missing one silently removes a rail of fabric bandwidth");
    }
}

const TableRule kPcieDegraded{
    RuleInfo{
        .id = "hw.pcie-degraded",
        .title = "GPU or NIC PCIe link below its capability",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeNode | kScopeLive | kScopeCli,
        .checks = "For every GPU and NIC of the node, compares the PCIe link's current width and speed "
                  "(sysfs current_link_width / current_link_speed) with its maximum (max_link_*). NICs fire on a "
                  "narrower or slower link. GPUs fire only on a narrower link: NVIDIA GPUs drop their link speed "
                  "(down to 2.5 GT/s) while idle to save power and raise it under load, so a low GPU link speed "
                  "at launch time is normal; a GPU in a slower slot is therefore not detected.",
        .why = "A link that trained at x8 instead of x16, or a NIC at Gen4 instead of Gen5, halves the bandwidth "
               "of every host-device copy and every GPUDirect RDMA transfer through it. Nothing logs it after boot; "
               "the node just runs slower and, in a collective, slows every other node.",
        .evidence = "The device, its PCI bus id, its current and maximum link (speed and width), and whether the "
                    "values came from the topology or the node's sysfs.",
        .fix = "Drain the node; reseat or replace the device, riser or cable, then confirm with lspci -vv "
               "(LnkSta against LnkCap).",
    },
    check_pcie_degraded};

const TableRule kInventory{
    RuleInfo{
        .id = "hw.inventory",
        .title = "GPU, RDMA NIC or IB port count differs from the profile",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeNode | kScopeCli,
        .checks = "Counts the node's GPUs, RDMA NICs (devices with an RDMA name such as mlx5_0) and ACTIVE "
                  "IB/RoCE ports in the topology and compares each with the profile's node.gpus, node.rdma_nics "
                  "and node.active_ib_ports. Quiet for counts the profile leaves unset.",
        .why = "A GPU that fell off the bus, a NIC whose driver did not bind, or a port that is down does not "
               "stop NCCL: it builds rings over what it finds, so the node silently loses a rail of bandwidth, or "
               "the job fails late when it wants more GPUs than the node has.",
        .evidence = "For each count that differs: the number found, the number expected, the devices or ports "
                    "present, and the topology source.",
        .fix = "Drain the node and check it with nvidia-smi, lspci and ibstat; reseat or replace what is missing.",
    },
    check_inventory};

// ---------------------------------------------------------------------------
// hw.pcie-acs-p2p

std::string hex16(std::uint16_t v) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string text = "0x";
    for (int shift = 12; shift >= 0; shift -= 4) text += kDigits[(v >> shift) & 0xfU];
    return text;
}

std::string acs_bits(std::uint16_t control) {
    std::vector<std::string> names;
    if ((control & PciCapabilities::kAcsSourceValidation) != 0) names.emplace_back("Source Validation");
    if ((control & PciCapabilities::kAcsRequestRedirect) != 0) names.emplace_back("P2P Request Redirect");
    if ((control & PciCapabilities::kAcsCompletionRedirect) != 0) names.emplace_back("P2P Completion Redirect");
    return join(names);
}

constexpr std::uint16_t kAcsBlocking = PciCapabilities::kAcsSourceValidation | PciCapabilities::kAcsRequestRedirect |
                                       PciCapabilities::kAcsCompletionRedirect;

// The bridges a GPU's and a NIC's peer traffic crosses below the switch they
// share: those after their common prefix ("nearest the CPU first"). Empty
// when they share no bridge: then the traffic goes through the root complex
// whatever ACS says.
std::vector<std::string> p2p_bridges(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    std::size_t common = 0;
    while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
    if (common == 0) return {};
    std::vector<std::string> out(a.begin() + static_cast<std::ptrdiff_t>(common), a.end());
    out.insert(out.end(), b.begin() + static_cast<std::ptrdiff_t>(common), b.end());
    return out;
}

void check_pcie_acs_p2p(const RuleInput& in, RuleOutput& out) {
    if (in.profile.node.virtual_machine) return;  // in a VM, ACS must stay on
    const LaunchContext& ctx = in.ctx;
    rules::Condition bare = rules::node_is_vm(ctx, false);
    rules::Condition topo = rules::topology_known(ctx);
    rules::Condition caps = rules::pci_capabilities_known(ctx, "the bridges' ACS settings");
    if (!rules::all_hold(out, "whether PCIe ACS redirects GPU-NIC peer traffic", {bare, topo, caps})) return;

    const auto& capabilities = *ctx.node.pci_capabilities;
    std::map<std::string, std::string> offending;  // bridge -> "ACS Control 0x.. (bits) between GPU .. and NIC .."
    std::set<std::string> unreadable;
    for (const Gpu& gpu : ctx.topology->gpus) {
        for (const Nic& nic : ctx.topology->nics) {
            if (nic.busid.empty()) continue;
            for (const auto& bridge : p2p_bridges(gpu.pci_bridges, nic.pci_bridges)) {
                auto it = capabilities.find(bridge);
                if (it == capabilities.end() || !it->second.extended_readable) {
                    unreadable.insert(bridge);
                    continue;
                }
                if (!it->second.acs_control || (*it->second.acs_control & kAcsBlocking) == 0) continue;
                if (offending.count(bridge) != 0) continue;
                offending[bridge] = "ACS Control " + hex16(*it->second.acs_control) + " (" +
                                    acs_bits(*it->second.acs_control) + ") between GPU " + gpu.busid + " and NIC " +
                                    nic_name(nic) + " " + nic.busid;
            }
        }
    }
    if (offending.empty()) {
        if (!unreadable.empty()) {
            out.unknown(
                "cannot tell whether PCIe ACS redirects GPU-NIC peer traffic because the extended "
                "configuration space of " +
                join(std::vector<std::string>(unreadable.begin(), unreadable.end())) +
                " could not be read past its first 64 bytes, or not at all (the extended space needs root)");
        }
        return;
    }
    std::vector<std::string> bridges;
    for (const auto& entry : offending) bridges.push_back(entry.first);
    Finding& finding =
        out.fire("PCIe ACS is enabled on " + std::to_string(bridges.size()) + " bridge" +
                 (bridges.size() == 1 ? "" : "s") + " between GPUs and NICs on this bare-metal node (" + join(bridges) +
                 "): GPUDirect RDMA and peer-to-peer traffic is redirected through the root complex, "
                 "which slows it or hangs it");
    for (const auto& [bridge, what] : offending) finding.evidence.emplace_back(bridge, what);
    finding.evidence.emplace_back("virtualization", *ctx.node.virtualization);
    finding.evidence.emplace_back("source", ctx.node.pci_capabilities.source());
    std::string setpci;
    for (const auto& bridge : bridges) setpci += "; setpci -s " + bridge + " ECAP_ACS+0x6.w=0000";
    finding.remediation.push_back(RemediationOp::manual_step(
        "disable ACS on the GPU-NIC bridges: in the BIOS (PCIe ACS / ACS Control off), or at every boot" + setpci));
}

const TableRule kPcieAcsP2p{
    RuleInfo{
        .id = "hw.pcie-acs-p2p",
        .title = "PCIe ACS redirects GPU-NIC peer traffic",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeNode | kScopeCli,
        .checks = "On bare metal only (the node is no VM and the profile does not say `node.virtual_machine`): "
                  "for each GPU and NIC that share a PCIe switch, the bridges below the switch they share. Each "
                  "bridge's ACS Control register (ACS extended capability, ID 0x000D, register at +6 in the binary "
                  "`/sys/bus/pci/devices/<bridge>/config`) must have Source Validation (bit 0), P2P Request Redirect "
                  "(bit 2) and P2P Completion Redirect (bit 3) clear. Reading the extended configuration space needs "
                  "root: node checks run as root; elsewhere the rule says it cannot tell.",
        .why = "With ACS redirect on, every peer-to-peer request between a GPU and a NIC under the same switch goes "
               "up to the root complex and back: GPUDirect RDMA loses most of its bandwidth or hangs (NCCL's "
               "troubleshooting guide asks for ACS off on bare metal). In a VM ACS must stay on, for isolation, so "
               "the rule does not run there.",
        .evidence = "Each bridge with its ACS Control value and bits, the GPU and NIC it separates, and where the "
                    "configuration space was read.",
        .fix = "Turn ACS off for the GPU-NIC switches in the BIOS, or at every boot with `setpci -s <bridge> "
               "ECAP_ACS+0x6.w=0000` for each bridge named. In node checks the node is drained until then.",
    },
    check_pcie_acs_p2p};

}  // namespace

void register_hardware_rules(std::vector<const Rule*>& rules) {
    rules.push_back(&kPcieDegraded);
    rules.push_back(&kInventory);
    rules.push_back(&kPcieAcsP2p);
}

}  // namespace launchguard
