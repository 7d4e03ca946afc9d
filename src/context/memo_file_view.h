// A FileView that answers each question about a path once. Several rules ask
// about the same files (the topology file is stat'ed by five of them, the
// loader paths by two); the engine wraps the task's view in one of these for
// the length of one evaluation, during which the filesystem is taken as fixed.
//
// It also bounds one evaluation's work on the filesystem: the paths a check
// looks at come from the task (LD_LIBRARY_PATH, ld.so.conf), so thousands of
// entries, links or aliases of one directory must not make a check run for
// minutes or hold gigabytes. A directory is listed once however many paths
// name it: by its identity (device and inode) where the view knows it, so
// that bind-mount aliases count once, else by the path its links resolve to
// in the view. Past kMaxLookupsPerCheck paths, stat()
// answers unknown with the reason, and a listing that would pass
// kMaxListedPerCheck entries returns nothing and leaves that directory's
// stat() unknown, so that no rule takes "not listed" for "empty".
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "context/file_view.h"

namespace launchguard {

inline constexpr std::size_t kMaxLookupsPerCheck = 4096;
inline constexpr std::size_t kMaxListedPerCheck = 250'000;
// How FileInfo::detail begins when a bound, not the file, made it unknown.
inline constexpr std::string_view kCheckBoundDetail = "not looked at: launchguard's bound";

// Whether a bound of the check, not the directory, emptied files.list(dir):
// then the empty list says nothing about what is there, and the reason is
// files.stat(dir).detail.
bool listing_refused(const FileView& files, std::string_view dir);

class MemoFileView final : public FileView {
public:
    explicit MemoFileView(const FileView& inner, std::size_t max_lookups = kMaxLookupsPerCheck,
                          std::size_t max_listed = kMaxListedPerCheck)
        : inner_(inner), max_lookups_(max_lookups), max_listed_(max_listed) {}

    [[nodiscard]] FileInfo stat(std::string_view path) const override;
    [[nodiscard]] Result<std::string> read(std::string_view path, std::size_t max_bytes) const override;
    [[nodiscard]] std::vector<std::string> list(std::string_view dir) const override;
    [[nodiscard]] std::string describe() const override { return inner_.describe(); }

private:
    const FileView& inner_;
    std::size_t max_lookups_;
    std::size_t max_listed_;
    mutable std::map<std::string, FileInfo, std::less<>> stats_;
    mutable std::map<std::pair<std::string, std::size_t>, Result<std::string>> reads_;
    // By the directory's identity where the view knows it; else by its path
    // after links where the view knows that, else as named.
    mutable std::map<FileIdentity, std::vector<std::string>> lists_by_identity_;
    mutable std::map<std::string, std::vector<std::string>, std::less<>> lists_;
    mutable std::size_t lookups_ = 0;
    mutable std::size_t listed_ = 0;
};

}  // namespace launchguard
