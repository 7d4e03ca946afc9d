// yaml-cpp 0.7 (Debian 12) never returns on some invalid YAML ("{a: b},",
// and the many variants a fuzzer finds in minutes, some well inside a
// document): it loops while allocating, gigabytes within seconds, so a
// three-line manifest or profile could take launchguard down. Input that
// may be hostile is first parsed in a child process with a time bound (and,
// outside sanitizer builds, a memory bound); only what that child survives
// reaches yaml-cpp in the caller. The pattern hwloc XML import uses too.
#pragma once

#include <string>
#include <string_view>

#include "util/error.h"

namespace launchguard {

inline constexpr unsigned kYamlParseSeconds = 10;

// Done when yaml-cpp finishes with `text` (a parse error is fine: the caller
// reports it with its line); an error naming `origin` when it loops, runs out
// of memory or crashes. A text that passed once is not checked again in this
// process (or its forked children).
Status check_yaml_terminates(std::string_view text, const std::string& origin);

}  // namespace launchguard
