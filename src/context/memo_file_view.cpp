#include "context/memo_file_view.h"

namespace launchguard {

FileInfo MemoFileView::stat(std::string_view path) const {
    auto found = stats_.find(path);
    if (found != stats_.end()) return found->second;
    return stats_.emplace(std::string(path), inner_.stat(path)).first->second;
}

Result<std::string> MemoFileView::read(std::string_view path, std::size_t max_bytes) const {
    auto key = std::make_pair(std::string(path), max_bytes);
    auto found = reads_.find(key);
    if (found != reads_.end()) return found->second;
    return reads_.emplace(std::move(key), inner_.read(path, max_bytes)).first->second;
}

std::vector<std::string> MemoFileView::list(std::string_view dir) const {
    auto found = lists_.find(dir);
    if (found != lists_.end()) return found->second;
    return lists_.emplace(std::string(dir), inner_.list(dir)).first->second;
}

}  // namespace launchguard
