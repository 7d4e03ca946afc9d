// A node check as Prometheus text, for node_exporter's textfile collector
// (the usual way HPC sites alert on node state): one gauge per rule and
// outcome, one per node health state, the time of the check and how long it
// took. Metric names are declared here, beside the code that writes them.
#pragma once

#include <chrono>
#include <string>

#include "node/node_verdict.h"

namespace launchguard {

inline constexpr const char* kMetricRuleOutcome = "launchguard_node_rule_outcome";
inline constexpr const char* kMetricNodeHealth = "launchguard_node_health";
inline constexpr const char* kMetricCheckTimestamp = "launchguard_node_check_timestamp_seconds";
inline constexpr const char* kMetricCheckDuration = "launchguard_node_check_duration_seconds";

std::string render_node_metrics(const NodeVerdict& verdict, std::chrono::system_clock::time_point checked_at,
                                std::chrono::duration<double> duration);

}  // namespace launchguard
