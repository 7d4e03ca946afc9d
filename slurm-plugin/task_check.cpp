#include "task_check.h"

#include <utility>

#include "decision_log.h"
#include "pyxis.h"
#include "rules/rule.h"
#include "step_node.h"
#include "step_verdict.h"

namespace launchguard::slurm {
namespace {

// Special step ids from slurm/slurm.h (22.05), not exposed through spank.h.
constexpr std::uint32_t kBatchStep = 0xfffffffb;        // SLURM_BATCH_SCRIPT
constexpr std::uint32_t kExternStep = 0xfffffffc;       // SLURM_EXTERN_CONT
constexpr std::uint32_t kInteractiveStep = 0xfffffffa;  // SLURM_INTERACTIVE_STEP

// Never freed: the task execs the job's program (or exits) right after
// task_init, which drops the address space at once; freeing the check's
// largest objects first would only write to heap pages still shared with
// slurmstepd, one copy-on-write fault each.
template <typename T>
T& kept_until_exec(T&& object) {
    return *new T(std::forward<T>(object));
}

// "batch", "extern", "interactive" or the step's number, for the log.
std::string step_name(std::optional<std::uint32_t> step) {
    if (!step) return "?";
    if (*step == kBatchStep) return "batch";
    if (*step == kExternStep) return "extern";
    if (*step == kInteractiveStep) return "interactive";
    return std::to_string(*step);
}

}  // namespace

TaskAnswer cannot_check(const std::string& reason, bool first_task, bool block) {
    TaskAnswer answer;
    answer.log_error.push_back(reason);
    if (first_task) answer.tell_user.push_back(reason);
    answer.block = block;
    return answer;
}

TaskAnswer check_task(TaskView view, const Result<Profile>& profile, const PluginConfig& config, PhaseTimes* times,
                      TaskAnswer* shared) {
    if (!profile)
        return cannot_check("cannot load profile: " + profile.error().to_string(), view.first_task,
                            config.on_error == OnError::block);

    PhaseTimer placement_timer(times, "placement");
    Placement placement = place_task(view.forked_in, view.now, view.root_directory, view.host, view.env);
    placement_timer.stop();

    ProbeOptions probe = node_probe_options(config);
    probe.environment = std::move(view.env);
    probe.use_current_process_env = false;
    probe.node_snapshot = std::move(view.node);
    if (view.job_nodes) probe.job_nodes = static_cast<int>(*view.job_nodes);
    probe.timings = times;
    probe.per_task_facts_only = view.shared.has_value();
    PhaseTimer context_timer(times, view.shared ? "per_task_context" : "build_context");
    auto& context = kept_until_exec(build_context(std::move(probe)));
    context_timer.stop();
    if (!context)
        return cannot_check("cannot inspect the task: " + context.error().to_string(), view.first_task,
                            config.on_error == OnError::block);

    if (placement.runtime) context->runtime = *placement.runtime;
    context->host = std::move(placement.host);
    if (context->runtime == Runtime::pyxis) {
        PyxisOptions pyxis = pyxis_options(context->env.value());
        if (pyxis.image) {
            context->container.image = Fact<std::string>::known(*pyxis.image, "--container-image");
        } else if (view.root_directory) {
            context->container.image =
                Fact<std::string>::known("enroot container " + *view.root_directory, "/proc/self/mountinfo");
        }
        context->container.requested_mounts = std::move(pyxis.mounts);
    }

    EvaluationOptions options;
    options.mode = view.mode;
    options.scopes = kScopeLive;
    options.applicable = {RemediationOp::Kind::set_env, RemediationOp::Kind::unset_env};
    options.inputs = view.shared ? TaskInputs::per_task : TaskInputs::any;
    PhaseTimer rules_timer(times, "rules");
    const Report& report = kept_until_exec(evaluate(*context, *profile, options));
    rules_timer.stop();

    PhaseTimer report_timer(times, "report");
    const DecisionSite site{"task_init", view.job_id ? std::to_string(*view.job_id) : "?", step_name(view.step_id),
                            view.node_name};
    const auto verdict = [&](const Report& part, bool with_lines) {
        TaskAnswer out;
        out.judged = true;
        if (with_lines) out.log_info.push_back(decision_line(site, part));
        if (with_lines && !part.findings.empty()) out.tell_user.push_back(user_message(part, context->runtime));
        out.block = part.decision == Decision::block;
        for (const auto& op : out.block ? std::vector<RemediationOp>{} : part.patch) {
            if (op.kind == RemediationOp::Kind::set_env) out.env_patch.push_back({op.name, op.value});
            if (op.kind == RemediationOp::Kind::unset_env) out.env_patch.push_back({op.name, std::nullopt});
        }
        return out;
    };
    TaskAnswer step_part = view.shared ? std::move(*view.shared) : verdict(part_of(report, TaskInputs::shared), true);
    if (shared != nullptr && !view.shared) *shared = step_part;
    const Report own = part_of(report, TaskInputs::per_task);
    TaskAnswer combined = combine_verdicts(std::move(step_part), verdict(own, !own.findings.empty()), view.first_task);
    if (!placement.warning.empty() && view.first_task)
        combined.log_error.insert(combined.log_error.begin(), placement.warning);
    return combined;
}

}  // namespace launchguard::slurm
