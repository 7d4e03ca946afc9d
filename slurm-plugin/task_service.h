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
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "check_lock.h"
#include "context/shared_file_view.h"
#include "mount_namespace.h"
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

    // Answers `request`, the whole of what task `pid` (whose peer the caller
    // has checked) sent on the connected socket `fd` (the service's loop
    // reads it, service_loop.h), on `fd`; leaves `fd`
    // open. What went wrong comes back as a line for the service's log. An
    // empty request is a plugin of an earlier release checking that the
    // service is up: no answer.
    std::optional<std::string> answer_request(int fd, int pid, const std::string& request) noexcept;

private:
    struct NodeRead {
        std::string key;  // what it was read under (node_probe_options)
        std::chrono::steady_clock::time_point read_at;
        std::optional<NodeSnapshot> snapshot;
    };

    // What makes two tasks' filesystems the same, seen the same way: the
    // step, the mount namespace and root directory, the user and groups the
    // files are read as. Tasks with equal keys share their file answers.
    struct StepFilesKey {
        std::uint32_t job_id = 0;
        std::uint32_t step_id = 0;
        MountNamespace mount_namespace;
        std::uint64_t root_device = 0;
        std::uint64_t root_inode = 0;
        std::uint32_t uid = 0;
        std::uint32_t gid = 0;
        std::vector<std::uint32_t> groups;  // sorted
        friend bool operator==(const StepFilesKey&, const StepFilesKey&) = default;
    };
    struct StepFiles {
        StepFilesKey key;
        std::chrono::steady_clock::time_point first_asked;
        std::shared_ptr<SharedFileAnswers> answers;
    };

    // `from_step_files`: how many file questions the step's earlier tasks answered.
    TaskAnswer check(TaskRequest& request, int pid, const PluginConfig& config, PhaseTimes* times,
                     std::size_t& from_step_files);
    std::shared_ptr<SharedFileAnswers> step_file_answers(const StepFilesKey& key);
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
    // The file answers of the steps checked in the last moments
    // (step_file_answers); a few, as a node may start steps of several jobs
    // at once.
    std::mutex step_files_mutex_;
    std::vector<StepFiles> step_files_;
};

}  // namespace launchguard::slurm
