#include "context/shared_file_view.h"

namespace launchguard {

std::size_t SharedFileAnswers::answered_from_memory() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return answered_from_memory_;
}

// Each question is asked of the own view outside the lock: a slow file holds
// up no other view's questions. Two views asking the same question at once
// both ask; the first answer is kept.
FileInfo SharedAnswersFileView::stat(std::string_view path) const {
    {
        const std::lock_guard<std::mutex> lock(answers_->mutex_);
        if (auto found = answers_->stats_.find(path); found != answers_->stats_.end()) {
            ++answers_->answered_from_memory_;
            return found->second;
        }
    }
    FileInfo info = own_->stat(path);
    const std::lock_guard<std::mutex> lock(answers_->mutex_);
    answers_->stats_.emplace(std::string(path), info);
    return info;
}

Result<std::string> SharedAnswersFileView::read(std::string_view path, std::size_t max_bytes) const {
    auto key = std::make_pair(std::string(path), max_bytes);
    {
        const std::lock_guard<std::mutex> lock(answers_->mutex_);
        if (auto found = answers_->reads_.find(key); found != answers_->reads_.end()) {
            ++answers_->answered_from_memory_;
            return found->second;
        }
    }
    Result<std::string> text = own_->read(path, max_bytes);
    if (text) {
        const std::lock_guard<std::mutex> lock(answers_->mutex_);
        answers_->reads_.emplace(std::move(key), *text);
    }
    return text;
}

std::vector<std::string> SharedAnswersFileView::list(std::string_view dir) const {
    {
        const std::lock_guard<std::mutex> lock(answers_->mutex_);
        if (auto found = answers_->lists_.find(dir); found != answers_->lists_.end()) {
            ++answers_->answered_from_memory_;
            return found->second;
        }
    }
    std::vector<std::string> names = own_->list(dir);
    const std::lock_guard<std::mutex> lock(answers_->mutex_);
    answers_->lists_.emplace(std::string(dir), names);
    return names;
}

}  // namespace launchguard
