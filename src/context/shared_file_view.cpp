#include "context/shared_file_view.h"

#include <optional>

namespace launchguard {

std::size_t SharedFileAnswers::answered_from_memory() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return answered_from_memory_;
}

// Each question is asked of the own view outside the lock: a slow file holds
// up no other view's questions. Two views asking the same question at once
// both ask; the first answer is kept.
template <typename Kept, typename Key, typename Ask, typename ToKeep>
auto SharedFileAnswers::answer(Kept& kept, const Key& key, Ask ask, ToKeep to_keep) -> decltype(ask()) {
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (auto found = kept.find(key); found != kept.end()) {
            ++answered_from_memory_;
            return found->second;
        }
    }
    auto asked = ask();
    if (std::optional<typename Kept::mapped_type> keep = to_keep(asked)) {
        const std::lock_guard<std::mutex> lock(mutex_);
        kept.emplace(typename Kept::key_type(key), std::move(*keep));
    }
    return asked;
}

namespace {

// stat() and list() answers speak of in-view paths alone: all are kept.
constexpr auto kKeepAll = [](const auto& asked) { return std::optional(asked); };

}  // namespace

FileInfo SharedAnswersFileView::stat(std::string_view path) const {
    return answers_->answer(
        answers_->stats_, path, [&] { return own_->stat(path); }, kKeepAll);
}

Result<std::string> SharedAnswersFileView::read(std::string_view path, std::size_t max_bytes) const {
    // A failed read names the view it failed in: not kept.
    return answers_->answer(
        answers_->reads_, std::make_pair(std::string(path), max_bytes), [&] { return own_->read(path, max_bytes); },
        [](const Result<std::string>& text) { return text ? std::optional<std::string>(*text) : std::nullopt; });
}

std::vector<std::string> SharedAnswersFileView::list(std::string_view dir) const {
    return answers_->answer(
        answers_->lists_, dir, [&] { return own_->list(dir); }, kKeepAll);
}

}  // namespace launchguard
