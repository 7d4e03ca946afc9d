// `launchguard review`: judge a launch from its written form before it is
// submitted. The command reads the inputs and picks each one's kind; each
// kind has its own reviewer, which prints and returns the exit code of
// `check` (0 allow, 1 block, 2 bad input, 3 would patch).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "kubernetes/gate_injection.h"
#include "profile/profile.h"

namespace launchguard::cli {

struct ReviewInput {
    std::string origin;  // the file name, or "-" for stdin
    std::string text;
};

struct ReviewSettings {
    const Profile* profile = nullptr;
    Mode mode = Mode::enforce;
    std::string format = "text";  // text or json
    bool print_patch = false;     // --patch: the fix in the spec's own form
    bool print_patched = false;   // --patched: the spec with the fix applied
    bool fix_blocking = false;    // patch blocking findings the patch fully fixes
    bool verbose = false;         // --unknown (-v): every unknown on its own line in the text report
    // --gate-image: the patch adds the launch gate, as the mutating webhook
    // of a site that enables it does.
    std::optional<kubernetes::GateOptions> gate;
};

// Kubernetes manifests (YAML or JSON, multi-document, AdmissionReviews).
int review_kubernetes(const std::vector<ReviewInput>& inputs, const ReviewSettings& settings);

// One Slurm batch script (review_slurm.cpp).
int review_slurm_script(const ReviewInput& input, const ReviewSettings& settings);

// The exit code for several reviews: bad input first, then block, patch, allow.
int combine_exit_codes(int a, int b);

}  // namespace launchguard::cli
