#include "node/slurm_node.h"

#include <algorithm>

namespace launchguard {
namespace {

// State flags under which Slurm or an administrator has taken the node out:
// launchguard neither drains nor resumes it.
constexpr std::string_view kHandsOffFlags[] = {"DOWN",          "FAIL",         "FAILING",       "REBOOT_REQUESTED",
                                               "REBOOT_ISSUED", "POWERED_DOWN", "POWERING_DOWN", "FUTURE"};

std::string_view strip_stamp(std::string_view reason) {
    // scontrol prints "Reason=<text> [<user>@<time>]".
    if (reason.ends_with(']')) {
        auto open = reason.rfind(" [");
        if (open != std::string_view::npos && reason.substr(open).find('@') != std::string_view::npos) {
            reason = reason.substr(0, open);
        }
    }
    return reason;
}

}  // namespace

bool SlurmNodeState::has(std::string_view flag) const {
    return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

bool SlurmNodeState::drained_by_launchguard() const { return has("DRAIN") && reason.starts_with(kDrainReasonPrefix); }

Result<SlurmNodeState> parse_scontrol_node(std::string_view text) {
    SlurmNodeState state;
    // The first line only: --oneliner prints one record per node.
    text = text.substr(0, text.find('\n'));
    auto field_start = [&](std::string_view key) -> std::size_t {
        for (std::size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
            if (at == 0 || text[at - 1] == ' ') return at + key.size();
        }
        return std::string_view::npos;
    };
    const std::size_t state_at = field_start("State=");
    if (state_at == std::string_view::npos) {
        return make_error("scontrol printed no State= for the node: '" + std::string(text.substr(0, 200)) + "'");
    }
    std::string_view states = text.substr(state_at, text.find(' ', state_at) - state_at);
    std::size_t start = 0;
    while (start <= states.size()) {
        std::size_t plus = states.find('+', start);
        if (plus == std::string_view::npos) plus = states.size();
        if (plus > start) state.flags.emplace_back(states.substr(start, plus - start));
        start = plus + 1;
    }
    // A trailing '*' (not responding) or '~' (powered down) belongs to sinfo's
    // short names, not scontrol's, but costs nothing to drop.
    for (auto& flag : state.flags) {
        while (!flag.empty() && (flag.back() == '*' || flag.back() == '~')) flag.pop_back();
    }
    const std::size_t reason_at = field_start("Reason=");
    if (reason_at != std::string_view::npos) {
        std::string_view reason = text.substr(reason_at);
        while (!reason.empty() && (reason.back() == ' ' || reason.back() == '\r')) reason.remove_suffix(1);
        state.reason = std::string(strip_stamp(reason));
    }
    return state;
}

SlurmNodePlan plan_slurm_node(const SlurmNodeState& state, const NodeVerdict& verdict, OnUnknown on_unknown) {
    SlurmNodePlan plan;
    for (std::string_view flag : kHandsOffFlags) {
        if (state.has(flag)) {
            plan.why = "node is " + std::string(flag) + ": left to Slurm and its administrators";
            return plan;
        }
    }
    const bool drained = state.has("DRAIN");
    const bool ours = state.drained_by_launchguard();
    if (drained && !ours) {
        plan.why = "drained by someone else (\"" + state.reason + "\"): left as it is";
        return plan;
    }
    const bool wants_drain = verdict.health == NodeHealth::degraded ||
                             (verdict.health == NodeHealth::unknown && on_unknown == OnUnknown::drain);
    if (wants_drain) {
        const std::string reason = drain_reason(verdict);
        if (ours && state.reason == reason) {
            plan.why = "already drained by launchguard for the same reason";
        } else {
            plan.action = SlurmNodeAction::drain;
            plan.reason = reason;
            plan.why = verdict.health == NodeHealth::unknown ? "check unknown and on-unknown = drain"
                       : ours                                ? "drained by launchguard before, now for another rule"
                                                             : "a blocking finding";
        }
        return plan;
    }
    if (verdict.health == NodeHealth::unknown) {
        plan.why = "check unknown: node state left as it is (on-unknown = keep)";
        return plan;
    }
    if (ours) {
        plan.action = SlurmNodeAction::resume;
        plan.why = "the check passes again: resuming launchguard's own drain (\"" + state.reason + "\")";
    } else {
        plan.why = "no change";
    }
    return plan;
}

std::vector<std::string> scontrol_update_args(const std::string& node, const SlurmNodePlan& plan) {
    switch (plan.action) {
        case SlurmNodeAction::drain:
            return {"update", "NodeName=" + node, "State=DRAIN", "Reason=" + plan.reason};
        case SlurmNodeAction::resume:
            return {"update", "NodeName=" + node, "State=RESUME"};
        case SlurmNodeAction::none:
            break;
    }
    return {};
}

}  // namespace launchguard
