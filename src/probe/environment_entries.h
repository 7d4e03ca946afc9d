// Environment entries as execve passes them ("NAME=value" strings: environ,
// /proc/PID/environ, Slurm's job environment), read as getenv() reads them.
// Header-only: the small SPANK plugin reads the job environment with it and
// links nothing else of the probe layer.
#pragma once

#include <string_view>

#include "context/launch_context.h"

namespace launchguard {

// An entry without a name ("=x") or without '=' is invisible to getenv(),
// and so is the second of a name: getenv() returns the first it finds.
// Neither is a reason to skip the rest.
inline void add_environ_entry(Environment& env, std::string_view entry) {
    const std::size_t eq = entry.find('=');
    if (eq != std::string_view::npos && eq > 0) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
}

// A NULL-terminated array of entries (may be null).
inline Environment environment_from_entries(const char* const* entries) {
    Environment env;
    for (const char* const* e = entries; e != nullptr && *e != nullptr; ++e) add_environ_entry(env, *e);
    return env;
}

}  // namespace launchguard
