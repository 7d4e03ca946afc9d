// The task check itself, with what it looks at handed in: the same code runs
// in the task (task_init.cpp: the task's own "/" and process, read from the
// inside) and in launchguard-task-service (task_service.cpp: the task's
// "/proc/PID/root" and /proc/PID, read from the outside). Either way the
// caller sends what it returns to the slurmd log, the user and the task's
// environment. No Slurm dependency.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "container_placement.h"
#include "plugin_config.h"
#include "probe/context_builder.h"
#include "profile/profile.h"
#include "task_service_protocol.h"
#include "util/phase_times.h"

namespace launchguard::slurm {

struct TaskView {
    Mode mode = Mode::enforce;
    Environment env;  // as slurmstepd will exec the task
    // The task's filesystem and the process whose CPU mask, limits and
    // capabilities are read: "/" and the calling process in the task,
    // /proc/PID/root and PID from outside.
    std::string root = "/";
    // How the task's files are looked at, when the caller keeps a view of
    // `root` (the service: one that shares the step's answers); absent, the
    // check makes one.
    std::shared_ptr<const FileView> files;
    std::optional<int> pid;
    std::optional<ProcessStatus> status;  // pid's status file, when the caller read it
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
    bool first_task = false;  // logs the decision and tells the user, once per node
    std::string node_name;    // for the decision line
    // In a task that execs right after: never free the check's largest
    // objects (task_init.cpp says why). A service frees everything.
    bool leave_for_exec = false;
};

// Checks the task; the answer's lines and patch are what the caller must
// log, tell and apply. Never throws for a bad input: an unloadable profile or
// an uninspectable task is an answer too, blocking as on-error says.
TaskAnswer check_task(TaskView view, const Result<Profile>& profile, const PluginConfig& config, PhaseTimes* times);

// The check cannot run: the reason to the slurmd log, and to the user from
// the first task; the task is blocked when `block` (on-error=block).
TaskAnswer cannot_check(const std::string& reason, bool first_task, bool block);

}  // namespace launchguard::slurm
