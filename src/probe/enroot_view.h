// What an enroot container will see, computed from inside an enroot hook
// (enroot's src/runtime.sh, runtime::_start): the rootfs at $ENROOT_ROOTFS, the mounts
// enroot will make (mounts.d fstabs and the lines hooks appended to
// $ENROOT_MOUNTS), and the environment file $ENROOT_ENVIRON.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "context/file_view.h"
#include "context/launch_context.h"
#include "util/error.h"

namespace launchguard {

// One fstab line as enroot reads it: "src dst [type [opts [freq [passno]]]]",
// dst relative to the rootfs.
struct EnrootMount {
    std::string source;
    std::string target;  // normalised absolute path inside the container
    std::string type;    // "none" for binds, "tmpfs", ...
    std::string options;
    int line = 0;
    std::string origin;  // file it came from

    [[nodiscard]] bool is_bind() const;
    [[nodiscard]] bool is_tmpfs() const;
};

// enroot's fstab format; comments and blank lines skipped. Malformed lines
// (fewer than two fields) are errors naming origin:line.
Result<std::vector<EnrootMount>> parse_enroot_fstab(std::string_view text, const std::string& origin);

// enroot's environment file after common::envfmt: leading spaces and comment
// or blank lines dropped, malformed lines dropped, surrounding quotes removed,
// ENROOT_* dropped; the last duplicate wins (load_environment_fd).
Environment parse_enroot_environ(std::string_view text);

// The rootfs with the mounts laid over it, later mounts over earlier ones:
// a bind mount maps its target to the host path, a tmpfs hides what was
// there (e.g. /var/run, where NCCL's default topology file lives).
class EnrootFileView final : public FileView {
public:
    EnrootFileView(std::string rootfs, std::shared_ptr<const FileView> host, std::vector<EnrootMount> mounts);

    [[nodiscard]] FileInfo stat(std::string_view path) const override;
    [[nodiscard]] Result<std::string> read(std::string_view path, std::size_t max_bytes) const override;
    [[nodiscard]] std::vector<std::string> list(std::string_view dir) const override;
    [[nodiscard]] std::string describe() const override;

private:
    struct Resolved {
        const FileView* view = nullptr;  // nullptr = on or inside an empty tmpfs
        std::string path;
        bool tmpfs_root = false;  // the tmpfs mount point itself (a directory)
    };
    [[nodiscard]] Resolved resolve(std::string_view path) const;

    std::string rootfs_;
    std::shared_ptr<const FileView> rootfs_view_;
    std::shared_ptr<const FileView> host_;
    std::vector<EnrootMount> mounts_;
};

}  // namespace launchguard
