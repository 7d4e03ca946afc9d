// --env-file / --host-env-file / /proc/PID/environ: both formats. Every name
// accepted from a line-based file is a valid variable name.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "probe/environment_probe.h"
#include "util/text_escape.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto env = launchguard::parse_env_text(text, "job.env");
    if (env.ok() && (text.empty() || text.back() != '\0')) {
        for (const auto& [name, value] : *env) {
            if (!launchguard::is_variable_name(name)) std::abort();
        }
    }
    return 0;
}
