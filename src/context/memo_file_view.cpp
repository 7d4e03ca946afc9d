#include "context/memo_file_view.h"

namespace launchguard {

bool listing_refused(const FileView& files, std::string_view dir) {
    return files.stat(dir).detail.starts_with(kCheckBoundDetail);
}

FileInfo MemoFileView::stat(std::string_view path) const {
    auto found = stats_.find(path);
    if (found != stats_.end()) return found->second;
    if (lookups_ >= max_lookups_) {
        FileInfo over;
        over.kind = FileKind::unknown;
        over.detail = std::string(kCheckBoundDetail) + " of " + std::to_string(max_lookups_) +
                      " paths per check was reached (the task's LD_LIBRARY_PATH or ld.so.conf names too many)";
        return stats_.emplace(std::string(path), std::move(over)).first->second;
    }
    ++lookups_;
    return stats_.emplace(std::string(path), inner_.stat(path)).first->second;
}

Result<std::string> MemoFileView::read(std::string_view path, std::size_t max_bytes) const {
    auto key = std::make_pair(std::string(path), max_bytes);
    auto found = reads_.find(key);
    if (found != reads_.end()) return found->second;
    return reads_.emplace(std::move(key), inner_.read(path, max_bytes)).first->second;
}

std::vector<std::string> MemoFileView::list(std::string_view dir) const {
    const FileInfo info = stat(dir);
    if (info.kind == FileKind::unknown && info.detail.starts_with(kCheckBoundDetail)) return {};
    // Links, "//", "/./" and ".." all resolve to one path inside the view;
    // bind mounts only to one identity (device and inode).
    const std::string path_key = info.resolved_path.empty() ? std::string(dir) : info.resolved_path;
    if (info.identity) {
        if (auto found = lists_by_identity_.find(*info.identity); found != lists_by_identity_.end())
            return found->second;
    } else if (auto found = lists_.find(path_key); found != lists_.end()) {
        return found->second;
    }
    std::vector<std::string> names;
    if (listed_ < max_listed_) names = inner_.list(dir);
    if (listed_ + names.size() > max_listed_ || listed_ >= max_listed_) {
        listed_ = max_listed_;
        FileInfo& over = stats_[std::string(dir)];
        over.kind = FileKind::unknown;
        over.detail = std::string(kCheckBoundDetail) + " of " + std::to_string(max_listed_) +
                      " directory entries listed per check was reached at " + std::string(dir);
        return {};
    }
    listed_ += names.size();
    if (info.identity) return lists_by_identity_.emplace(*info.identity, std::move(names)).first->second;
    return lists_.emplace(path_key, std::move(names)).first->second;
}

}  // namespace launchguard
