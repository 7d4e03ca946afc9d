// REMOTE context, slurm_spank_task_init: runs in the task process just before
// exec, as the job user, after pyxis (when listed after it) has moved the
// process into the container. What it sees is what NCCL will see; what the
// host would have given NCCL comes from user_init (host_side.cpp). The check
// itself is task_check.cpp's, which launchguard-task-service runs too.
#include <string>
#include <utility>

#include "spank_glue.h"
#include "step_node.h"
#include "step_profile.h"
#include "task_check.h"

namespace launchguard::slurm {

int run_task_init(spank_t sp, const PluginConfig& config, PhaseTimes* times) {
    int rc = 0;
    const std::optional<Mode> mode = task_mode(sp, config, rc);
    if (!mode) return rc;
    const bool first_task_on_node = local_task_id(sp).value_or(0) == 0;

    PhaseTimer profile_timer(times, "profile");
    const auto& profile = step_profile(config.profile);
    profile_timer.stop();

    PhaseTimer env_timer(times, "job_env");
    TaskView view;
    view.mode = *mode;
    view.env = job_environment(sp);
    env_timer.stop();
    // Inside a pyxis container the host is out of reach; user_init captured
    // its side, and the namespace change says whether the task left it.
    // Its root mount names the container; a task still in the namespace it
    // was forked in has none, and skips reading mountinfo.
    view.forked_in = forked_namespace();
    view.now = current_mount_namespace();
    if (!(view.forked_in && view.now && *view.forked_in == *view.now))
        view.root_directory = current_root_mount_directory();
    view.host = captured_host_side();
    // Read once for the step on the host before the tasks were forked (the
    // node's facts do not change with the task's mount namespace).
    view.node = take_prepared_node_snapshot();
    view.job_id = item_u32(sp, S_JOB_ID);
    view.step_id = item_u32(sp, S_JOB_STEPID);
    view.job_nodes = item_u32(sp, S_JOB_NNODES);
    view.first_task = first_task_on_node;
    if (first_task_on_node) view.node_name = short_hostname();
    view.leave_for_exec = true;
    TaskAnswer answer = check_task(std::move(view), profile, config, times);
    PhaseTimer patch_timer(times, "patch");
    return apply_task_answer(sp, answer);
}

}  // namespace launchguard::slurm
