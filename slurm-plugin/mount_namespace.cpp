#include "mount_namespace.h"

#include <sys/stat.h>

namespace launchguard::slurm {

std::optional<MountNamespace> mount_namespace_of(const std::string& process_dir) {
    struct stat st {};
    if (::stat((process_dir + "/ns/mnt").c_str(), &st) != 0) return std::nullopt;
    return MountNamespace{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

std::optional<MountNamespace> current_mount_namespace() { return mount_namespace_of("/proc/self"); }

}  // namespace launchguard::slurm
