// A FileView whose answers are kept for other views of the same filesystem,
// seen the same way. The tasks of one Slurm step share their root, their
// mount namespace and their user, and the task service checks them one after
// another within milliseconds; with the answers of the step's first check, a
// later task's check asks the kernel nothing about the files that one looked
// at (docs/design/SLURM_PLUGIN.md, "One step's files"). Which views may share
// is the caller's to decide: a key that is wrong would answer one user's
// lookups with another's.
//
// Only answers that name nothing outside the view are kept: stat() and list(),
// which speak of in-view paths alone, and the text of a read() that succeeded.
// A failed read names the view it failed in (the task's /proc/PID/root), so
// each view answers its own.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "context/file_view.h"

namespace launchguard {

class SharedFileAnswers {
public:
    // How many questions the kept answers spared (for tests and timing).
    [[nodiscard]] std::size_t answered_from_memory() const;

private:
    friend class SharedAnswersFileView;
    // The answer kept in `kept` for `key` (counted), or else `ask()`'s, kept
    // for the other views when `to_keep` gives something to keep.
    template <typename Kept, typename Key, typename Ask, typename ToKeep>
    auto answer(Kept& kept, const Key& key, Ask ask, ToKeep to_keep) -> decltype(ask());

    mutable std::mutex mutex_;
    std::map<std::string, FileInfo, std::less<>> stats_;
    std::map<std::pair<std::string, std::size_t>, std::string> reads_;
    std::map<std::string, std::vector<std::string>, std::less<>> lists_;
    std::size_t answered_from_memory_ = 0;
};

class SharedAnswersFileView final : public FileView {
public:
    SharedAnswersFileView(std::shared_ptr<const FileView> own, std::shared_ptr<SharedFileAnswers> answers)
        : own_(std::move(own)), answers_(std::move(answers)) {}

    [[nodiscard]] FileInfo stat(std::string_view path) const override;
    [[nodiscard]] Result<std::string> read(std::string_view path, std::size_t max_bytes) const override;
    [[nodiscard]] std::vector<std::string> list(std::string_view dir) const override;
    [[nodiscard]] std::string describe() const override { return own_->describe(); }

private:
    std::shared_ptr<const FileView> own_;
    std::shared_ptr<SharedFileAnswers> answers_;
};

}  // namespace launchguard
