#include "slurm_script/script_review.h"

#include <algorithm>
#include <utility>

namespace launchguard::slurm_script {
namespace {

void merge_into(Report& merged, const StepReview& step, bool several_steps) {
    for (auto finding : step.report.findings) {
        finding.evidence.insert(finding.evidence.begin(), {"step", step.launch.label});
        merged.findings.push_back(std::move(finding));
    }
    for (auto unknown : step.report.unknowns) {
        if (several_steps) unknown.reason = step.launch.label + ": " + unknown.reason;
        merged.unknowns.push_back(std::move(unknown));
    }
    for (auto skipped : step.report.not_applicable) {
        if (several_steps) skipped.reason = step.launch.label + ": " + skipped.reason;
        merged.not_applicable.push_back(std::move(skipped));
    }
    for (const auto& note : step.launch.notes) merged.unknowns.push_back({"review", step.launch.label + ": " + note});
    merged.patch.insert(merged.patch.end(), step.report.patch.begin(), step.report.patch.end());
    merged.rules_evaluated = std::max(merged.rules_evaluated, step.report.rules_evaluated);
    if (step.report.decision == Decision::block ||
        (step.report.decision == Decision::patch && merged.decision == Decision::allow)) {
        merged.decision = step.report.decision;
    }
}

bool same_operation(const RemediationOp& a, const RemediationOp& b) {
    return a.kind == b.kind && a.name == b.name && a.value == b.value && a.host_path == b.host_path &&
           a.container_path == b.container_path && a.readonly == b.readonly && a.bytes == b.bytes && a.text == b.text;
}

// A mount whose destination a literal --container-mounts entry of the step
// already holds: adding a second entry for it would not fix anything.
bool already_mounted(const std::vector<ContainerMount>& mounts, const RemediationOp& op) {
    return op.kind == RemediationOp::Kind::mount_file &&
           std::any_of(mounts.begin(), mounts.end(), [&](const ContainerMount& mount) {
               return mount.target_known && mount.target == op.container_path;
           });
}

std::vector<RemediationOp::Kind> applicable_kinds(Runtime runtime) {
    std::vector<RemediationOp::Kind> kinds;
    for (auto kind : all_remediation_kinds()) {
        RemediationOp op;
        op.kind = kind;
        if (script_can_apply(op, runtime)) kinds.push_back(kind);
    }
    return kinds;
}

// A step that runs a shell builtin or a coreutils-style command (a clean-up
// `srun rm -rf /dev/shm/nccl-*`) uses no collective library: the rules that
// judge NCCL are not applicable to it, the others still are.
void skip_nccl_rules(const StepLaunch& launch, EvaluationOptions& options, std::vector<Unknown>& skipped) {
    if (launch.utility.empty()) return;
    for (const Rule* rule : all_rules()) {
        const RuleInfo& info = rule->info();
        if ((info.scopes & options.scopes) == 0) continue;
        if (!info.nccl_only) {
            options.only_rules.emplace_back(info.id);
            continue;
        }
        skipped.push_back({std::string(info.id), "the step runs " + launch.utility +
                                                     " (a shell builtin or coreutils-style command), which starts no "
                                                     "NCCL program"});
    }
}

}  // namespace

Result<ScriptReview> review_script(std::string_view text, const std::string& path, const Profile& profile, Mode mode) {
    auto script = parse_batch_script(text, path);
    if (!script) return script.error();

    ScriptReview review;
    review.script = std::move(script.value());
    std::size_t step_index = 0;
    for (auto& launch : launches_from_script(review.script, profile)) {
        EvaluationOptions options;
        options.mode = mode;
        options.scopes = kScriptScopes;
        options.applicable = applicable_kinds(launch.context.runtime);
        std::vector<Unknown> skipped;
        skip_nccl_rules(launch, options, skipped);
        StepReview step;
        step.report = evaluate(launch.context, profile, options);
        for (auto& skip : skipped) step.report.not_applicable.push_back(std::move(skip));
        step.fixes.step_line = launch.line;
        if (step_index < review.script.steps.size()) {
            // One launch per srun step, in order (or one batch step when there is none).
            step.fixes.options_line = review.script.steps[step_index].options_line;
            step.fixes.options_column = review.script.steps[step_index].options_column;
            const SrunStep& srun = review.script.steps[step_index];
            if (srun.mpi) {
                step.fixes.mpi = srun.mpi;
                step.fixes.srun = srun.srun;
                step.fixes.mpi_options_line = srun.mpi_options_line;
                step.fixes.mpi_options_column = srun.mpi_options_column;
            }
        }
        ++step_index;
        step.fixes.runtime = launch.context.runtime;
        for (const auto& finding : step.report.findings) {
            if (finding.action != Action::block && finding.action != Action::patch) continue;
            for (const auto& op : finding.remediation) {
                if (already_mounted(launch.mounts, op)) continue;
                // Two rules often propose the same mount and variable: say it once.
                if (std::none_of(step.fixes.ops.begin(), step.fixes.ops.end(),
                                 [&](const RemediationOp& seen) { return same_operation(seen, op); })) {
                    step.fixes.ops.push_back(op);
                }
            }
        }
        step.launch = std::move(launch);
        review.steps.push_back(std::move(step));
    }

    review.report.profile = profile.name;
    review.report.profile_origin = profile.origin;
    review.report.mode = mode;
    for (const auto& step : review.steps) merge_into(review.report, step, review.steps.size() > 1);
    for (const auto& note : review.script.notes) review.report.unknowns.push_back({"review", note});
    return review;
}

Result<std::string> patched_script(const ScriptReview& review) {
    std::vector<StepFixes> fixes;
    for (const auto& step : review.steps) fixes.push_back(step.fixes);
    return apply_fixes(review.script, fixes);
}

}  // namespace launchguard::slurm_script
