#include "kubernetes/pod_file_view.h"

#include <algorithm>

#include "util/path.h"

namespace launchguard::kubernetes {

namespace {

// /run (and /var/run, its alias) holds the state of the running system; an
// image ships it empty, so a file there comes from the node, through a volume.
bool is_runtime_state(const std::string& path) {
    for (std::string_view root : {"/run", "/var/run"}) {
        if (path.size() > root.size() && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/')
            return true;
    }
    return false;
}

}  // namespace

PodFileView::PodFileView(std::vector<PodMount> mounts, std::string description)
    : mounts_(std::move(mounts)), description_(std::move(description)) {
    for (auto& mount : mounts_) mount.mount_path = normalize_absolute(mount.mount_path);
}

const PodMount* PodFileView::mount_for(std::string_view path) const {
    std::string wanted = normalize_absolute(path);
    const PodMount* best = nullptr;
    for (const auto& mount : mounts_) {
        const std::string& root = mount.mount_path;
        bool under =
            wanted == root || root == "/" ||
            (wanted.size() > root.size() && wanted.compare(0, root.size(), root) == 0 && wanted[root.size()] == '/');
        if (under && (best == nullptr || root.size() > best->mount_path.size())) best = &mount;
    }
    return best;
}

FileInfo PodFileView::stat(std::string_view path) const {
    FileInfo info;
    std::string wanted = normalize_absolute(path);
    info.resolved_path = wanted;
    const PodMount* mount = mount_for(wanted);
    if (mount == nullptr) {
        if (is_runtime_state(wanted)) {
            info.kind = FileKind::missing;
            info.detail =
                "under no volume of the pod, and images ship /run empty: what is there describes the "
                "running system, which a pod sees only through its volumes";
            return info;
        }
        info.kind = FileKind::unknown;
        info.detail = "under no volume of the pod: the image may carry it, and launchguard does not see the image";
        return info;
    }
    std::string relative =
        wanted == mount->mount_path ? "" : wanted.substr(mount->mount_path.size() + (mount->mount_path == "/" ? 0 : 1));
    if (mount->contents) return stat_known(*mount, relative, info);
    info.detail = "provided by volume " + mount->volume + " (" + mount->description + "); content not in the spec";
    info.size_known = false;
    if (relative.empty()) {
        bool directory = false;
        switch (mount->source) {
            case PodMount::Source::config_map:
            case PodMount::Source::secret:
                directory = !mount->whole_key;
                break;
            case PodMount::Source::empty_dir:
                directory = true;
                break;
            case PodMount::Source::host_path:
                directory = mount->host_type.starts_with("Directory");
                break;
            case PodMount::Source::other:
                directory = false;
                break;
        }
        info.kind = directory ? FileKind::directory : FileKind::regular;
        return info;
    }
    if (mount->projected) {
        const auto& items = *mount->projected;
        bool listed = std::any_of(items.begin(), items.end(),
                                  [&](const std::string& item) { return normalize_absolute(item) == "/" + relative; });
        bool parent_of_item = std::any_of(items.begin(), items.end(), [&](const std::string& item) {
            std::string full = normalize_absolute(item);
            return full.size() > relative.size() + 1 && full.compare(1, relative.size(), relative) == 0 &&
                   full[relative.size() + 1] == '/';
        });
        if (parent_of_item) {
            info.kind = FileKind::directory;
            return info;
        }
        if (!listed) {
            info.kind = FileKind::missing;
            info.size_known = true;
            info.detail =
                "volume " + mount->volume + " (" + mount->description + ") projects only the keys its items list";
            return info;
        }
    }
    info.kind = FileKind::regular;
    return info;
}

FileInfo PodFileView::stat_known(const PodMount& mount, const std::string& relative, FileInfo info) const {
    const auto& files = *mount.contents;
    info.detail = "volume " + mount.volume + " (" + mount.description + "), whose data the review has";
    auto file = files.find(relative);
    if (file != files.end() && !(relative.empty() && !mount.whole_key)) {
        info.kind = FileKind::regular;
        info.size = file->second.size();
        info.size_known = true;
        return info;
    }
    bool parent = relative.empty() || std::any_of(files.begin(), files.end(), [&](const auto& entry) {
                      return entry.first.size() > relative.size() + 1 &&
                             entry.first.compare(0, relative.size(), relative) == 0 &&
                             entry.first[relative.size()] == '/';
                  });
    info.kind = parent ? FileKind::directory : FileKind::missing;
    info.size_known = true;
    return info;
}

Result<std::string> PodFileView::read(std::string_view path, std::size_t max_bytes) const {
    FileInfo info = stat(path);
    const PodMount* mount = mount_for(path);
    if (info.kind == FileKind::regular && mount != nullptr && mount->contents) {
        std::string wanted = normalize_absolute(path);
        std::string relative = wanted == mount->mount_path ? "" : wanted.substr(mount->mount_path.size() + 1);
        auto file = mount->contents->find(relative);
        if (file != mount->contents->end()) return file->second.substr(0, max_bytes);
    }
    return make_file_error(std::string(path), 0,
                           info.kind == FileKind::unknown
                               ? "cannot read: " + info.detail
                               : "cannot read: the content is not in the pod spec (" + info.detail + ")");
}

std::vector<std::string> PodFileView::list(std::string_view /*dir*/) const { return {}; }

}  // namespace launchguard::kubernetes
