// How a launch sees the filesystem. Live launches look through a root
// directory (/, an enroot rootfs, a test fixture tree); Kubernetes answers
// from the pod's volumes and mounts and may only be able to say "unknown".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"
#include "util/input_file.h"

namespace launchguard {

enum class FileKind {
    regular,           // exists, is (or resolves to) a regular file
    directory,         // exists and is a directory
    missing,           // nothing at that path
    dangling_symlink,  // a symlink whose target (inside the view) does not exist
    unreadable,        // exists but the task could not open it
    other,             // device, fifo, socket
    unknown,           // the view cannot tell (e.g. a file that may be in the image)
};

std::string_view to_string(FileKind kind);

// Which file a path reaches, as the kernel names it: two paths with one
// identity are one file however they are spelled (links, bind mounts).
struct FileIdentity {
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    auto operator<=>(const FileIdentity&) const = default;
};

struct FileInfo {
    FileKind kind = FileKind::unknown;
    std::uint64_t size = 0;  // for regular files
    // False when the view knows a file is there but not its content (a file
    // a pod's volume provides): `size` then means nothing.
    bool size_known = true;
    std::string resolved_path;  // path after following symlinks, inside the view
    std::string detail;         // why unknown / unreadable, or where the answer came from
    // Set by views that stat real files; a recorded or synthetic view leaves it empty.
    std::optional<FileIdentity> identity;

    // A regular file that is not known to be empty.
    [[nodiscard]] bool non_empty_regular() const { return kind == FileKind::regular && (!size_known || size > 0); }
};

class FileView {
public:
    virtual ~FileView() = default;
    // Follows symlinks the way the task would (absolute links resolve inside the view).
    [[nodiscard]] virtual FileInfo stat(std::string_view path) const = 0;
    // Reads a regular file of at most max_bytes; a larger file is an error
    // that says so (never a prefix: a cut file changes the verdict). Errors
    // name the path.
    [[nodiscard]] virtual Result<std::string> read(std::string_view path,
                                                   std::size_t max_bytes = kMaxInputFileBytes) const = 0;
    // Entry names of a directory; empty when missing or unknown.
    [[nodiscard]] virtual std::vector<std::string> list(std::string_view dir) const = 0;
    // "container rootfs /var/lib/enroot/data/pyxis_42" — shown in evidence.
    [[nodiscard]] virtual std::string describe() const = 0;
};

}  // namespace launchguard
