// Profiles compiled into the binary (generated from profiles/*.yaml).
#pragma once

#include <string_view>
#include <vector>

namespace launchguard {

struct EmbeddedProfile {
    std::string_view name;  // file name without .yaml, e.g. "default"
    std::string_view text;  // YAML (embedded_profiles) or JSON (compiled_profiles)
};

const std::vector<EmbeddedProfile>& embedded_profiles();

}  // namespace launchguard
