// An in-memory FileView for tests: paths map to regular files, directories,
// symlinks, unreadable entries, "other" entries (devices, fifos) or "unknown"
// answers, so a test can describe exactly what a task would see without
// touching the real filesystem.
//
//   MemoryFileView view;
//   view.add_file("/etc/nccl.conf", "NCCL_DEBUG=INFO\n")
//       .add_directory("/opt/empty")
//       .add_unreadable("/root/.nccl.conf")
//       .add_symlink("/opt/microsoft/ndv5/topo.xml", "/opt/microsoft/ndv5-topo.xml");
//
// Parent directories of every added entry exist implicitly. Paths are
// normalised lexically ("//", "." and ".." collapse; relative paths are taken
// from "/").
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "context/file_view.h"
#include "util/error.h"
#include "util/path.h"
#include "util/size_parser.h"

namespace launchguard::testing {

class MemoryFileView final : public FileView {
public:
    explicit MemoryFileView(std::string description = "in-memory test view") : description_(std::move(description)) {}

    MemoryFileView& add_file(std::string_view path, std::string contents) {
        return add(path, Entry{FileKind::regular, std::move(contents), {}, {}});
    }
    MemoryFileView& add_directory(std::string_view path) { return add(path, Entry{FileKind::directory, {}, {}, {}}); }
    MemoryFileView& add_unreadable(std::string_view path, std::string detail = "permission denied") {
        return add(path, Entry{FileKind::unreadable, {}, {}, std::move(detail)});
    }
    // Devices, fifos, sockets.
    MemoryFileView& add_other(std::string_view path) { return add(path, Entry{FileKind::other, {}, {}, {}}); }
    // The view cannot tell (e.g. a path that may or may not be in an image).
    MemoryFileView& add_unknown(std::string_view path, std::string detail = "cannot tell") {
        return add(path, Entry{FileKind::unknown, {}, {}, std::move(detail)});
    }
    // Absolute targets resolve inside the view; relative ones against the link's directory.
    MemoryFileView& add_symlink(std::string_view path, std::string target) {
        return add(path, Entry{FileKind::dangling_symlink, {}, std::move(target), {}});
    }

    [[nodiscard]] FileInfo stat(std::string_view path) const override {
        FileInfo info;
        bool through_link = false;
        auto resolved = resolve(normalize(path), through_link);
        if (!resolved) {
            info.kind = FileKind::unreadable;
            info.detail = "too many levels of symbolic links";
            return info;
        }
        info.resolved_path = *resolved;
        const Entry* entry = find(*resolved);
        if (entry == nullptr) {
            info.kind = is_implicit_directory(*resolved) ? FileKind::directory : FileKind::missing;
            // A link that led here points at nothing.
            if (info.kind == FileKind::missing && through_link) info.kind = FileKind::dangling_symlink;
            return info;
        }
        info.kind = entry->kind;
        info.detail = entry->detail;
        if (entry->kind == FileKind::regular) info.size = entry->contents.size();
        return info;
    }

    [[nodiscard]] Result<std::string> read(std::string_view path,
                                           std::size_t max_bytes = kMaxInputFileBytes) const override {
        FileInfo info = stat(path);
        if (info.kind != FileKind::regular) {
            return make_file_error(std::string(path), 0,
                                   "cannot read: " + std::string(kind_name(info.kind)) +
                                       (info.detail.empty() ? "" : " (" + info.detail + ")"));
        }
        const Entry* entry = find(info.resolved_path);
        if (entry == nullptr) return make_file_error(std::string(path), 0, "cannot read: vanished");
        // As the real views do: past the bound an error, never a prefix.
        if (entry->contents.size() > max_bytes) {
            return make_file_error(std::string(path), 0,
                                   "is " + format_byte_size(entry->contents.size()) + ", larger than the " +
                                       format_byte_size(max_bytes) + " launchguard reads from one file");
        }
        return entry->contents;
    }

    [[nodiscard]] std::vector<std::string> list(std::string_view dir) const override {
        FileInfo info = stat(dir);
        if (info.kind != FileKind::directory) return {};
        std::string prefix = info.resolved_path == "/" ? "/" : info.resolved_path + "/";
        std::set<std::string> names;
        for (const auto& [path, entry] : entries_) {
            if (path.size() <= prefix.size() || path.compare(0, prefix.size(), prefix) != 0) continue;
            std::string rest = path.substr(prefix.size());
            names.insert(rest.substr(0, rest.find('/')));
        }
        return {names.begin(), names.end()};
    }

    [[nodiscard]] std::string describe() const override { return description_; }

    // Lexical normalisation shared by every lookup.
    static std::string normalize(std::string_view path) { return normalize_absolute(path); }

private:
    struct Entry {
        FileKind kind = FileKind::regular;
        std::string contents;
        std::string link_target;  // non-empty for symlinks
        std::string detail;
    };

    static constexpr int kMaxSymlinkHops = 40;  // Linux's MAXSYMLINKS

    // Kept local so the view does not depend on FileKind's to_string being linked.
    static std::string_view kind_name(FileKind kind) {
        switch (kind) {
            case FileKind::regular:
                return "regular file";
            case FileKind::directory:
                return "is a directory";
            case FileKind::missing:
                return "no such file";
            case FileKind::dangling_symlink:
                return "dangling symlink";
            case FileKind::unreadable:
                return "unreadable";
            case FileKind::other:
                return "not a regular file";
            case FileKind::unknown:
                return "unknown";
        }
        return "unknown";
    }

    MemoryFileView& add(std::string_view path, Entry entry) {
        entries_[normalize(path)] = std::move(entry);
        return *this;
    }

    [[nodiscard]] const Entry* find(const std::string& normalized) const {
        auto it = entries_.find(normalized);
        return it == entries_.end() ? nullptr : &it->second;
    }

    [[nodiscard]] bool is_implicit_directory(const std::string& normalized) const {
        if (normalized == "/") return true;
        std::string prefix = normalized + "/";
        auto it = entries_.lower_bound(prefix);
        return it != entries_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
    }

    // Follows symlinks in every component, as the kernel does; nullopt on a loop.
    [[nodiscard]] std::optional<std::string> resolve(std::string path, bool& through_link) const {
        for (int hops = 0; hops <= kMaxSymlinkHops; ++hops) {
            bool followed = false;
            std::size_t end = 0;
            while (end != std::string::npos && !followed) {
                end = path.find('/', end + 1);
                std::string prefix = path.substr(0, end);
                const Entry* entry = find(prefix);
                if (entry == nullptr || entry->link_target.empty()) continue;
                std::string rest = end == std::string::npos ? "" : path.substr(end);
                const std::string& target = entry->link_target;
                std::string base = target.front() == '/' ? target : prefix.substr(0, prefix.rfind('/')) + "/" + target;
                path = normalize(base + rest);
                through_link = followed = true;
            }
            if (!followed) return path;
        }
        return std::nullopt;
    }

    std::string description_;
    std::map<std::string, Entry> entries_;
};

}  // namespace launchguard::testing
