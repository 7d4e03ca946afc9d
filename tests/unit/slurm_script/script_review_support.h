// The batch-script tests' common step: review a script under a shipped
// profile in enforce mode, failing the test (not crashing it) on bad input.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "engine/profile_loader.h"
#include "slurm_script/script_review.h"

namespace launchguard::testing {

inline slurm_script::ScriptReview review_under(const std::string& text, const std::string& profile_name) {
    auto profile = load_profile(profile_name);
    EXPECT_TRUE(profile) << profile.error().to_string();
    if (!profile) return slurm_script::ScriptReview{};
    auto result = slurm_script::review_script(text, "job.sbatch", profile.value(), Mode::enforce);
    EXPECT_TRUE(result) << result.error().to_string();
    return result ? result.value() : slurm_script::ScriptReview{};
}

}  // namespace launchguard::testing
