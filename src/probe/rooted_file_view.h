// A FileView over a directory tree that stands for the task's "/": the live
// root, an enroot container rootfs, or a test fixture. Symlinks are followed
// the way the task would follow them — absolute targets are re-rooted and
// ".." stops at the root — so a link that works on the host but points
// nowhere inside the container is reported as dangling.
//
// A view walks each path one component at a time, and remembers what it
// found for the directories on the way (and for the names that do not
// exist): the rules ask about dozens of paths under the same few
// directories, and a task check pays for every system call (docs/
// performance.md). So a view sees the tree as it was when it first looked:
// make a new one to see changes, as each launch does.
//
// Its system calls start at the root's directory, opened once, instead of
// at a path string: for a task seen from outside, through /proc/PID/root,
// every lookup by path would walk /proc, the pid and the root link again
// before the part inside the task's tree (docs/performance.md, twelfth
// round).
#pragma once

#include <sys/stat.h>

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "context/file_view.h"

namespace launchguard {

class RootedFileView final : public FileView {
public:
    // `description` is shown in evidence; empty means "filesystem rooted at <root>".
    explicit RootedFileView(std::string root, std::string description = {});
    ~RootedFileView() override;
    RootedFileView(const RootedFileView&) = delete;
    RootedFileView& operator=(const RootedFileView&) = delete;

    [[nodiscard]] FileInfo stat(std::string_view path) const override;
    [[nodiscard]] Result<std::string> read(std::string_view path,
                                           std::size_t max_bytes = kMaxInputFileBytes) const override;
    [[nodiscard]] std::vector<std::string> list(std::string_view dir) const override;
    [[nodiscard]] std::string describe() const override;

    [[nodiscard]] const std::string& root() const { return root_; }
    // Where an in-view path lives on this machine, without following links.
    [[nodiscard]] std::string host_path(std::string_view in_view_path) const;

    // lstat() of a directory on the way to a path, remembered by in-view
    // path: the result (0 or an errno) and, for 0, what it found.
    struct Lookup {
        int error = 0;
        struct stat st {};
    };
    [[nodiscard]] Lookup look_up_directory(const std::string& in_view_path) const;

    // Where the system calls find an in-view path: relative to the root's
    // directory, or the host path where the root cannot be opened (then
    // every lookup fails as it would by path).
    struct At {
        int directory;
        std::string path;
    };
    [[nodiscard]] At at(std::string_view in_view_path) const;

private:
    std::string root_;  // no trailing slash; "" stands for the live "/"
    std::string description_;
    // The root's directory (O_PATH), opened at the first lookup; -1 if it
    // could not be, and for the live "/", which is looked up by path.
    mutable std::once_flag root_opened_;
    mutable int root_fd_ = -1;
    mutable std::mutex lookups_mutex_;
    mutable std::map<std::string, Lookup, std::less<>> directory_lookups_;
};

}  // namespace launchguard
