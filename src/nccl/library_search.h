// Where a task's dynamic loader finds a library, and which NCCL it finds.
// NCCL dlopens its helpers (libibverbs, net plugins) by name, and a program
// loads libnccl.so.2 by its soname, so both follow dlopen's search
// (ld.so(8)): LD_LIBRARY_PATH, the directories ld.so.cache is built from
// (/etc/ld.so.conf and ld.so.conf.d), then the system directories. RPATH and
// RUNPATH of the program are not known here (a Python wheel's bundled NCCL
// is found through them), so a library found this way is the one a plain
// program would load.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "context/file_view.h"
#include "context/launch_context.h"

namespace launchguard::nccl {

// The system directories dlopen falls back to on the architectures NCCL runs on.
const std::vector<std::string>& system_library_dirs();

// dlopen's directories in the task, in order and without repeats: env's
// LD_LIBRARY_PATH (may be null), files' /etc/ld.so.conf{,.d/*.conf} (may
// be null), then system_library_dirs(). `arch` is the node's architecture
// ("x86_64", "aarch64"; empty when unknown): a directory that ends in the
// other architecture's multiarch name ("...aarch64-linux-gnu" on x86_64)
// holds nothing the task's loader would take, and is left out, so that no
// finding or unknown reason names it. With `files`, a directory named
// several ways (links, "//", "..", bind mounts) is kept once: by its identity
// where the view knows it, else by the path it resolves to.
//
// LD_LIBRARY_PATH and ld.so.conf come from the task, so at most
// kMaxLoaderDirsPerCheck distinct directories are kept; `not_searched` then
// says why the rest were left out (it begins with kCheckBoundDetail,
// context/memo_file_view.h), and a search of `dirs` that finds nothing is
// undecided with that reason rather than "not there".
inline constexpr std::size_t kMaxLoaderDirsPerCheck = 256;
struct LoaderDirs {
    std::vector<std::string> dirs;
    std::string not_searched;  // empty when every directory is in `dirs`
};
LoaderDirs loader_dirs(const Environment* env, const FileView* files, std::string_view arch);

struct Version {
    int major = 0;
    int minor = 0;
    int patch = 0;
    auto operator<=>(const Version&) const = default;
    [[nodiscard]] std::string to_string() const;
};
// "2.21.5" -> {2,21,5}; "2.27" -> {2,27,0}; anything else -> nullopt.
std::optional<Version> parse_version(std::string_view text);
// The version in a versioned file name as NCCL's packages install it:
// "libnccl.so.2.21.5" -> 2.21.5; "libnccl.so.2" -> nullopt.
std::optional<Version> version_from_file_name(std::string_view name);

// First `file_name` in `dirs` under the view: the path found ("" when none),
// the path after links, and the paths the view could not answer for (the
// first 16; past the check's bound (context/memo_file_view.h) one, with the
// bound as the reason; dirs.not_searched when nothing was found).
struct LibraryFound {
    std::string path;
    std::string resolved;
    std::vector<std::string> undecided;
};
LibraryFound find_in_dirs(const FileView& files, const LoaderDirs& dirs, std::string_view file_name);

// The NCCL a task would load: libnccl.so.2 along `dirs`, and its version
// from the name its soname link resolves to (NCCL's packages install
// libnccl.so.2 -> libnccl.so.2.X.Y). Reading the version from the binary
// itself ("NCCL version 2.X.Y+cudaA.B", the VERSION_STRING NCCL's
// src/init.cc keeps in its read-only data) would mean reading hundreds of
// megabytes per task; a library without a versioned name has an unknown
// version.
struct NcclLibrary {
    LibraryFound found;
    std::optional<Version> version;
    std::string version_source;  // "libnccl.so.2 -> /usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5"
};
NcclLibrary find_nccl_library(const FileView& files, const LoaderDirs& dirs);

}  // namespace launchguard::nccl
