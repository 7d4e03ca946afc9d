#include "nccl/library_search.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "context/memo_file_view.h"
#include "util/text.h"

namespace launchguard::nccl {
namespace {

constexpr std::string_view kNcclSoname = "libnccl.so.2";

void add_ld_conf_dirs(const FileView& files, const std::string& path, std::vector<std::string>& dirs) {
    auto text = files.read(path, 64U << 10);
    if (!text) return;
    for (const auto& raw : split_list(*text, '\n')) {
        std::string_view line = trim(raw);
        if (line.starts_with('/')) dirs.emplace_back(line);
    }
}

std::optional<int> number(std::string_view text) {
    int v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size() || text.empty() || v < 0) return std::nullopt;
    return v;
}

}  // namespace

const std::vector<std::string>& system_library_dirs() {
    static const std::vector<std::string> kDirs = {
        "/usr/lib/x86_64-linux-gnu",
        "/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/lib64",
        "/usr/lib",
        "/lib",
        "/usr/local/lib",
    };
    return kDirs;
}

LoaderDirs loader_dirs(const Environment* env, const FileView* files, std::string_view arch) {
    std::vector<std::string> dirs;
    if (env != nullptr) {
        if (auto it = env->find("LD_LIBRARY_PATH"); it != env->end()) {
            // Empty entries mean the working directory, which the task may not share with us.
            for (const auto& dir : split_list(it->second, ':')) dirs.push_back(dir);
        }
    }
    if (files != nullptr) {
        add_ld_conf_dirs(*files, "/etc/ld.so.conf", dirs);
        for (const auto& name : files->list("/etc/ld.so.conf.d")) {
            if (name.ends_with(".conf")) add_ld_conf_dirs(*files, "/etc/ld.so.conf.d/" + name, dirs);
        }
    }
    for (const auto& dir : system_library_dirs()) dirs.push_back(dir);
    const std::string_view other = arch == "x86_64"    ? std::string_view("aarch64-linux-gnu")
                                   : arch == "aarch64" ? std::string_view("x86_64-linux-gnu")
                                                       : std::string_view();
    // One directory named many ways (links, "//", "/./", "..", bind mounts)
    // is searched once: by its identity where the view knows it, else by the
    // path it resolves to in the view.
    LoaderDirs unique;
    std::set<std::string> seen;
    std::set<FileIdentity> seen_identities;
    std::size_t left_out = 0;
    for (auto& dir : dirs) {
        if (!other.empty() && dir.ends_with(other)) continue;
        if (!seen.insert(dir).second) continue;
        // Past the bound an entry is not even looked at: it is told apart
        // from the others by its spelling alone.
        if (unique.dirs.size() >= kMaxLoaderDirsPerCheck) {
            ++left_out;
            continue;
        }
        if (files != nullptr) {
            const FileInfo info = files->stat(dir);
            if (info.kind == FileKind::directory && info.identity && !seen_identities.insert(*info.identity).second)
                continue;
            if (info.kind == FileKind::directory && !info.resolved_path.empty() && info.resolved_path != dir &&
                !seen.insert(info.resolved_path).second)
                continue;
        }
        unique.dirs.push_back(std::move(dir));
    }
    if (left_out > 0) {
        unique.not_searched =
            std::string(kCheckBoundDetail) + " of " + std::to_string(kMaxLoaderDirsPerCheck) +
            " library directories per check was reached; " + std::to_string(left_out) +
            " more (LD_LIBRARY_PATH, ld.so.conf and the system directories, in that order) not searched";
    }
    return unique;
}

std::string Version::to_string() const {
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::optional<Version> parse_version(std::string_view text) {
    std::vector<std::string> parts = split_list(text, '.');
    if (parts.size() < 2 || parts.size() > 3) return std::nullopt;
    Version v;
    auto major = number(parts[0]);
    auto minor = number(parts[1]);
    auto patch = parts.size() == 3 ? number(parts[2]) : std::optional<int>(0);
    if (!major || !minor || !patch) return std::nullopt;
    v.major = *major;
    v.minor = *minor;
    v.patch = *patch;
    return v;
}

std::optional<Version> version_from_file_name(std::string_view name) {
    if (auto slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
    constexpr std::string_view kPrefix = "libnccl.so.";
    if (!name.starts_with(kPrefix)) return std::nullopt;
    name.remove_prefix(kPrefix.size());
    // "2" alone is the soname: no minor version to read.
    if (std::count(name.begin(), name.end(), '.') < 1) return std::nullopt;
    return parse_version(name);
}

LibraryFound find_in_dirs(const FileView& files, const LoaderDirs& dirs, std::string_view file_name) {
    constexpr std::size_t kMaxUndecidedNamed = 16;
    LibraryFound found;
    bool over_bound = false;
    for (const auto& dir : dirs.dirs) {
        std::string path = dir + "/" + std::string(file_name);
        FileInfo info = files.stat(path);
        if (info.kind == FileKind::regular) {
            found.path = path;
            found.resolved = info.resolved_path.empty() ? path : info.resolved_path;
            return found;
        }
        if (info.kind != FileKind::unknown) continue;
        // Past the check's bound every path is unknown: name the bound once
        // and a few paths, not thousands.
        if (info.detail.starts_with(kCheckBoundDetail)) {
            if (!over_bound) found.undecided.push_back(path + " (" + info.detail + ")");
            over_bound = true;
        } else if (found.undecided.size() < kMaxUndecidedNamed) {
            found.undecided.push_back(path);
        }
    }
    if (!dirs.not_searched.empty()) found.undecided.push_back(dirs.not_searched);
    return found;
}

NcclLibrary find_nccl_library(const FileView& files, const LoaderDirs& dirs) {
    NcclLibrary lib;
    lib.found = find_in_dirs(files, dirs, kNcclSoname);
    if (lib.found.path.empty()) return lib;
    lib.version = version_from_file_name(lib.found.resolved);
    lib.version_source = lib.found.path + (lib.found.resolved != lib.found.path ? " -> " + lib.found.resolved : "");
    return lib;
}

}  // namespace launchguard::nccl
