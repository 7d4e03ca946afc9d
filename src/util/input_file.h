// The one way launchguard reads a file it is given: profiles, NCCL topology
// files, nccl.conf, env files, hwloc XML, the topology cache, enroot's fstab
// and environ files, and the procfs/sysfs attributes the probes read.
//
// Every one of these may be chosen by the user whose launch is judged, so the
// reader must not hang on a FIFO, grow without end on /dev/zero, or cut a file
// short: a cut topology file reads as "unterminated", a cut fstab hides a
// mount. A file past its bound is therefore an error that says so, never a
// prefix; callers turn it into exit 2 or into an *unknown* finding.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "util/error.h"

namespace launchguard {

// Bounds (docs/cli.md, "Limits"). A real NCCL topology file or nccl.conf is a
// few KiB and an hwloc XML of a large node a few MiB; these leave a margin of
// more than ten times while keeping one evaluation's memory small.
inline constexpr std::size_t kMaxInputFileBytes = 64U << 20;
// yaml-cpp needs about 13 bytes of memory per byte of YAML; shipped profiles
// are under 8 KiB.
inline constexpr std::size_t kMaxProfileBytes = 4U << 20;
// A sysfs attribute is one page; procfs files such as cpuinfo grow with the
// CPU count and go through kMaxInputFileBytes instead.
inline constexpr std::size_t kMaxAttributeBytes = 1U << 20;

enum class FollowLinks { yes, no };

// The whole content of a regular file of at most max_bytes.
//  - Anything but a regular file (FIFO, socket, device, directory) is refused
//    before it is opened, and again after the open, which never blocks
//    (O_NONBLOCK) in case the path was swapped in between.
//  - A larger file is an error naming its size and the bound. procfs files
//    report size 0, so the bound is also enforced while reading.
//  - FollowLinks::no refuses a symlink as the last component (O_NOFOLLOW):
//    for callers that have already resolved links themselves.
// Errors name `path` in Error::file.
Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes = kMaxInputFileBytes,
                                   FollowLinks follow = FollowLinks::yes);
// The same for `path` relative to the open directory `directory` (openat(2));
// errors name the file `shown_as`.
Result<std::string> read_text_file_at(int directory, const std::string& path, const std::string& shown_as,
                                      std::size_t max_bytes = kMaxInputFileBytes,
                                      FollowLinks follow = FollowLinks::yes);

// "a FIFO", "a character device", "a symlink": what a path that should be a
// regular file is instead (lstat's mode), for messages that refuse it.
std::string file_type_name(mode_t mode);

}  // namespace launchguard
