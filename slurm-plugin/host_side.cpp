// The host side of a step: recorded by user_init (slurmstepd, on the host,
// before any task is forked) and task_init_privileged (each task, before any
// plugin's task_init), inherited by every task. Neither may fail the step (a
// failing user_init drains the node in a batch step), so both only record.
#include <memory>
#include <optional>
#include <utility>

#include "context/captured_file_view.h"
#include "nccl/host_topology.h"
#include "probe/rooted_file_view.h"
#include "profile/profile.h"
#include "spank_glue.h"
#include "step_profile.h"

namespace launchguard::slurm {
namespace {

std::optional<HostSide> g_host_side;
std::optional<MountNamespace> g_forked_in;

}  // namespace

void capture_host_side(spank_t sp, const PluginConfig& config) {
    // A refused --launchguard value is reported by task_init; here any mode
    // but off is worth a few stats.
    if (requested_user_mode().value_or(config.mode) == Mode::off && config.mode == Mode::off) return;
    // Loaded here, before the tasks are forked, so that they share it;
    // task_init reports a profile that does not load.
    const auto& profile = step_profile(config.profile);
    const std::string host_path = profile ? profile->topology.host_path : std::string();

    HostSide side;
    side.env = job_environment(sp);
    auto files = std::make_shared<CapturedFileView>(std::make_shared<RootedFileView>("/"),
                                                    "host filesystem of " + short_hostname() + " (seen by slurmstepd)");
    // As the job user, before pyxis: exactly what NCCL on the host would open.
    nccl::ask_host_questions(side.env, *files, host_path);
    files->release();
    side.files = std::move(files);
    g_host_side = std::move(side);
}

void remember_forked_namespace() { g_forked_in = current_mount_namespace(); }

const HostSide* captured_host_side() { return g_host_side ? &*g_host_side : nullptr; }
std::optional<MountNamespace> forked_namespace() { return g_forked_in; }

}  // namespace launchguard::slurm
