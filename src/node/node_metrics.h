// A node check as Prometheus text, for node_exporter's textfile collector
// (the usual way HPC sites alert on node state): one gauge per rule and
// outcome, one per node health state, the time of the check and how long it
// took; and, from the node record (node/node_record.h), the node's identity
// and facts as info series (value 1), so that `launchguard fleet
// --prometheus` can rebuild the records from Prometheus. Metric names are
// declared here, beside the code that writes them; their labels and
// cardinality are in docs/fleet.md.
#pragma once

#include <boost/json/object.hpp>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "node/node_verdict.h"

namespace launchguard {

// The version of the series below, as the `schema` label of
// launchguard_node_info. A change that a reader must know about (a renamed
// metric or label) makes it v2.
inline constexpr std::string_view kNodeMetricsSchema = "launchguard.node-metrics/v1";

inline constexpr const char* kMetricRuleOutcome = "launchguard_node_rule_outcome";
inline constexpr const char* kMetricNodeHealth = "launchguard_node_health";
inline constexpr const char* kMetricCheckTimestamp = "launchguard_node_check_timestamp_seconds";
inline constexpr const char* kMetricCheckDuration = "launchguard_node_check_duration_seconds";
// {node, node_class, schema, kernel_release, gpu_driver_version}
inline constexpr const char* kMetricNodeInfo = "launchguard_node_info";
// {fact, value}: one per fact the node could read
inline constexpr const char* kMetricFactInfo = "launchguard_node_fact_info";
// {fact}: one per fact the node could not read
inline constexpr const char* kMetricFactUnknownInfo = "launchguard_node_fact_unknown_info";
// {rule, message}: the first finding's message of each rule that warned or blocked
inline constexpr const char* kMetricFindingInfo = "launchguard_node_finding_info";
// {problem}: why the check did not run, when health is unknown
inline constexpr const char* kMetricProblemInfo = "launchguard_node_problem_info";

// Label values taken from free text (a finding's message, a problem) are cut
// to this many bytes, at a UTF-8 character boundary, so that one odd message
// cannot make a huge series.
inline constexpr std::size_t kMetricTextLimit = 256;

// `record`: the node record of this check (node_record_json, or
// unknown_node_record_json when the check did not run); nullptr writes the
// check's series alone.
std::string render_node_metrics(const NodeVerdict& verdict, std::chrono::system_clock::time_point checked_at,
                                std::chrono::duration<double> duration, const boost::json::object* record = nullptr);

}  // namespace launchguard
