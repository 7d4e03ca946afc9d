// A node check reduced to what the systems that act on node health need:
// one health state for the node (Slurm drains on it, node-problem-detector
// turns it into a condition) and one outcome per rule (the metrics file has a
// gauge for each). Also the short texts those systems show: a drain reason
// for `sinfo -R`, a message within node-problem-detector's output limit.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"

namespace launchguard {

// degraded: a blocking finding; warning: findings, none blocking;
// unknown: the check itself could not run or finish.
enum class NodeHealth { healthy, warning, degraded, unknown };
std::string_view to_string(NodeHealth health);

enum class RuleOutcome { pass, warn, block, unknown };
inline constexpr RuleOutcome kAllRuleOutcomes[] = {RuleOutcome::pass, RuleOutcome::warn, RuleOutcome::block,
                                                   RuleOutcome::unknown};
std::string_view to_string(RuleOutcome outcome);

struct RuleVerdict {
    std::string rule;
    RuleOutcome outcome = RuleOutcome::pass;
    std::string message;  // the first finding's message, or why the rule could not decide
};

struct NodeVerdict {
    NodeHealth health = NodeHealth::unknown;
    std::vector<RuleVerdict> rules;  // every rule evaluated, catalog order
    std::string problem;             // unknown: why the check did not run or finish
};

// `rules` are the ids the evaluation ran (node_check.h); a rule with both
// findings and unknowns takes its strongest finding.
NodeVerdict verdict_from_report(const Report& report, const std::vector<std::string>& rules);
NodeVerdict unknown_verdict(std::string problem);

// The rules with this outcome, in catalog order.
std::vector<const RuleVerdict*> rules_with(const NodeVerdict& verdict, RuleOutcome outcome);

// Every drain reason launchguard sets starts with this: it is how a later
// check tells its own drains from an administrator's (as NHC does with "NHC:").
inline constexpr std::string_view kDrainReasonPrefix = "launchguard:";
// "launchguard: hw.pcie-degraded", "+N" when more rules block; for a node that
// is not degraded, "launchguard: node check unknown".
std::string drain_reason(const NodeVerdict& verdict);

// node-problem-detector keeps at most max_output_length bytes of a plugin's
// stdout (80 unless its config says otherwise) and cuts the rest.
inline constexpr std::size_t kNpdMessageBytes = 80;
// One line of at most max_bytes naming the rule that decided: what NPD shows
// as the condition's message. Control and invalid UTF-8 bytes from the
// findings are escaped as printable_text (util/text_escape.h) writes them.
std::string npd_message(const NodeVerdict& verdict, std::size_t max_bytes = kNpdMessageBytes);

// The length of the longest prefix of at most max_bytes that ends at a UTF-8
// character boundary: messages quote paths and values.
std::size_t utf8_prefix(std::string_view text, std::size_t max_bytes);

}  // namespace launchguard
