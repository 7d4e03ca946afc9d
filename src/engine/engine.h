// Runs the rules against one launch and turns findings into a decision and a
// list of patches, according to the mode and to what the front end can apply.
// The engine never throws: a rule that throws becomes an "unknown" entry, so
// one defective rule cannot take a launch (or a slurmstepd) down.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "context/launch_context.h"
#include "finding/finding.h"
#include "finding/mode.h"
#include "profile/profile.h"

namespace launchguard {

enum class Decision { allow, patch, block };
std::string_view to_string(Decision decision);

struct EvaluationOptions {
    Mode mode = Mode::enforce;
    // Scope bits (rules/rule.h) the front end evaluates: the SPANK task hook
    // evaluates kScopeLive, the prolog kScopeNode, the CLI everything.
    unsigned scopes = 0;
    // Remediation kinds the front end can apply. A patch finding whose
    // operations are not all applicable cannot be patched.
    std::vector<RemediationOp::Kind> applicable;
    // Where the front end can apply a kind only for some targets (a pod can
    // set a variable in its env list, but not one its shell exports over
    // it), it says so per operation; unset = every operation of an
    // applicable kind.
    std::function<bool(const RemediationOp&)> can_apply_op;
    // Also patch blocking findings whose every operation the front end can
    // apply. The enroot hook does: carrying a host file into the container is
    // its purpose. Elsewhere a block stays a block unless the profile says patch.
    bool fix_blocking = false;
    // Only these rules (empty = all); used by tests and `--rule`.
    std::vector<std::string> only_rules;
};

struct Report {
    std::string profile;
    std::string profile_origin;
    Mode mode = Mode::enforce;
    Decision decision = Decision::allow;
    std::vector<Finding> findings;  // action = what happens under this mode
    std::vector<Unknown> unknowns;
    // Rules not run because they judge NCCL and the launch uses another
    // backend: the rule and why ("the command selects gloo: --backend gloo").
    std::vector<Unknown> not_applicable;
    std::vector<RemediationOp> patch;  // operations to apply, deduplicated, in rule order
    int rules_evaluated = 0;
};

class Rule;

Report evaluate(const LaunchContext& ctx, const Profile& profile, const EvaluationOptions& options);
// The same over an explicit rule list (tests inject their own rules).
Report evaluate(const LaunchContext& ctx, const Profile& profile, const EvaluationOptions& options,
                const std::vector<const Rule*>& rules);

// Every RemediationOp kind: the CLI prints them all.
std::vector<RemediationOp::Kind> all_remediation_kinds();

}  // namespace launchguard
