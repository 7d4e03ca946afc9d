// A FileView that answers each question about a path once. Several rules ask
// about the same files (the topology file is stat'ed by five of them, the
// loader paths by two); the engine wraps the task's view in one of these for
// the length of one evaluation, during which the filesystem is taken as fixed.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "context/file_view.h"

namespace launchguard {

class MemoFileView final : public FileView {
public:
    explicit MemoFileView(const FileView& inner) : inner_(inner) {}

    [[nodiscard]] FileInfo stat(std::string_view path) const override;
    [[nodiscard]] Result<std::string> read(std::string_view path, std::size_t max_bytes) const override;
    [[nodiscard]] std::vector<std::string> list(std::string_view dir) const override;
    [[nodiscard]] std::string describe() const override { return inner_.describe(); }

private:
    const FileView& inner_;
    mutable std::map<std::string, FileInfo, std::less<>> stats_;
    mutable std::map<std::pair<std::string, std::size_t>, Result<std::string>> reads_;
    mutable std::map<std::string, std::vector<std::string>, std::less<>> lists_;
};

}  // namespace launchguard
