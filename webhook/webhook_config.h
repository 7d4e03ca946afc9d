// The webhook's site configuration (--config FILE, a ConfigMap in the chart):
// the mode, which profile judges which workload (by the node labels its pods
// require), and what a pod may choose for itself through annotations.
//
//   mode: enforce                    # enforce | patch | warn
//   defaultProfile: default          # embedded name or YAML path
//   profiles:                        # every other profile selection may name
//     - /etc/launchguard/profiles/azure-ndv5.yaml
//     - h100-cx7-ib
//   selection:                       # first match wins; every label must match
//     - match: {node.kubernetes.io/instance-type: Standard_ND96isr_H100_v5}
//       profile: azure-ndv5
//   userModes: [enforce, warn]       # launchguard.dev/mode values a pod may use
//   userProfiles: false              # honour launchguard.dev/profile
//   gate:                            # the launch gate (docs/kubernetes.md); absent: not added
//     enabled: true                  # add it to GPU pods at /mutate
//     image: REGISTRY/launchguard:TAG  # holds /usr/bin/launchguard-gate; required when enabled
//     onError: allow                 # allow | block: when the gate cannot judge
//     allowOptOut: false             # honour launchguard.dev/gate: "off"
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/mode_policy.h"
#include "kubernetes/gate_injection.h"
#include "profile/profile.h"
#include "util/error.h"

namespace launchguard::webhook {

inline constexpr const char* kModeAnnotation = "launchguard.dev/mode";
inline constexpr const char* kProfileAnnotation = "launchguard.dev/profile";
inline constexpr const char* kGateAnnotation = "launchguard.dev/gate";

// The `gate:` block. Without it the webhook adds no gate: it does not know
// an image that holds one.
struct GateConfig {
    bool enabled = false;
    std::string image;
    kubernetes::GateOnError on_error = kubernetes::GateOnError::allow;
    bool allow_opt_out = false;
};

struct SelectionRule {
    std::map<std::string, std::string> match;  // node label -> value
    std::string profile;                       // a loaded profile's name
};

struct WebhookConfig {
    UserModePolicy modes;                     // site mode + what pods may choose
    std::string default_profile = "default";  // name of a loaded profile
    std::map<std::string, Profile> profiles;  // by name; loaded at start
    std::vector<SelectionRule> selection;
    bool user_profiles = false;
    GateConfig gate;
};

// Loads and checks everything at start-up, so a request never meets a bad
// profile: every named profile loads, every selection names a loaded one.
// Errors name the file and the field.
Result<WebhookConfig> load_webhook_config(const std::string& path);
// No --config: the embedded default profile, or `profile` (name or path), in `mode`.
Result<WebhookConfig> default_webhook_config(const std::string& profile, Mode mode);

// The profile and mode for one workload, and why (for logs and audit).
struct Choice {
    const Profile* profile = nullptr;
    Mode mode = Mode::enforce;
    std::string reason;   // "selection node.kubernetes.io/instance-type=...", "default"
    std::string refusal;  // an annotation the policy does not allow, said to the user
    // Whether /mutate adds the launch gate: the site enables it, the mode is
    // not off, and the pod has not opted out where the site lets it.
    bool gate = false;
    bool gate_opted_out = false;
    // launchguard.dev/gate asked for what the site does not allow: warned
    // about at /mutate, the gate added all the same (never a denial).
    std::string gate_warning;
};
Choice choose(const WebhookConfig& config, const std::map<std::string, std::string>& node_labels,
              const std::map<std::string, std::string>& annotations);

}  // namespace launchguard::webhook
