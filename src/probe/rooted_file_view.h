// A FileView over a directory tree that stands for the task's "/": the live
// root, an enroot container rootfs, or a test fixture. Symlinks are followed
// the way the task would follow them — absolute targets are re-rooted and
// ".." stops at the root — so a link that works on the host but points
// nowhere inside the container is reported as dangling.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "context/file_view.h"

namespace launchguard {

class RootedFileView final : public FileView {
public:
    // `description` is shown in evidence; empty means "filesystem rooted at <root>".
    explicit RootedFileView(std::string root, std::string description = {});

    [[nodiscard]] FileInfo stat(std::string_view path) const override;
    [[nodiscard]] Result<std::string> read(std::string_view path, std::size_t max_bytes = kMaxInputFileBytes) const override;
    [[nodiscard]] std::vector<std::string> list(std::string_view dir) const override;
    [[nodiscard]] std::string describe() const override;

    [[nodiscard]] const std::string& root() const { return root_; }
    // Where an in-view path lives on this machine, without following links.
    [[nodiscard]] std::string host_path(std::string_view in_view_path) const;

private:
    std::string root_;         // no trailing slash; "" stands for the live "/"
    std::string description_;
};

}  // namespace launchguard
