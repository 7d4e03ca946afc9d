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

// slurmstepd: starts the same load on a thread of its own and returns; the
// thread then hands the core the plugstack arguments (prepare_step), which
// reads what all tasks share. Between the plugin's init and user_init
// slurmstepd spends about 2 ms setting up the step (measured by uprobe), in
// which the load and that read, about 1 ms, cost the step nothing. Loads
// at once (and leaves the reading to the tasks) when no thread can be started.
void start_loading_core(int ac, char** av) noexcept;

// Waits for the load that start_loading_core() started (or loads now if
// none was) and returns its result. Call it before slurmstepd forks the
// tasks: user_init is before the fork. Unloading this plugin (a step that
// ends during set-up) waits for the thread too, since it runs this code.
// The wait lasts at most the plugstack's node-read-timeout= seconds: then
// the thread is left to itself (this plugin stays mapped for it), the
// result is null for this process and the tasks it forks, and
// core_load_error() says what the thread was still doing.
const launchguard_core* wait_for_core() noexcept;

// The core once load_core() or wait_for_core() has returned it, else null.
const launchguard_core* loaded_core();
const std::string& core_load_error();

// For timing=1 (docs/slurm.md): how long the loading thread took to load the
// core and to run prepare_step, how long slurmstepd took from starting it to
// waiting for it (its own set-up of the step, in which the thread's work is
// free), and how long wait_for_core() waited, in microseconds
// ("load=..us prepare_step=..us set-up=..us waited=..us"). Empty before
// wait_for_core() has returned or when no thread was started.
std::string core_loading_times();

}  // namespace launchguard::slurm
