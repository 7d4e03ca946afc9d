// The node's RDMA ports and the job's shape (network_ports.h).
#include "rules/network_ports.h"

#include <string_view>

#include "util/text.h"

namespace launchguard::net_rules {

using rules::Condition;
using rules::join;

namespace {
constexpr std::string_view kActiveState = "ACTIVE";
}  // namespace

std::string port_name(const Nic& nic, const IbPort& port) { return nic.hca + ":" + std::to_string(port.number); }

bool is_active(const IbPort& port) { return port.state == kActiveState; }

std::vector<std::string> active_ports(const NodeTopology& topo) {
    std::vector<std::string> names;
    for (const auto& nic : topo.nics) {
        if (nic.hca.empty()) continue;
        for (const auto& port : nic.ports) {
            if (is_active(port)) names.push_back(port_name(nic, port));
        }
    }
    return names;
}

std::vector<std::string> active_hcas(const NodeTopology& topo) {
    std::vector<std::string> names;
    for (const auto& nic : topo.nics) {
        if (nic.hca.empty()) continue;
        if (std::any_of(nic.ports.begin(), nic.ports.end(), is_active)) names.push_back(nic.hca);
    }
    return names;
}

Condition node_has_rdma(const RuleInput& in) {
    const auto& node = in.profile.node;
    if (in.ctx.topology && in.ctx.topology->active_ib_port_count() > 0) return Condition::known(true);
    if (node.active_ib_ports.value_or(0) > 0 || node.rdma_nics.value_or(0) > 0) return Condition::known(true);
    // A pod handed RDMA devices (rdma/ib, nvidia.com/hostdev) runs where they exist.
    if (in.ctx.container.rdma_devices && !in.ctx.container.rdma_devices->empty()) return Condition::known(true);
    if (in.ctx.topology) return Condition::known(false);
    return Condition::unknown("the node topology is unknown (" + in.ctx.topology.reason() + ") and profile '" +
                              in.profile.name + "' declares no RDMA NICs");
}

Condition multi_node_job(const LaunchContext& ctx) {
    if (ctx.job.nodes) return Condition::known(*ctx.job.nodes > 1);
    return Condition::unknown("the job's node count is unknown: " + ctx.job.nodes.reason());
}

void add_rdma_evidence(Finding& finding, const RuleInput& in) {
    if (in.ctx.topology && in.ctx.topology->active_ib_port_count() > 0) {
        finding.evidence.emplace_back("active_ib_ports", join(active_ports(*in.ctx.topology)));
        finding.evidence.emplace_back("topology", in.ctx.topology->source);
    } else if (in.profile.node.active_ib_ports) {
        finding.evidence.emplace_back("profile_active_ib_ports", std::to_string(*in.profile.node.active_ib_ports));
    } else if (in.profile.node.rdma_nics) {
        finding.evidence.emplace_back("profile_rdma_nics", std::to_string(*in.profile.node.rdma_nics));
    } else if (in.ctx.container.rdma_devices && !in.ctx.container.rdma_devices->empty()) {
        finding.evidence.emplace_back("rdma_devices", join(*in.ctx.container.rdma_devices));
    }
}

std::string rdma_description(const RuleInput& in) {
    if (in.ctx.topology && in.ctx.topology->active_ib_port_count() > 0) {
        std::size_t count = in.ctx.topology->active_ib_port_count();
        return "a node with " + std::to_string(count) + " active IB/RoCE port" + (count == 1 ? "" : "s");
    }
    const auto& node = in.profile.node;
    if (node.active_ib_ports.value_or(0) == 0 && node.rdma_nics.value_or(0) == 0 && in.ctx.container.rdma_devices &&
        !in.ctx.container.rdma_devices->empty()) {
        return "a node whose RDMA devices the container is given (" + join(*in.ctx.container.rdma_devices) + ")";
    }
    return "a node that profile '" + in.profile.name + "' gives an IB/RoCE fabric";
}

}  // namespace launchguard::net_rules
