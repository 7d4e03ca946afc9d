#include "probe/rooted_file_view.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>

#include "util/input_file.h"

namespace launchguard {
namespace {

// Linux gives up after 40 links (MAXSYMLINKS); doing the same means a loop in
// a rootfs is reported the way the task would experience it.
constexpr int kMaxSymlinkHops = 40;

std::vector<std::string> split_components(std::string_view path) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos < path.size()) {
        std::size_t slash = path.find('/', pos);
        if (slash == std::string_view::npos) slash = path.size();
        if (slash > pos) out.emplace_back(path.substr(pos, slash - pos));
        pos = slash + 1;
    }
    return out;
}

std::string join_components(const std::vector<std::string>& parts) {
    if (parts.empty()) return "/";
    std::string out;
    for (const auto& p : parts) out += "/" + p;
    return out;
}

std::string errno_text(int err) { return std::strerror(err); }

// The outcome of walking a path inside the view.
struct Walk {
    FileKind kind = FileKind::missing;
    std::string resolved;  // in-view path of the last component reached
    struct stat st {};
    std::string detail;
};

Walk walk(const RootedFileView& view, std::string_view path) {
    Walk w;
    // Each pending component remembers whether it came from a link target:
    // a missing one then makes the named path a dangling link, whereas a
    // missing component the caller wrote makes it simply missing.
    struct Component {
        std::string name;
        bool from_link;
    };
    std::deque<Component> pending;
    for (auto& c : split_components(path)) pending.push_back({std::move(c), false});
    std::vector<std::string> resolved;
    int hops = 0;
    std::string first_link;  // "link -> target" of the first link followed, for the evidence
    // The last component looked up and what lstat said: the final stat below
    // reuses it unless ".." or a link moved the walk elsewhere since.
    std::string last_in_view;
    struct stat last_st {};
    while (!pending.empty()) {
        std::string comp = std::move(pending.front().name);
        bool from_link = pending.front().from_link;
        pending.pop_front();
        if (comp == ".") continue;
        if (comp == "..") {
            // The root is its own parent, as it is for a chrooted process.
            if (!resolved.empty()) resolved.pop_back();
            continue;
        }
        resolved.push_back(comp);
        std::string in_view = join_components(resolved);
        struct stat st {};
        // A component with more to come is a directory on the way: the view
        // remembers those. The last one is always looked at afresh.
        int lookup_error = 0;
        if (!pending.empty()) {
            const RootedFileView::Lookup lookup = view.look_up_directory(in_view);
            lookup_error = lookup.error;
            st = lookup.st;
        } else if (const RootedFileView::At here = view.at(in_view);
                   ::fstatat(here.directory, here.path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            lookup_error = errno;
        }
        if (lookup_error != 0) {
            int err = lookup_error;
            w.resolved = in_view;
            if (err == ENOENT || err == ENOTDIR) {
                // A dangling link is named by where it points ("/dev/zero"),
                // not by the first component that is missing ("/dev").
                if (from_link) {
                    for (const auto& rest : pending) {
                        if (rest.name != ".") w.resolved += "/" + rest.name;
                    }
                }
                w.kind = from_link ? FileKind::dangling_symlink : FileKind::missing;
                w.detail = from_link ? first_link + ": " + in_view + " does not exist in the view"
                                     : in_view + " does not exist";
            } else {
                w.kind = FileKind::unreadable;
                w.detail = "cannot look up " + in_view + ": " + errno_text(err);
            }
            return w;
        }
        if (S_ISLNK(st.st_mode)) {
            if (++hops > kMaxSymlinkHops) {
                w.kind = FileKind::unreadable;
                w.resolved = in_view;
                w.detail = "more than " + std::to_string(kMaxSymlinkHops) + " symlinks (a loop?) while resolving " +
                           std::string(path);
                return w;
            }
            std::string target(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 255) + 1, '\0');
            const RootedFileView::At link = view.at(in_view);
            ssize_t n = ::readlinkat(link.directory, link.path.c_str(), target.data(), target.size());
            if (n < 0) {
                w.kind = FileKind::unreadable;
                w.resolved = in_view;
                w.detail = "cannot read symlink " + in_view + ": " + errno_text(errno);
                return w;
            }
            target.resize(static_cast<std::size_t>(n));
            if (first_link.empty()) first_link = in_view + " -> " + target;
            resolved.pop_back();
            if (!target.empty() && target.front() == '/') resolved.clear();  // re-rooted inside the view
            auto parts = split_components(target);
            for (auto it = parts.rbegin(); it != parts.rend(); ++it) pending.push_front({std::move(*it), true});
            continue;
        }
        last_in_view = in_view;
        last_st = st;
        if (!pending.empty() && !S_ISDIR(st.st_mode)) {
            w.kind = from_link ? FileKind::dangling_symlink : FileKind::missing;
            w.resolved = in_view;
            w.detail = (from_link ? first_link + ": " : std::string()) + in_view + " is not a directory";
            return w;
        }
    }
    w.resolved = join_components(resolved);
    // Every component is now a real directory or the final non-link entry;
    // stat it afresh if ".." walked back up past what was seen last.
    if (w.resolved == last_in_view) {
        w.st = last_st;
    } else if (const RootedFileView::At final = view.at(w.resolved);
               ::fstatat(final.directory, final.path.c_str(), &w.st, AT_SYMLINK_NOFOLLOW) != 0) {
        w.kind = FileKind::missing;
        w.detail = w.resolved + " does not exist (" + errno_text(errno) + ")";
        return w;
    }
    if (S_ISREG(w.st.st_mode))
        w.kind = FileKind::regular;
    else if (S_ISDIR(w.st.st_mode))
        w.kind = FileKind::directory;
    else
        w.kind = FileKind::other;
    return w;
}

}  // namespace

RootedFileView::RootedFileView(std::string root, std::string description) : description_(std::move(description)) {
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    root_ = root == "/" ? std::string() : std::move(root);
    if (description_.empty()) description_ = "filesystem rooted at " + (root_.empty() ? std::string("/") : root_);
}

RootedFileView::~RootedFileView() {
    if (root_fd_ >= 0) ::close(root_fd_);
}

RootedFileView::At RootedFileView::at(std::string_view in_view_path) const {
    // The live "/" is looked up by path: an absolute path starts at the
    // process's root as cheaply as a directory would.
    if (root_.empty()) return {AT_FDCWD, host_path(in_view_path)};
    std::call_once(root_opened_, [this] { root_fd_ = ::open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC); });
    if (root_fd_ < 0) return {AT_FDCWD, host_path(in_view_path)};
    // In-view paths are walked components: no "." or ".." among them.
    while (!in_view_path.empty() && in_view_path.front() == '/') in_view_path.remove_prefix(1);
    return {root_fd_, in_view_path.empty() ? std::string(".") : std::string(in_view_path)};
}

RootedFileView::Lookup RootedFileView::look_up_directory(const std::string& in_view_path) const {
    const std::lock_guard<std::mutex> lock(lookups_mutex_);
    if (auto it = directory_lookups_.find(in_view_path); it != directory_lookups_.end()) return it->second;
    Lookup lookup;
    const At where = at(in_view_path);
    if (::fstatat(where.directory, where.path.c_str(), &lookup.st, AT_SYMLINK_NOFOLLOW) != 0) lookup.error = errno;
    // A link is followed by reading it, which the walk does each time.
    if (lookup.error == 0 && S_ISLNK(lookup.st.st_mode)) return lookup;
    directory_lookups_.emplace(in_view_path, lookup);
    return lookup;
}

std::string RootedFileView::host_path(std::string_view in_view_path) const {
    std::string p(in_view_path);
    if (p.empty() || p.front() != '/') p.insert(p.begin(), '/');
    if (root_.empty()) return p;
    return p == "/" ? root_ : root_ + p;
}

FileInfo RootedFileView::stat(std::string_view path) const {
    Walk w = walk(*this, path);
    FileInfo info;
    info.kind = w.kind;
    info.resolved_path = w.resolved;
    info.detail = w.detail;
    if (w.kind != FileKind::regular && w.kind != FileKind::directory) return info;

    // Existence is not enough: the task must be able to open it. access()
    // answers for the real uid, open() for the effective one; both must pass.
    const At where = at(w.resolved);
    if (::faccessat(where.directory, where.path.c_str(), R_OK, 0) != 0) {
        info.kind = FileKind::unreadable;
        info.detail = w.resolved + ": " + errno_text(errno);
        return info;
    }
    int fd = ::openat(where.directory, where.path.c_str(),
                      O_RDONLY | O_CLOEXEC | O_NONBLOCK | (w.kind == FileKind::directory ? O_DIRECTORY : 0));
    if (fd < 0) {
        info.kind = FileKind::unreadable;
        info.detail = w.resolved + ": " + errno_text(errno);
        return info;
    }
    ::close(fd);
    info.identity = FileIdentity{static_cast<std::uint64_t>(w.st.st_dev), static_cast<std::uint64_t>(w.st.st_ino)};
    if (w.kind == FileKind::regular) info.size = static_cast<std::uint64_t>(w.st.st_size);
    return info;
}

Result<std::string> RootedFileView::read(std::string_view path, std::size_t max_bytes) const {
    std::string name(path);
    // The open below is the readability check; stat()'s access/open probe
    // would only repeat it.
    Walk w = walk(*this, path);
    if (w.kind != FileKind::regular) {
        std::string why(to_string(w.kind));
        if (!w.detail.empty()) why += " (" + w.detail + ")";
        return make_file_error(name, 0, "cannot read in " + describe() + ": " + why);
    }
    // walk() resolved every link, so the last component must not be one now.
    const At where = at(w.resolved);
    auto text = read_text_file_at(where.directory, where.path, host_path(w.resolved), max_bytes, FollowLinks::no);
    if (!text) return make_file_error(name, 0, "cannot read in " + describe() + ": " + text.error().message);
    return text;
}

std::vector<std::string> RootedFileView::list(std::string_view dir) const {
    std::vector<std::string> names;
    Walk w = walk(*this, dir);
    if (w.kind != FileKind::directory) return names;
    const At where = at(w.resolved);
    const int fd = ::openat(where.directory, where.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return names;
    DIR* d = ::fdopendir(fd);
    if (d == nullptr) {
        ::close(fd);
        return names;
    }
    while (const dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..") names.push_back(std::move(n));
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
}

std::string RootedFileView::describe() const { return description_; }

}  // namespace launchguard
