// REMOTE context, slurm_spank_task_init: runs in the task process just before
// exec, as the job user, after pyxis (when listed after it) has moved the
// process into the container. What it sees is what NCCL will see; what the
// host would have given NCCL comes from user_init (host_side.cpp).
#include <string>
#include <utility>

#include "decision_log.h"
#include "probe/context_builder.h"
#include "profile/profile.h"
#include "pyxis.h"
#include "rules/rule.h"
#include "spank_glue.h"
#include "step_node.h"
#include "step_profile.h"

namespace launchguard::slurm {
namespace {

// Special step ids from slurm/slurm.h (22.05), not exposed through spank.h.
constexpr std::uint32_t kBatchStep = 0xfffffffb;        // SLURM_BATCH_SCRIPT
constexpr std::uint32_t kExternStep = 0xfffffffc;       // SLURM_EXTERN_CONT
constexpr std::uint32_t kInteractiveStep = 0xfffffffa;  // SLURM_INTERACTIVE_STEP

std::string step_name(std::optional<std::uint32_t> step) {
    if (!step) return "?";
    if (*step == kBatchStep) return "batch";
    if (*step == kExternStep) return "extern";
    if (*step == kInteractiveStep) return "interactive";
    return std::to_string(*step);
}

Mode effective_mode(const PluginConfig& config, std::string& refusal) {
    auto requested = requested_user_mode();
    if (!requested) return config.mode;
    if (!user_may_choose(config, *requested)) {
        refusal = "--launchguard=" + std::string(to_string(*requested)) +
                  " is not allowed on this cluster (allowed: " + allowed_user_modes(config) + ")";
        return config.mode;
    }
    return *requested;
}

int apply_patch(spank_t sp, const Report& report) {
    for (const auto& op : report.patch) {
        if (op.kind != RemediationOp::Kind::set_env && op.kind != RemediationOp::Kind::unset_env) continue;
        const spank_err_t rc = op.kind == RemediationOp::Kind::set_env
                                   ? spank_setenv(sp, op.name.c_str(), op.value.c_str(), 1)
                                   : spank_unsetenv(sp, op.name.c_str());
        if (rc != ESPANK_SUCCESS) {
            log_error("cannot apply " + op.name + ": " + spank_strerror(rc));
            return -1;
        }
    }
    return 0;
}

// The task execs the job's program (or exits) right after task_init, and exec
// drops the whole address space at once. Freeing the check's objects first
// would only write to heap pages still shared with slurmstepd, one
// copy-on-write fault each (several microseconds apiece in a VM), so the
// task's largest objects are moved to the heap and never destroyed.
template <typename T>
T& leave_for_exec(T&& value) {
    return *new T(std::forward<T>(value));
}

}  // namespace

int run_task_init(spank_t sp, const PluginConfig& config, PhaseTimes* times) {
    std::string refusal;
    const Mode mode = effective_mode(config, refusal);
    const bool first_task_on_node = local_task_id(sp).value_or(0) == 0;
    if (!refusal.empty()) {
        if (first_task_on_node) tell_user(refusal);
        return -1;
    }
    if (mode == Mode::off) return 0;

    PhaseTimer profile_timer(times, "profile");
    const auto& profile = step_profile(config.profile);
    profile_timer.stop();
    if (!profile) {
        log_error("profile: " + profile.error().to_string());
        if (first_task_on_node) tell_user("cannot load profile: " + profile.error().to_string());
        return config.on_error == OnError::block ? -1 : 0;
    }

    PhaseTimer placement_timer(times, "job_env+placement");
    Environment env = job_environment(sp);
    // Inside a pyxis container the host is out of reach; user_init captured
    // its side, and the namespace change says whether the task left it.
    // Its root mount names the container; a task still in the namespace it
    // was forked in has none, and skips reading mountinfo.
    const std::optional<MountNamespace> forked_in = forked_namespace();
    const std::optional<MountNamespace> now = current_mount_namespace();
    const std::optional<std::string> root_directory =
        forked_in && now && *forked_in == *now ? std::nullopt : current_root_mount_directory();
    Placement placement = place_task(forked_in, now, root_directory, captured_host_side(), env);
    if (!placement.warning.empty() && first_task_on_node) log_error(placement.warning);
    placement_timer.stop();

    ProbeOptions probe = node_probe_options(config);
    probe.environment = std::move(env);
    probe.use_current_process_env = false;
    // Read once for the step on the host before the tasks were forked (the
    // node's facts do not change with the task's mount namespace).
    probe.node_snapshot = take_prepared_node_snapshot();
    if (auto nodes = item_u32(sp, S_JOB_NNODES)) probe.job_nodes = static_cast<int>(*nodes);
    probe.timings = times;
    PhaseTimer context_timer(times, "build_context");
    // Never freed: see leave_for_exec().
    auto& context = leave_for_exec(build_context(std::move(probe)));
    context_timer.stop();
    if (!context) {
        log_error("cannot inspect the task: " + context.error().to_string());
        if (first_task_on_node) tell_user("cannot inspect the task: " + context.error().to_string());
        return config.on_error == OnError::block ? -1 : 0;
    }

    if (placement.runtime) context->runtime = *placement.runtime;
    context->host = std::move(placement.host);
    if (context->runtime == Runtime::pyxis) {
        PyxisOptions pyxis = pyxis_options(context->env.value());
        if (pyxis.image) {
            context->container.image = Fact<std::string>::known(*pyxis.image, "--container-image");
        } else if (root_directory) {
            context->container.image =
                Fact<std::string>::known("enroot container " + *root_directory, "/proc/self/mountinfo");
        }
        context->container.requested_mounts = std::move(pyxis.mounts);
    }

    EvaluationOptions options;
    options.mode = mode;
    options.scopes = kScopeLive;
    options.applicable = {RemediationOp::Kind::set_env, RemediationOp::Kind::unset_env};
    PhaseTimer rules_timer(times, "rules");
    Report& report = leave_for_exec(evaluate(*context, *profile, options));
    rules_timer.stop();

    PhaseTimer report_timer(times, "report");
    if (first_task_on_node) {
        auto job = item_u32(sp, S_JOB_ID);
        DecisionSite site{"task_init", job ? std::to_string(*job) : "?", step_name(item_u32(sp, S_JOB_STEPID)),
                          short_hostname()};
        log_info(decision_line(site, report));
        if (!report.findings.empty()) tell_user(user_message(report, context->runtime));
    }
    report_timer.stop();
    if (report.decision == Decision::block) return -1;
    PhaseTimer patch_timer(times, "patch");
    return apply_patch(sp, report);
}

}  // namespace launchguard::slurm
