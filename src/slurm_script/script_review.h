// Judging a Slurm batch script before it is submitted: each srun step becomes
// a launch (script_launch.h), the engine runs the rules that can decide from
// a script on it, and the remediation becomes edits in the script's own terms
// (script_patch.h). `launchguard review` is a thin front end over this.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "profile/profile.h"
#include "rules/rule.h"
#include "slurm_script/batch_script.h"
#include "slurm_script/script_launch.h"
#include "slurm_script/script_patch.h"
#include "util/error.h"

namespace launchguard::slurm_script {

struct StepReview {
    StepLaunch launch;
    Report report;    // the engine's report for this step alone
    StepFixes fixes;  // remediation of its blocking and patching findings
};

struct ScriptReview {
    BatchScript script;
    std::vector<StepReview> steps;
    // Every step's findings in one report (each finding's first evidence is
    // "step"), what the script computes at run time as unknowns of "review",
    // and the worst decision of any step.
    Report report;
};

// The CLI's rules (C): every rule that can decide from a spec (K) is among
// them, and those that need the node report it as unknown. Rules for pod
// specs alone (K without C) have nothing to read in a batch script.
inline constexpr unsigned kScriptScopes = kScopeCli;

Result<ScriptReview> review_script(std::string_view text, const std::string& path, const Profile& profile, Mode mode);

// The script with every fix it can carry applied (`review --patched`).
Result<std::string> patched_script(const ScriptReview& review);

}  // namespace launchguard::slurm_script
