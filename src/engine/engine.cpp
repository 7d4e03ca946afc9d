#include "engine/engine.h"

#include <algorithm>
#include <array>
#include <exception>

#include "context/memo_file_view.h"
#include "engine/rule_selection.h"
#include "nccl/nccl_config.h"
#include "rules/rule.h"

namespace launchguard {

std::string_view to_string(Decision decision) {
    switch (decision) {
        case Decision::allow:
            return "allow";
        case Decision::patch:
            return "patch";
        case Decision::block:
            return "block";
    }
    return "allow";
}

std::vector<RemediationOp::Kind> all_remediation_kinds() {
    using K = RemediationOp::Kind;
    return {K::set_env, K::unset_env, K::mount_file, K::shm_size, K::add_capability};
}

namespace {

bool can_apply(const Finding& finding, const EvaluationOptions& options) {
    if (finding.remediation.empty()) return false;
    return std::all_of(finding.remediation.begin(), finding.remediation.end(), [&](const RemediationOp& op) {
        return std::find(options.applicable.begin(), options.applicable.end(), op.kind) != options.applicable.end() &&
               (!options.can_apply_op || options.can_apply_op(op));
    });
}

// The action a finding gets under a mode. Rules propose, the profile
// configures, the mode and the front end's abilities decide.
Action resolve_action(Action configured, Mode mode, bool applicable, bool fix_blocking, bool fix_or_block) {
    if (fix_blocking && configured == Action::block && applicable && (mode == Mode::enforce || mode == Mode::patch)) {
        return Action::patch;
    }
    switch (mode) {
        case Mode::warn:
        case Mode::off:
            return Action::warn;
        case Mode::patch:
            if (configured == Action::patch && applicable) return Action::patch;
            if (fix_or_block && configured == Action::block) return applicable ? Action::patch : Action::block;
            return Action::warn;
        case Mode::enforce:
            if (configured == Action::patch) return applicable ? Action::patch : Action::block;
            return configured;
    }
    return Action::warn;
}

bool same_target(const RemediationOp& a, const RemediationOp& b) {
    if (a.kind != b.kind) return false;
    switch (a.kind) {
        case RemediationOp::Kind::set_env:
        case RemediationOp::Kind::unset_env:
        case RemediationOp::Kind::add_capability:
            return a.name == b.name;
        case RemediationOp::Kind::mount_file:
            return a.container_path == b.container_path;
        case RemediationOp::Kind::shm_size:
            return true;
        case RemediationOp::Kind::manual:
            return a.text == b.text;
    }
    return false;
}

void add_patch_ops(const Finding& finding, std::vector<RemediationOp>& patch) {
    for (const auto& op : finding.remediation) {
        auto existing = std::find_if(patch.begin(), patch.end(), [&](const auto& p) { return same_target(p, op); });
        if (existing == patch.end()) {
            patch.push_back(op);
        } else if (op.kind == RemediationOp::Kind::shm_size) {
            existing->bytes = std::max(existing->bytes, op.bytes);
        }
    }
}

// The patch (in rule order) and the decision of the report's findings.
void settle(Report& report) {
    report.patch.clear();
    for (const auto& finding : report.findings) {
        if (finding.action == Action::patch) add_patch_ops(finding, report.patch);
    }
    bool any_block = std::any_of(report.findings.begin(), report.findings.end(),
                                 [](const Finding& f) { return f.action == Action::block; });
    if (any_block) {
        report.decision = Decision::block;
    } else if (!report.patch.empty()) {
        report.decision = Decision::patch;
    } else {
        report.decision = Decision::allow;
    }
}

}  // namespace

bool is_per_task_rule(std::string_view rule_id) {
    static constexpr std::array<std::string_view, 5> kPerTask{
        "cpu.affinity-off-gpu", "cpu.affinity-partial", "cpu.bind-by-id",  // the CPU mask against the GPUs
        "power.governor", "power.turbo-off"};                              // the settings of the task's CPUs
    return std::find(kPerTask.begin(), kPerTask.end(), rule_id) != kPerTask.end();
}

bool rule_is_selected(const RuleInfo& info, const Profile& profile, const EvaluationOptions& options) {
    if ((info.scopes & options.scopes) == 0) return false;
    if (!options.only_rules.empty() &&
        std::find(options.only_rules.begin(), options.only_rules.end(), info.id) == options.only_rules.end()) {
        return false;
    }
    if (options.inputs != TaskInputs::any && is_per_task_rule(info.id) != (options.inputs == TaskInputs::per_task))
        return false;
    return profile.action_for(info.id, info.default_action) != Action::off;
}

std::vector<std::string> selected_rule_ids(const Profile& profile, const EvaluationOptions& options) {
    std::vector<std::string> ids;
    for (const Rule* rule : all_rules()) {
        if (rule_is_selected(rule->info(), profile, options)) ids.emplace_back(rule->info().id);
    }
    return ids;
}

Report evaluate(const LaunchContext& ctx, const Profile& profile, const EvaluationOptions& options) {
    return evaluate(ctx, profile, options, all_rules());
}

Report evaluate(const LaunchContext& ctx, const Profile& profile, const EvaluationOptions& options,
                const std::vector<const Rule*>& rules) {
    Report report;
    report.profile = profile.name;
    report.profile_origin = profile.origin;
    report.mode = options.mode;
    if (options.mode == Mode::off) return report;

    nccl::EffectiveConfig nccl_config;
    try {
        nccl_config = nccl::resolve(ctx);
    } catch (const std::exception& e) {
        report.unknowns.push_back({"nccl", std::string("could not resolve NCCL configuration: ") + e.what()});
    }
    SharedAnalysis shared;
    std::optional<MemoFileView> files;
    if (ctx.files) files.emplace(*ctx.files);
    const RuleInput input{ctx, profile, nccl_config, shared, files ? &*files : nullptr};

    for (const Rule* rule : rules) {
        const RuleInfo& info = rule->info();
        if (!rule_is_selected(info, profile, options)) continue;
        if (info.nccl_only && ctx.comm_backend && *ctx.comm_backend != CommBackend::nccl) {
            report.not_applicable.push_back(
                {std::string(info.id), "the launch uses " + std::string(to_string(*ctx.comm_backend)) + ", not NCCL (" +
                                           ctx.comm_backend.source() + ")"});
            continue;
        }

        ++report.rules_evaluated;
        RuleOutput out(info);
        try {
            rule->evaluate(input, out);
        } catch (const std::exception& e) {
            report.unknowns.push_back({std::string(info.id), std::string("rule failed: ") + e.what()});
            continue;
        } catch (...) {
            report.unknowns.push_back({std::string(info.id), "rule failed with an unknown error"});
            continue;
        }
        for (auto& finding : out.findings()) {
            // A profile override replaces the rule's proposal (which may
            // already depend on the profile, e.g. block on MNNVL profiles).
            Action configured = profile.action_for(info.id, finding.action);
            if (configured == Action::off) continue;
            finding.action = resolve_action(configured, options.mode, can_apply(finding, options), options.fix_blocking,
                                            finding.fix_or_block);
            report.findings.push_back(std::move(finding));
        }
        for (auto& unknown : out.unknowns()) report.unknowns.push_back(std::move(unknown));
    }

    settle(report);
    return report;
}

Report part_of(const Report& full, TaskInputs inputs) {
    const auto outside = [inputs](const std::string& rule_id) {
        return inputs != TaskInputs::any && is_per_task_rule(rule_id) != (inputs == TaskInputs::per_task);
    };
    Report part = full;
    std::erase_if(part.findings, [&](const Finding& f) { return outside(f.rule); });
    std::erase_if(part.unknowns, [&](const Unknown& u) { return outside(u.rule); });
    std::erase_if(part.not_applicable, [&](const Unknown& u) { return outside(u.rule); });
    settle(part);
    return part;
}

}  // namespace launchguard
