// A Report's patch in enroot's own formats: `NAME=VALUE` lines for
// $ENROOT_ENVIRON and fstab lines for $ENROOT_MOUNTS (enroot conf/hooks
// conventions, e.g. 99-mellanox.sh and 50-sharp.sh). Lines already present
// are not repeated, so running the hook twice adds nothing the second time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"

namespace launchguard {

struct EnrootPatch {
    std::vector<std::string> environ_lines;  // without trailing newline
    std::vector<std::string> mount_lines;
    // Changes enroot's formats cannot carry (a newline in an environment
    // value, a name that is not an identifier): the hook refuses the start
    // with these reasons rather than write a line enroot would misread.
    std::vector<std::string> refused;
    [[nodiscard]] bool empty() const { return environ_lines.empty() && mount_lines.empty(); }
};

// A read-only bind of one file, created in the rootfs if absent. Paths are
// fstab-escaped (a space would split the field).
std::string enroot_mount_line(const RemediationOp& op);

EnrootPatch enroot_patch_for(const Report& report, std::string_view existing_environ, std::string_view existing_mounts);

}  // namespace launchguard
