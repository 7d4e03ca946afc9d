#include "context/captured_file_view.h"

#include <utility>

namespace launchguard {
namespace {

constexpr std::string_view kNotCaptured = "not captured on the host before the task entered its container";

}  // namespace

CapturedFileView::CapturedFileView(std::shared_ptr<const FileView> live, std::string description)
    : live_(std::move(live)), description_(std::move(description)) {}

FileInfo CapturedFileView::stat(std::string_view path) const {
    if (auto found = stats_.find(path); found != stats_.end()) return found->second;
    if (!live_) {
        FileInfo info;
        info.kind = FileKind::unknown;
        info.detail = std::string(kNotCaptured);
        return info;
    }
    return stats_.emplace(std::string(path), live_->stat(path)).first->second;
}

Result<std::string> CapturedFileView::read(std::string_view path, std::size_t max_bytes) const {
    if (auto found = reads_.find(path); found != reads_.end()) {
        const RecordedRead& recorded = found->second;
        // Reads never return a prefix: the whole file was recorded, so it
        // answers any bound it fits in; an error answers the bounds it covered.
        if (recorded.content && recorded.content->size() <= max_bytes) return recorded.content;
        if (recorded.content && !live_) {
            return make_file_error(std::string(path), 0,
                                   "larger than the " + std::to_string(max_bytes) + "-byte bound for this read");
        }
        if (!recorded.content && max_bytes <= recorded.max_bytes) return recorded.content;
    }
    if (!live_) return make_file_error(std::string(path), 0, std::string(kNotCaptured));
    Result<std::string> content = live_->read(path, max_bytes);
    reads_.insert_or_assign(std::string(path), RecordedRead{max_bytes, content});
    return content;
}

std::vector<std::string> CapturedFileView::list(std::string_view dir) const {
    if (auto found = lists_.find(dir); found != lists_.end()) return found->second;
    if (!live_) return {};
    return lists_.emplace(std::string(dir), live_->list(dir)).first->second;
}

}  // namespace launchguard
