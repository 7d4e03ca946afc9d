// Small C++ helpers over the SPANK C API shared by the context files. All of
// them are noexcept at the boundary: the hooks in dispatch.cpp catch
// everything, but these never throw on purpose.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

extern "C" {
#include <slurm/spank.h>
}

#include "container_placement.h"
#include "context/launch_context.h"
#include "decision_log.h"
#include "plugin_config.h"
#include "task_check.h"
#include "util/phase_times.h"

namespace launchguard::slurm {

inline constexpr const char* kPluginName = "launchguard";

std::vector<std::string> plugin_args(int ac, char** av);

// The task's environment as slurmstepd will exec it (job->env), which after
// pyxis already holds the container's values.
Environment job_environment(spank_t sp);

std::optional<std::uint32_t> item_u32(spank_t sp, spank_item_t item);
std::optional<int> local_task_id(spank_t sp);

// Lines to the user's stderr (slurm_spank_log: ERROR level without prefix,
// the lowest level slurmstepd forwards to the task's stderr by default).
void tell_user(const std::string& text);
// One line to the slurmd log only.
void log_info(const std::string& line);
void log_error(const std::string& line);

// The mode requested with --launchguard in this process (set by the option
// callback), if any.
std::optional<Mode> requested_user_mode();
void set_requested_user_mode(Mode mode);

// The --launchguard callback (user_option.cpp): validates the value and
// records it as the requested mode. Catches everything, as the hooks do.
int on_user_option(int val, const char* optarg, int remote) noexcept;

// The mode task_init checks this task in (the site's, or an allowed
// --launchguard); nullopt: not checked, and `rc` is task_init's return.
std::optional<Mode> task_mode(spank_t sp, const PluginConfig& config, int& rc);

// The calling process's page faults so far (timing=1; a task counts from its fork).
long process_page_faults();

// Sends a task check's answer (task_check.h) to the slurmd log, the user and
// the task's environment; -1 when it blocks the task or a change fails.
int apply_task_answer(spank_t sp, const TaskAnswer& answer);

// The plugstack configuration init parsed, for the option callbacks.
void remember_config(const PluginConfig& config);
const PluginConfig* remembered_config();

// The host side of the step (host_side.cpp): what the host would give NCCL
// (user_init), and the task's mount namespace before any plugin moves it.
void capture_host_side(spank_t sp, const PluginConfig& config);
void remember_forked_namespace();
const HostSide* captured_host_side();  // null when user_init captured nothing
std::optional<MountNamespace> forked_namespace();

// Context entry points; `times` (timing=1): the wall time of task_init's parts.
int run_task_init(spank_t sp, const PluginConfig& config, PhaseTimes* times = nullptr);
int run_job_prolog(spank_t sp, const PluginConfig& config);

// The node topology the tasks read (probe/topology_cache.h): reused when
// fresh, else discovered live and written. Root only (slurmd, prolog).
Result<NodeTopology> refresh_topology_cache(const PluginConfig& config);

// Parses the plugstack arguments, runs body, and catches everything: no C++
// exception may cross into Slurm. A malformed line is an error everywhere
// but in slurmd, which would not start (it is logged there).
int guarded_hook(const char* hook, int ac, char** av, const std::function<int(const PluginConfig&)>& body);

// For hooks that only record (user_init, task_init_privileged): runs body
// with the parsed configuration, catches everything, and always returns 0.
// A malformed plugstack line is left to task_init to report, once.
int recording_hook(const char* hook, int ac, char** av, const std::function<void(const PluginConfig&)>& body);

}  // namespace launchguard::slurm
