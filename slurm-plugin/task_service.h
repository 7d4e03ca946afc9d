// launchguard-task-service: the task check of spank_launchguard.so, run for
// a Slurm task from outside it, so that neither slurmstepd nor the task loads
// the checks (docs/slurm.md, "The task service"; docs/design/SLURM_PLUGIN.md).
//
// The task connects as root in task_init_privileged and asks in task_init,
// after pyxis moved it into its container, and waits for the answer. The
// service then sees the task as task_init would: its filesystem through
// /proc/PID/root, its CPU mask, limits and capabilities in /proc/PID, its
// mount namespace and root mount, the environment the request carries; and
// it reads the task's files with the task's user and groups, so that a file
// the user cannot read is unreadable to the check too. The profile and the
// node's facts stay loaded between requests: that is what the service is for.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "check_lock.h"
#include "plugin_config.h"
#include "probe/context_builder.h"
#include "profile/profile.h"
#include "task_service_protocol.h"
#include "util/phase_times.h"

namespace launchguard::slurm {

class TaskService {
public:
    // Answers the request of task `pid`. Never throws: what cannot be done
    // is an answer that says why, blocking as the request's on-error says.
    // Taken by value: the check moves the request's two environments into
    // the task's view instead of copying them (docs/performance.md, eleventh
    // round).
    TaskAnswer serve(TaskRequest request, int pid) noexcept;

    // Reads one request from the connected socket `fd` of task `pid` (whose
    // peer the caller has checked), up to its "end" record, and writes the
    // answer; leaves `fd` open. What went wrong on the connection comes
    // back as a line for the service's log. A connection that sends nothing
    // is the plugin's check that the service is up.
    std::optional<std::string> answer_connection(int fd, int pid) noexcept;

private:
    struct NodeRead {
        std::string key;  // what it was read under (node_probe_options)
        std::chrono::steady_clock::time_point read_at;
        std::optional<NodeSnapshot> snapshot;
    };

    TaskAnswer check(TaskRequest& request, int pid, const PluginConfig& config, PhaseTimes* times);
    std::shared_ptr<const Result<Profile>> profile(const std::string& name_or_path);
    std::optional<NodeSnapshot> node_snapshot(const PluginConfig& config);

    // One check at a time: the checks' code was written for one task per
    // process, and a node starts few tasks at once (docs/performance.md).
    // A task waits for it half its node-read-timeout at most, so that the
    // service's answer saying why comes before the task's own timeout.
    CheckLock check_lock_;
    struct FileStamp {
        std::int64_t seconds = 0;
        std::int64_t nanoseconds = 0;
        std::int64_t size = 0;
        friend bool operator==(const FileStamp&, const FileStamp&) = default;
    };
    struct LoadedProfile {
        std::shared_ptr<const Result<Profile>> profile;
        std::optional<FileStamp> stamp;  // a file's, when read; none for an embedded name
    };
    std::map<std::string, LoadedProfile> profiles_;
    std::optional<NodeRead> node_;
};

}  // namespace launchguard::slurm
