// The task check, over "/" and the calling process, with the rest handed in
// (task_init.cpp). The caller sends what it returns to the slurmd log, the
// user and the task's environment. No Slurm dependency.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "container_placement.h"
#include "plugin_config.h"
#include "probe/context_builder.h"
#include "profile/profile.h"
#include "util/phase_times.h"

namespace launchguard::slurm {

struct TaskEnvChange {
    std::string name;
    std::optional<std::string> value;  // nullopt: unset
    friend bool operator==(const TaskEnvChange&, const TaskEnvChange&) = default;
};

struct TaskAnswer {
    bool judged = false;                   // a verdict of the rules, not "could not check"
    bool block = false;                    // fail the task (slurm_spank_task_init returns -1)
    std::vector<std::string> log_info;     // lines for the slurmd log
    std::vector<std::string> log_error;    // error lines for the slurmd log
    std::vector<std::string> tell_user;    // lines for the user's stderr
    std::vector<TaskEnvChange> env_patch;  // applied in order before exec
};

struct TaskView {
    Mode mode = Mode::enforce;
    Environment env;  // as slurmstepd will exec the task
    // Where the task runs (container_placement.h): its mount namespace when
    // forked and now, and the name of its root mount's directory.
    std::optional<MountNamespace> forked_in;
    std::optional<MountNamespace> now;
    std::optional<std::string> root_directory;
    const HostSide* host = nullptr;
    std::optional<NodeSnapshot> node;  // read once for many tasks; absent: read here
    std::optional<std::uint32_t> job_id;
    std::optional<std::uint32_t> step_id;
    std::optional<std::uint32_t> job_nodes;
    bool first_task = false;           // logs the shared verdict and tells the user, once per node
    std::string node_name;             // for the decision line
    std::optional<TaskAnswer> shared;  // an earlier task's (step_verdict.h): judge the per-task rules only
};

// Checks the task; the answer's lines and patch are what the caller must
// log, tell and apply. Never throws for a bad input: an unloadable profile or
// an uninspectable task is an answer too, blocking as on-error says. The
// shared part judged here goes to `shared` (when not null) for later tasks.
TaskAnswer check_task(TaskView view, const Result<Profile>& profile, const PluginConfig& config, PhaseTimes* times,
                      TaskAnswer* shared = nullptr);

// The check cannot run: the reason to the slurmd log, and to the user from
// the first task; the task is blocked when `block` (on-error=block).
TaskAnswer cannot_check(const std::string& reason, bool first_task, bool block);

}  // namespace launchguard::slurm
