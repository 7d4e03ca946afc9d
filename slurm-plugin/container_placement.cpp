#include "container_placement.h"

#include <sys/stat.h>

#include "probe/text_file.h"
#include "pyxis.h"

namespace launchguard::slurm {

std::optional<std::string> root_mount_directory(std::string_view mountinfo) {
    // Each line: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ...; the last line
    // whose mount point is "/" is the one on top.
    std::optional<std::string> found;
    std::size_t start = 0;
    while (start < mountinfo.size()) {
        std::size_t end = mountinfo.find('\n', start);
        if (end == std::string_view::npos) end = mountinfo.size();
        std::string_view line = mountinfo.substr(start, end - start);
        start = end + 1;
        std::string_view fields[5];
        std::size_t pos = 0;
        int n = 0;
        for (; n < 5 && pos < line.size(); ++n) {
            std::size_t space = line.find(' ', pos);
            if (space == std::string_view::npos) space = line.size();
            fields[n] = line.substr(pos, space - pos);
            pos = space + 1;
        }
        if (n < 5 || fields[4] != "/") continue;
        std::string_view root = fields[3];
        while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
        std::size_t slash = root.rfind('/');
        std::string_view name = slash == std::string_view::npos ? root : root.substr(slash + 1);
        found = name.empty() ? std::nullopt : std::optional<std::string>(std::string(name));
    }
    return found;
}

std::optional<std::string> current_root_mount_directory() {
    // A small procfs file; the one read task_init adds.
    auto text = read_text_file("/proc/self/mountinfo", 1U << 20);
    if (!text) return std::nullopt;
    return root_mount_directory(*text);
}

std::optional<MountNamespace> current_mount_namespace() {
    struct stat st {};
    if (::stat("/proc/self/ns/mnt", &st) != 0) return std::nullopt;
    return MountNamespace{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

Placement place_task(const std::optional<MountNamespace>& forked_in, const std::optional<MountNamespace>& now,
                     const std::optional<std::string>& root_directory, const HostSide* host,
                     const Environment& task_env) {
    Placement placement;
    if (!forked_in || !now) return placement;
    const PyxisOptions pyxis = pyxis_options(task_env);
    if (*forked_in == *now) {
        placement.runtime = Runtime::bare;
        if (pyxis.any()) {
            placement.warning =
                "the step asks pyxis for a container but the task is still in the host's mount "
                "namespace: list launchguard after pyxis in plugstack.conf, or it judges the host "
                "instead of the container";
        }
        return placement;
    }
    const bool pyxis_root = root_directory && root_directory->rfind("pyxis_", 0) == 0;
    placement.runtime = pyxis_root || pyxis.any() ? Runtime::pyxis : Runtime::unknown;
    if (host != nullptr && host->files) {
        placement.host = HostView{
            Fact<Environment>::known(host->env, "job environment on the host (captured in user_init)"), host->files};
    }
    return placement;
}

}  // namespace launchguard::slurm
