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

// One pyxis --container-mounts entry, "SRC[:DST[:FLAGS]]". A part computed
// at run time ("$DATA:$DATA") is taken as a piece of a path: `target` then
// holds the literal text before it, every path that starts with that text
// could be under the entry, and nothing else is.
struct ContainerMount {
    std::string source;
    std::string target;
    bool readonly = false;
    bool source_known = true;
    bool target_known = true;
    std::string written;  // as the script writes it, run-time parts included
};

// `runtime_parts`: where the run-time parts of `value` stand (Option::value_runtime_parts).
std::vector<ContainerMount> parse_container_mounts(const std::string& value,
                                                   const std::vector<RuntimePart>& runtime_parts = {});

struct StepLaunch {
    int line = 0;       // the srun line; 0 for the batch step itself (a script with no srun)
    std::string label;  // "srun on line 58", "the batch step"
    LaunchContext context;
    std::vector<ContainerMount> mounts;  // the step's --container-mounts entries (pyxis steps)
    std::vector<std::string> notes;      // variables whose values the script computes, and similar
    std::string utility;                 // SrunStep::utility: the step runs no collective library
};

// One launch per srun or MPI launcher step; a script without either is judged as its batch step.
std::vector<StepLaunch> launches_from_script(const BatchScript& script, const Profile& profile);

}  // namespace launchguard::slurm_script
