// `launchguard node-check` under a deadline. slurmd runs its
// HealthCheckProgram on every node at once and waits for it; NPD runs its
// plugins with a timeout of its own. A check that blocks on a hung device
// must therefore end on time with a verdict of `unknown` that names the step
// that stalled, never hang its caller. The whole check (profile, topology
// cache, probes, rules, the rendered report) runs in a child process that is
// abandoned at the deadline (util/child_process.h).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "node/node_check.h"
#include "node/node_verdict.h"

namespace launchguard {

enum class NodeReportFormat { none, text, json };

struct NodeCheckRequest {
    std::string profile = "default";  // embedded name or YAML path
    NodeCheckOptions options;
    NodeReportFormat format = NodeReportFormat::none;
    bool color = false;  // text: terminal colours
    // Also render the node record (node/node_record.h) into NodeCheckRun::record;
    // json format prints the record itself. Its class: node_class, else the profile's name.
    bool record = false;
    std::string node_class;
};

struct NodeCheckRun {
    NodeVerdict verdict;             // unknown when the check could not run or finish
    std::string report;              // the rendered report, in the requested format
    std::vector<std::string> notes;  // what the operator should hear besides (a cache that could not be written)
    std::string record;              // the node record's JSON, when requested and the check ran
};

inline constexpr std::chrono::seconds kDefaultNodeCheckTimeout{10};

NodeCheckRun run_node_check_with_deadline(const NodeCheckRequest& request, std::chrono::milliseconds deadline);

}  // namespace launchguard
