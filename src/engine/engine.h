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

// Which rules run, by whether they read the task's own CPU mask or GPUs
// (is_per_task_rule): a Slurm step's tasks share the verdict of the rest and
// judge only these each.
enum class TaskInputs { any, shared, per_task };

// The rules that read what differs between a Slurm step's tasks on one node:
// the task's CPU mask or the GPUs assigned to it (--gpu-bind sets
// CUDA_VISIBLE_DEVICES per task). A rule that reads either belongs here.
bool is_per_task_rule(std::string_view rule_id);

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
    TaskInputs inputs = TaskInputs::any;
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

// The part of `full` whose rules read `inputs`: the other rules' findings and
// unknowns left out, the patch and decision settled again over the rest.
Report part_of(const Report& full, TaskInputs inputs);

// Every RemediationOp kind: the CLI prints them all.
std::vector<RemediationOp::Kind> all_remediation_kinds();

}  // namespace launchguard
