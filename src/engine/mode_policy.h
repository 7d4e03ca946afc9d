// Which mode a user may pick for a launch (Slurm's --launchguard, a pod's
// launchguard.dev/mode annotation): one policy for every front end, so a
// user can never choose a laxer check than the site permits.
#pragma once

#include <string>
#include <vector>

#include "finding/mode.h"

namespace launchguard {

// Modes ordered by how much they change or stop: off < warn < patch < enforce.
int strictness(Mode mode);

struct UserModePolicy {
    Mode site_mode = Mode::enforce;
    // Modes a user may pick. Empty = the default policy: the site mode,
    // anything stricter, and `warn` (report without changing).
    std::vector<Mode> allowed;

    [[nodiscard]] bool may_choose(Mode requested) const;
    // "enforce, warn": the modes may_choose accepts, strictest first.
    [[nodiscard]] std::string describe_allowed() const;
};

}  // namespace launchguard
