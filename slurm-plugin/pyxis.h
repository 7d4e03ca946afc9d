// What the task plugin knows of pyxis: the options a user gave it (in the
// job environment on the remote side), and how a fix reads as pyxis options.
// No Slurm dependency (tests/unit/slurm_plugin/).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "context/launch_context.h"
#include "finding/finding.h"

namespace launchguard::slurm {

struct PyxisOptions {
    std::optional<std::string> image;  // --container-image
    std::optional<std::string> name;   // --container-name
    std::vector<std::string> mounts;   // --container-mounts, one entry per SRC[:DST[:FLAGS]]
    [[nodiscard]] bool any() const { return image || name || !mounts.empty(); }
};

// Slurm passes a plugin option --NAME of plugin P to the remote side as
// _SLURM_SPANK_OPTION_P_NAME (dashes become underscores); pyxis also takes
// PYXIS_CONTAINER_* defaults from the environment.
PyxisOptions pyxis_options(const Environment& env);

// The remediation of one finding as a pyxis user applies it: mounts as one
// --container-mounts option, variables exported and named in --container-env
// (under pyxis a value the image sets wins over the job's), and, when a host
// file must be mounted, the site-wide alternative: launchguard's enroot hook.
// Other operations are described as everywhere else.
std::string pyxis_fix(const std::vector<RemediationOp>& ops);

}  // namespace launchguard::slurm
