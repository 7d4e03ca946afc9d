// The identity of a mount namespace, which says whether a task left the one
// it was forked in (container_placement.h). Apart from the placement code, so
// that the small plugin can take it without the checks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace launchguard::slurm {

// Device and inode of /proc/PID/ns/mnt.
struct MountNamespace {
    std::uint64_t dev = 0;
    std::uint64_t ino = 0;
    friend bool operator==(const MountNamespace&, const MountNamespace&) = default;
};

// This process's mount namespace; nullopt when /proc cannot tell.
std::optional<MountNamespace> current_mount_namespace();
// Another process's, from its /proc directory ("/proc/PID").
std::optional<MountNamespace> mount_namespace_of(const std::string& process_dir);

}  // namespace launchguard::slurm
