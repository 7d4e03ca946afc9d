// Where a task runs when task_init sees it: on the host, or in a container
// another plugin (pyxis) moved it into, by its mount namespace then and at
// its fork. No Slurm dependency (tests/unit/slurm_plugin/).
#pragma once

#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "context/launch_context.h"

namespace launchguard::slurm {

// Device and inode of /proc/self/ns/mnt: the identity of a mount namespace.
struct MountNamespace {
    std::uint64_t dev = 0;
    std::uint64_t ino = 0;
    friend bool operator==(const MountNamespace&, const MountNamespace&) = default;
};

// This process's mount namespace; nullopt when /proc cannot tell.
std::optional<MountNamespace> current_mount_namespace();

// The name of the directory the root mount comes from, from
// /proc/self/mountinfo text: enroot binds a container's rootfs
// ($ENROOT_DATA_PATH/NAME) onto itself before pivot_root, so inside the
// container the root mount's "root" field ends in NAME, and pyxis names its
// containers pyxis_<job>.<step> or pyxis_<job>_<name>. nullopt when "/" is
// the root of its filesystem (a host, a tmpfs root) or cannot be found.
std::optional<std::string> root_mount_directory(std::string_view mountinfo);
// The same for this process.
std::optional<std::string> current_root_mount_directory();

// What the host would give NCCL, captured by user_init in slurmstepd before
// any plugin moved a task: the job's environment before pyxis merges the
// image's, and the host's answers to the propagation rules' questions.
struct HostSide {
    Environment env;
    std::shared_ptr<const FileView> files;
};

struct Placement {
    // nullopt: nothing to go on, let the context builder detect the runtime.
    std::optional<Runtime> runtime;
    // The host's side, only for a task that left the host's mount namespace:
    // for a task on the host its own view is the host view, and the
    // propagation rules must not judge the same files twice.
    std::optional<HostView> host;
    // For the operator's log, when something is off (pyxis listed after launchguard).
    std::string warning;
};

// `forked_in`: the namespace in task_init_privileged (before any task_init,
// after Slurm's own job container plugin); `now`: the namespace in task_init;
// `root_directory`: current_root_mount_directory() in task_init. A task in a
// new namespace runs in pyxis when its root is a pyxis container or the job
// environment still carries pyxis options (sbatch passes them there).
Placement place_task(const std::optional<MountNamespace>& forked_in, const std::optional<MountNamespace>& now,
                     const std::optional<std::string>& root_directory, const HostSide* host,
                     const Environment& task_env);

}  // namespace launchguard::slurm
