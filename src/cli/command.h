// Each subcommand registers itself on the CLI11 app and, when chosen, leaves
// the function that runs it. Exit codes are a public contract:
//   0 allow, 1 block, 2 bad input or usage, 3 the launch would be patched.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace launchguard {
enum class Decision;  // engine/engine.h
}

namespace launchguard::cli {

inline constexpr int kExitAllow = 0;
inline constexpr int kExitBlock = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitPatch = 3;

using CommandRunner = std::function<int()>;

void add_check_command(CLI::App& app, CommandRunner& runner);
void add_rules_command(CLI::App& app, CommandRunner& runner);
void add_explain_command(CLI::App& app, CommandRunner& runner);
void add_topo_command(CLI::App& app, CommandRunner& runner);
void add_profile_command(CLI::App& app, CommandRunner& runner);
void add_enroot_hook_command(CLI::App& app, CommandRunner& runner);
void add_review_command(CLI::App& app, CommandRunner& runner);
void add_node_check_command(CLI::App& app, CommandRunner& runner);
void add_gather_command(CLI::App& app, CommandRunner& runner);
void add_fleet_command(CLI::App& app, CommandRunner& runner);
void add_gate_command(CLI::App& app, CommandRunner& runner);

// Prints "launchguard: <message>" to stderr and returns kExitBadInput.
int bad_input(const std::string& message);
// The exit code of a launch's decision: allow 0, block 1, patch 3.
int exit_code_for(Decision decision);
bool stdout_is_terminal();
// A whole number in [min, INT_MAX] whose error names the bound in digits a
// person can read (CLI11's own number checks print DBL_MAX in full).
CLI::Validator count_in_range(int min);
// Writes what a command printed to stdout; a failed write (a full disk, a
// closed pipe) is bad output, not success: returns kExitBadInput then.
int finish_output(int exit_code);

}  // namespace launchguard::cli
