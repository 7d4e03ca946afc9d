// Profile YAML (--profile, LAUNCHGUARD_PROFILE, plugstack profile=): the
// strict schema reader on top of yaml-cpp. Errors carry a message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "profile/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto profile = launchguard::parse_profile(text, "fuzz.yaml");
    if (!profile.ok() && profile.error().message.empty()) std::abort();
    return 0;
}
