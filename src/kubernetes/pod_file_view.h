// A container's filesystem as its pod spec describes it: the volumes it
// mounts. A path under a mount is there (its content is on the node or in
// the API server, not in the spec); a path under no mount may be in the
// image, which launchguard never sees, so it is unknown, never missing.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "context/file_view.h"

namespace launchguard::kubernetes {

struct PodMount {
    enum class Source { host_path, config_map, secret, empty_dir, other };
    std::string mount_path;  // normalised
    std::string volume;      // volume name
    Source source = Source::other;
    std::string description;  // "hostPath /opt/microsoft/ndv5-topo.xml (File)"
    std::string host_path;    // hostPath volumes: the node path, subPath applied
    std::string host_type;    // hostPath type as written ("File", "Directory", "")
    bool whole_key = false;   // a ConfigMap/Secret key mounted by subPath: the mount is one file
    // ConfigMap/Secret `items`: the only relative paths it projects; nullopt
    // when every key is projected (which keys exist is not in the spec).
    std::optional<std::vector<std::string>> projected;
    // The files of a ConfigMap whose data the review has: relative path ->
    // content. Then every file under the mount is known, and only these exist.
    std::optional<std::map<std::string, std::string>> contents;
};

class PodFileView final : public FileView {
public:
    PodFileView(std::vector<PodMount> mounts, std::string description);

    [[nodiscard]] FileInfo stat(std::string_view path) const override;
    [[nodiscard]] Result<std::string> read(std::string_view path, std::size_t max_bytes) const override;
    [[nodiscard]] std::vector<std::string> list(std::string_view dir) const override;
    [[nodiscard]] std::string describe() const override { return description_; }

    // The mount that provides `path`, if any (the deepest one).
    [[nodiscard]] const PodMount* mount_for(std::string_view path) const;

private:
    FileInfo stat_known(const PodMount& mount, const std::string& relative, FileInfo info) const;

    std::vector<PodMount> mounts_;
    std::string description_;
};

}  // namespace launchguard::kubernetes
