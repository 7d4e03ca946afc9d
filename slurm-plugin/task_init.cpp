// slurm_spank_task_init: in the task just before exec, as the job user, after
// pyxis (listed before it) moved it into the container: what NCCL will see.
// The host's side comes from user_init (host_side.cpp).
#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "spank_glue.h"
#include "step_node.h"
#include "step_profile.h"
#include "step_verdict.h"
#include "task_check.h"

namespace launchguard::slurm {
namespace {

// Gives up a claimed slot that the check leaves without publishing to.
struct ClaimedSlot {
    static constexpr std::size_t kNone = ~std::size_t{0};
    SharedVerdicts* table = nullptr;
    std::size_t slot = kNone;
    ~ClaimedSlot() {
        if (slot != kNone) table->abandon(slot);
    }
};

}  // namespace

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
    // The namespace change says whether the task left the host (pyxis); its
    // root mount then names the container.
    view.forked_in = forked_namespace();
    view.now = current_mount_namespace();
    if (!(view.forked_in && view.now && *view.forked_in == *view.now))
        view.root_directory = current_root_mount_directory();
    view.host = captured_host_side();
    // Read once for the step before the tasks were forked.
    view.node = take_prepared_node_snapshot();
    view.job_id = item_u32(sp, S_JOB_ID);
    view.step_id = item_u32(sp, S_JOB_STEPID);
    view.job_nodes = item_u32(sp, S_JOB_NNODES);
    view.first_task = first_task_on_node;

    // The shared verdict of an earlier task with this key (step_verdict.h); a
    // wait for one being judged is bounded by node-read-timeout=.
    PhaseTimer shared_timer(times, "shared_verdict");
    ClaimedSlot claimed{step_verdicts()};
    if (claimed.table != nullptr && profile) {
        if (auto inputs = current_verdict_inputs(view.env)) {
            auto lookup =
                claimed.table->find_or_claim(verdict_key(*inputs), std::chrono::seconds(config.node_read_timeout));
            if (lookup.outcome == SharedVerdicts::Outcome::reuse) view.shared = std::move(lookup.answer);
            if (lookup.outcome == SharedVerdicts::Outcome::timed_out)
                return apply_task_answer(sp, cannot_check("the step's check of this node was still running after " +
                                                              std::to_string(config.node_read_timeout) +
                                                              " s (node-read-timeout=); this task was not checked",
                                                          first_task_on_node, config.on_error == OnError::block));
            claimed.slot = lookup.slot.value_or(ClaimedSlot::kNone);
        }
    }
    shared_timer.stop();
    view.node_name = short_hostname();
    TaskAnswer shared;
    TaskAnswer answer = check_task(std::move(view), profile, config, times, &shared);
    if (claimed.slot != ClaimedSlot::kNone)
        claimed.table->publish(std::exchange(claimed.slot, ClaimedSlot::kNone), shared);
    PhaseTimer patch_timer(times, "patch");
    return apply_task_answer(sp, std::move(answer));
}

}  // namespace launchguard::slurm
