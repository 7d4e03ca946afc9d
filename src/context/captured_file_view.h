// A FileView that records every answer while the filesystem is in reach and
// keeps giving those answers after it is not. The Slurm task plugin asks the
// host's questions in user_init, on the host; by task_init pyxis has moved
// the task into its container and the host's paths are out of reach, so the
// propagation rules are answered from the record. A question nobody asked
// before release() is unknown, never "missing": the host may have the file.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "context/file_view.h"

namespace launchguard {

class CapturedFileView final : public FileView {
public:
    CapturedFileView(std::shared_ptr<const FileView> live, std::string description);

    [[nodiscard]] FileInfo stat(std::string_view path) const override;
    [[nodiscard]] Result<std::string> read(std::string_view path,
                                           std::size_t max_bytes = kMaxInputFileBytes) const override;
    [[nodiscard]] std::vector<std::string> list(std::string_view dir) const override;
    [[nodiscard]] std::string describe() const override { return description_; }

    // Drops the live view: from now on only recorded answers are given.
    void release() { live_.reset(); }
    [[nodiscard]] bool released() const { return live_ == nullptr; }

private:
    struct RecordedRead {
        std::size_t max_bytes = 0;
        Result<std::string> content;
    };

    std::shared_ptr<const FileView> live_;
    std::string description_;
    mutable std::map<std::string, FileInfo, std::less<>> stats_;
    mutable std::map<std::string, RecordedRead, std::less<>> reads_;
    mutable std::map<std::string, std::vector<std::string>, std::less<>> lists_;
};

}  // namespace launchguard
