// Profiles (--profile, LAUNCHGUARD_PROFILE, plugstack profile=): the strict
// schema reader on top of yaml-cpp, and on top of Boost.JSON for the compiled
// form the Slurm task checks read. Errors carry a message, and a profile that
// reads from YAML reads back equal from its compiled form.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engine/profile_loader.h"
#include "profile/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto profile = launchguard::parse_profile(text, "fuzz.yaml");
    if (!profile.ok() && profile.error().message.empty()) std::abort();
    if (profile.ok()) {
        auto compiled = launchguard::parse_profile_json(launchguard::profile_to_json(*profile), "fuzz.json");
        if (!compiled.ok() || !(*compiled == *profile)) std::abort();
    }
    auto json = launchguard::parse_profile_json(text, "fuzz.json");
    if (!json.ok() && json.error().message.empty()) std::abort();
    return 0;
}
