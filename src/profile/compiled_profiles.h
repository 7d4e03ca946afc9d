// The embedded profiles in their compiled (JSON) form, generated at build
// time by `launchguard profile compile` from profiles/*.yaml into the
// library launchguard_compiled_profiles (src/profile/CMakeLists.txt).
#pragma once

#include <vector>

#include "profile/embedded_profiles.h"

namespace launchguard {

const std::vector<EmbeddedProfile>& compiled_profiles();

}  // namespace launchguard
