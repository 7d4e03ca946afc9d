#include "node/node_metrics.h"

#include "util/prometheus_text.h"

namespace launchguard {

std::string render_node_metrics(const NodeVerdict& verdict, std::chrono::system_clock::time_point checked_at,
                                std::chrono::duration<double> duration) {
    prometheus::TextWriter out;
    out.family(kMetricRuleOutcome, "gauge",
               "Outcome of each node rule in the last launchguard node check: 1 for the outcome it had, 0 for the "
               "others.");
    for (const auto& rule : verdict.rules) {
        for (RuleOutcome outcome : kAllRuleOutcomes) {
            out.sample(kMetricRuleOutcome, {{"rule", rule.rule}, {"outcome", to_string(outcome)}},
                       std::uint64_t{rule.outcome == outcome ? 1U : 0U});
        }
    }
    out.family(kMetricNodeHealth, "gauge",
               "Health of the node in the last launchguard node check: 1 for its state (healthy, warning, degraded, "
               "unknown), 0 for the others.");
    for (NodeHealth health : {NodeHealth::healthy, NodeHealth::warning, NodeHealth::degraded, NodeHealth::unknown}) {
        out.sample(kMetricNodeHealth, {{"health", to_string(health)}},
                   std::uint64_t{verdict.health == health ? 1U : 0U});
    }
    out.family(kMetricCheckTimestamp, "gauge", "Unix time at which the last launchguard node check finished.");
    out.sample(kMetricCheckTimestamp, {}, std::chrono::duration<double>(checked_at.time_since_epoch()).count());
    out.family(kMetricCheckDuration, "gauge", "Seconds the last launchguard node check took.");
    out.sample(kMetricCheckDuration, {}, duration.count());
    return out.take();
}

}  // namespace launchguard
