// Replacing a file that other processes read while it is being written (the
// topology cache tasks load, the metrics file node_exporter scrapes): the
// content goes to a temporary file beside the target, which is then renamed
// over it, so a reader sees the old file or the new one, never half of one.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "util/error.h"

namespace launchguard {

// Writes `content` to `path` atomically with permissions `mode`. The
// directory must exist. `path` must be a regular file or not exist: anything
// else there (a device node, a FIFO, a socket, a directory, a symlink, even
// one to a regular file) is refused, not replaced. Errors name `path`.
Status write_file_atomically(const std::string& path, std::string_view content, mode_t mode);

}  // namespace launchguard
