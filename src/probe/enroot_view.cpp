#include "probe/enroot_view.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "probe/rooted_file_view.h"
#include "util/path.h"
#include "util/text.h"
#include "util/text_escape.h"

namespace launchguard {
namespace {

// Is `path` the mount target itself or below it? Returns the rest ("" or "/x").
bool under(const std::string& path, const std::string& target, std::string& rest) {
    if (target == "/") {
        rest = path == "/" ? "" : path;
        return true;
    }
    if (path == target) {
        rest.clear();
        return true;
    }
    if (path.size() > target.size() && path.compare(0, target.size(), target) == 0 && path[target.size()] == '/') {
        rest = path.substr(target.size());
        return true;
    }
    return false;
}

}  // namespace

bool EnrootMount::is_bind() const {
    return options.find("bind") != std::string::npos || type == "none" || type.empty();
}

bool EnrootMount::is_tmpfs() const { return type == "tmpfs"; }

Result<std::vector<EnrootMount>> parse_enroot_fstab(std::string_view text, const std::string& origin) {
    std::vector<EnrootMount> mounts;
    std::istringstream in{std::string(text)};
    std::string raw;
    int line = 0;
    while (std::getline(in, raw)) {
        ++line;
        std::string_view s = trim(raw);
        if (s.empty() || s.front() == '#') continue;
        std::istringstream fields{std::string(s)};
        EnrootMount m;
        std::string target;
        fields >> m.source >> target >> m.type >> m.options;
        if (m.source.empty() || target.empty()) {
            Error e = make_file_error(origin, line,
                                      "expected 'source target [type [options]]', got '" + std::string(s) + "'");
            return e;
        }
        // Fields are blank-separated; blanks inside a path travel octal-escaped.
        m.source = fstab_unescape(m.source);
        m.target = normalize_absolute(fstab_unescape(target));
        m.line = line;
        m.origin = origin;
        mounts.push_back(std::move(m));
    }
    return mounts;
}

Environment parse_enroot_environ(std::string_view text) {
    Environment env;
    std::istringstream in{std::string(text)};
    std::string raw;
    while (std::getline(in, raw)) {
        std::string_view s = raw;
        while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
        if (s.empty() || s.front() == '#') continue;
        auto eq = s.find('=');
        if (eq == std::string_view::npos) continue;
        std::string_view name = s.substr(0, eq);
        std::string_view value = s.substr(eq + 1);
        if (!is_variable_name(name) || name.rfind("ENROOT_", 0) == 0) continue;
        if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
            value = value.substr(1, value.size() - 2);
        }
        env[std::string(name)] = std::string(value);
    }
    return env;
}

EnrootFileView::EnrootFileView(std::string rootfs, std::shared_ptr<const FileView> host,
                               std::vector<EnrootMount> mounts)
    : rootfs_(std::move(rootfs)),
      rootfs_view_(std::make_shared<RootedFileView>(rootfs_)),
      host_(std::move(host)),
      mounts_(std::move(mounts)) {}

EnrootFileView::Resolved EnrootFileView::resolve(std::string_view path) const {
    const std::string p = normalize_absolute(path);
    // The last mount whose target covers the path wins, as in the kernel.
    for (auto it = mounts_.rbegin(); it != mounts_.rend(); ++it) {
        std::string rest;
        if (!under(p, it->target, rest)) continue;
        if (it->is_tmpfs()) return {nullptr, p, rest.empty()};
        if (it->is_bind() && !it->source.empty() && it->source.front() == '/') {
            return {host_.get(), normalize_absolute(it->source + rest)};
        }
    }
    return {rootfs_view_.get(), p};
}

FileInfo EnrootFileView::stat(std::string_view path) const {
    Resolved r = resolve(path);
    if (r.view == nullptr) {
        FileInfo info;
        info.kind = r.tmpfs_root ? FileKind::directory : FileKind::missing;
        info.resolved_path = r.path;
        info.detail = "an empty tmpfs is mounted there in the container";
        return info;
    }
    FileInfo info = r.view->stat(r.path);
    if (r.view == host_.get())
        info.detail = "bind-mounted from host " + r.path + (info.detail.empty() ? "" : "; " + info.detail);
    return info;
}

Result<std::string> EnrootFileView::read(std::string_view path, std::size_t max_bytes) const {
    Resolved r = resolve(path);
    if (r.view == nullptr)
        return make_file_error(std::string(path), 0, "an empty tmpfs is mounted there in the container");
    return r.view->read(r.path, max_bytes);
}

std::vector<std::string> EnrootFileView::list(std::string_view dir) const {
    Resolved r = resolve(dir);
    if (r.view == nullptr) return {};
    return r.view->list(r.path);
}

std::string EnrootFileView::describe() const {
    return "enroot container rootfs " + rootfs_ + " with " + std::to_string(mounts_.size()) + " pending mount(s)";
}

}  // namespace launchguard
