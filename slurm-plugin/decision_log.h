// One structured line per decision, for "which jobs did launchguard change
// this week, and why": key=value pairs, values without spaces.
#pragma once

#include <string>

#include "engine/engine.h"

namespace launchguard::slurm {

struct DecisionSite {
    std::string hook;  // "task_init" / "job_prolog"
    std::string job;   // job id or "?"
    std::string step;  // step id, "batch", "extern" or "?"
    std::string node;
};

std::string decision_line(const DecisionSite& site, const Report& report);

// This node's name as Slurm shows it: the host name up to its first dot.
std::string short_hostname();
// What the user sees: the findings, one per line, and a summary line. In a
// pyxis container each fix is written as pyxis options (pyxis.h).
std::string user_message(const Report& report, Runtime runtime = Runtime::bare);

}  // namespace launchguard::slurm
