// The step's profile, loaded once per slurmstepd before the tasks are forked
// (each reads that copy), and once in the prolog process.
#pragma once

#include <string>

#include "profile/profile.h"

namespace launchguard::slurm {

// The profile named by the plugstack argument `profile=`, loaded on first
// use in this process (or in the process this one was forked from).
const Result<Profile>& step_profile(const std::string& name_or_path);

}  // namespace launchguard::slurm
