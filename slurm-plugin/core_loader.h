// Loads spank_launchguard_core.so, the task checks, into slurmstepd and
// slurmd. srun, sbatch and salloc never load it: they only need the
// plugstack arguments and --launchguard, which the small plugin carries
// (docs/performance.md has what the core and its libraries cost a process).
#pragma once

#include <string>

#include "core_interface.h"

namespace launchguard::slurm {

// The core that sits in the same directory as this plugin's own file, loaded
// once per process. Null when it cannot be loaded; core_load_error() then
// says which file and why (dlerror(), or an ABI mismatch).
const launchguard_core* load_core();
// The core if load_core() has succeeded in this process, else null.
const launchguard_core* loaded_core();
const std::string& core_load_error();

}  // namespace launchguard::slurm
