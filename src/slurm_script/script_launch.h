// A batch script's srun steps as launches: each step becomes a LaunchContext
// that holds what the script says (shape, environment, pyxis container view,
// binding) and leaves the rest unknown — the image's files, the node's state —
// or takes it from the profile where the profile describes the node class.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "context/file_view.h"
#include "context/launch_context.h"
#include "profile/profile.h"
#include "slurm_script/batch_script.h"

namespace launchguard::slurm_script {

// One pyxis --container-mounts entry, "SRC[:DST[:FLAGS]]".
struct ContainerMount {
    std::string source;
    std::string target;
    bool readonly = false;
    std::string written;
};

std::vector<ContainerMount> parse_container_mounts(const std::string& value);

struct StepLaunch {
    int line = 0;       // the srun line; 0 for the batch step itself (a script with no srun)
    std::string label;  // "srun on line 58", "the batch step"
    LaunchContext context;
    std::vector<std::string> notes;  // variables whose values the script computes, and similar
};

// One launch per srun step; a script without srun is judged as its batch step.
std::vector<StepLaunch> launches_from_script(const BatchScript& script, const Profile& profile);

}  // namespace launchguard::slurm_script
