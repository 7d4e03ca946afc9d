// The profile of a step, loaded once per slurmstepd. user_init loads it in
// the step's own process, before any task is forked; each task then reads
// that copy instead of parsing it again (docs/performance.md). The prolog
// process reads it the same way.
#pragma once

#include <string>

#include "profile/profile.h"

namespace launchguard::slurm {

// The profile named by the plugstack argument `profile=`, loaded on first
// use in this process (or in the process this one was forked from).
const Result<Profile>& step_profile(const std::string& name_or_path);

}  // namespace launchguard::slurm
