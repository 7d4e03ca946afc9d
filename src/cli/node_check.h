// `launchguard node-check`: shared between the command (node_check_command.cpp:
// arguments, the plain, --npd and --metrics-file outputs) and the Slurm
// HealthCheckProgram adapter (node_check_slurm.cpp).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "node/node_check_config.h"
#include "node/node_watchdog.h"

namespace launchguard::cli {

// Exit code for a node in this health: as `check` (0 allow, 1 block, 2 the
// check could not run), which node-problem-detector reads as OK, NonOK and
// Unknown.
int exit_code_for(NodeHealth health);

struct TimedRun {
    NodeCheckRun run;
    std::chrono::system_clock::time_point finished;
    std::chrono::duration<double> duration{};
};
TimedRun run_timed(const NodeCheckRequest& request, std::chrono::seconds timeout);

// Writes the metrics file (the check's series and its node record's)
// atomically; an error message when it cannot.
std::optional<std::string> write_metrics(const std::string& path, const NodeCheckConfig& config, const TimedRun& timed);

// Writes the node record (the check's, or one that says the check could not
// run) as DIR/<hostname>.json atomically; an error message when it cannot.
std::optional<std::string> write_record(const std::string& dir, const NodeCheckConfig& config, const TimedRun& timed);

// --slurm: everything comes from the configuration (with what the command
// line set explicitly laid over it). Returns the exit code.
int run_slurm_health_check(const NodeCheckConfig& config);

}  // namespace launchguard::cli
