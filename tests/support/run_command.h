// Runs a command line through /bin/sh and captures stdout, stderr and the
// exit code, for tests that drive the real executables.
#pragma once

#include <string>

namespace launchguard::testing {

struct CommandResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

CommandResult run_command(const std::string& command_line);
std::string quote_arg(const std::string& arg);

#ifdef LAUNCHGUARD_CLI
// The launchguard executable the tests run, quoted for a shell command line.
inline std::string cli() { return quote_arg(LAUNCHGUARD_CLI); }
#endif

}  // namespace launchguard::testing
