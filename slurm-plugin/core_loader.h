// Loads spank_launchguard_core.so, the task checks, into slurmstepd and
// slurmd. srun, sbatch and salloc never load it: they only need the
// plugstack arguments and --launchguard, which the small plugin carries
// (docs/performance.md has what the core and its libraries cost a process).
#pragma once

#include <string>

#include "core_interface.h"

namespace launchguard::slurm {

// Loads the core that sits in the same directory as this plugin's own file,
// at once, once per process (slurmd). Null when it cannot be loaded;
// core_load_error() then says which file and why.
const launchguard_core* load_core() noexcept;

// slurmstepd: starts the same load on a thread and returns; the thread then
// runs the core's prepare_step (what all tasks share) during slurmstepd's
// own set-up of the step. Loads at once when no thread can be started.
void start_loading_core(int ac, char** av) noexcept;

// Waits for that load (or loads now if none was started), before the tasks
// are forked (user_init), at most node-read-timeout= seconds: then the
// thread is left to itself (this plugin stays mapped for it), the result is
// null, and core_load_error() says what the thread was still doing.
const launchguard_core* wait_for_core() noexcept;

// The core once load_core() or wait_for_core() has returned it, else null.
const launchguard_core* loaded_core();
const std::string& core_load_error();

// For timing=1 (docs/slurm.md): "load=..us prepare_step=..us set-up=..us
// waited=..us"; empty when no thread was waited for.
std::string core_loading_times();

}  // namespace launchguard::slurm
