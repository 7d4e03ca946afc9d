// The node's RDMA ports and the job's shape, as the net.* rules read them
// (rules/network_rules.cpp and its sub-family files).
#pragma once

#include <string>
#include <vector>

#include "rules/rule.h"
#include "rules/rule_helpers.h"

namespace launchguard::net_rules {

std::string port_name(const Nic& nic, const IbPort& port);
bool is_active(const IbPort& port);
std::vector<std::string> active_ports(const NodeTopology& topo);
std::vector<std::string> active_hcas(const NodeTopology& topo);
// Does this node carry an InfiniBand/RoCE fabric NCCL should use? Its own
// active ports say yes; otherwise the profile's inventory does.
rules::Condition node_has_rdma(const RuleInput& in);
rules::Condition multi_node_job(const LaunchContext& ctx);
void add_rdma_evidence(Finding& finding, const RuleInput& in);
std::string rdma_description(const RuleInput& in);

// The sub-families, each registered in catalog order by register_network_rules.
void register_network_link_rules(std::vector<const Rule*>& rules);    // ib-port-degraded, gdr-*
void register_network_device_rules(std::vector<const Rule*>& rules);  // verbs-missing, imex-channel-missing

}  // namespace launchguard::net_rules
