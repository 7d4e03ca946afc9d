// What `launchguard node-check --slurm` does to its node, decided from the
// node's state as `scontrol show node --oneliner` prints it and the check's
// verdict. Pure: the adapter (src/cli/node_check_slurm.cpp) runs scontrol.
//
// The rule NHC follows: a node an administrator drained or that Slurm set
// DOWN is never touched; launchguard resumes only the drains whose reason
// starts with its own prefix (node_verdict.h, kDrainReasonPrefix).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "node/node_check_config.h"
#include "node/node_verdict.h"
#include "util/error.h"

namespace launchguard {

struct SlurmNodeState {
    std::vector<std::string> flags;  // State=IDLE+DRAIN -> {"IDLE", "DRAIN"}
    std::string reason;              // without the " [user@time]" scontrol appends
    [[nodiscard]] bool has(std::string_view flag) const;
    [[nodiscard]] bool drained_by_launchguard() const;
};

// From `scontrol show node NAME --oneliner`: State= and Reason= (the reason
// runs to the end of the line, spaces included).
Result<SlurmNodeState> parse_scontrol_node(std::string_view oneliner);

enum class SlurmNodeAction { none, drain, resume };

struct SlurmNodePlan {
    SlurmNodeAction action = SlurmNodeAction::none;
    std::string reason;  // drain: the reason to set
    std::string why;     // one line for the log
};

SlurmNodePlan plan_slurm_node(const SlurmNodeState& state, const NodeVerdict& verdict, OnUnknown on_unknown);

// scontrol's arguments for the plan (no shell: each is one argv entry).
std::vector<std::string> scontrol_update_args(const std::string& node, const SlurmNodePlan& plan);

}  // namespace launchguard
