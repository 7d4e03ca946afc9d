#include "node/node_metrics.h"

#include <cstdio>

namespace launchguard {
namespace {

// Label values escape backslash, double quote and newline (Prometheus text
// exposition format).
std::string label_value(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

void header(std::string& out, const char* name, const char* help) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += "\n# TYPE ";
    out += name;
    out += " gauge\n";
}

std::string number(double value) {
    char text[64];
    std::snprintf(text, sizeof(text), "%.6f", value);
    return text;
}

}  // namespace

std::string render_node_metrics(const NodeVerdict& verdict, std::chrono::system_clock::time_point checked_at,
                                std::chrono::duration<double> duration) {
    std::string out;
    header(out, kMetricRuleOutcome,
           "Outcome of each node rule in the last launchguard node check: 1 for the outcome it had, 0 for the others.");
    for (const auto& rule : verdict.rules) {
        for (RuleOutcome outcome : kAllRuleOutcomes) {
            out += std::string(kMetricRuleOutcome) + "{rule=\"" + label_value(rule.rule) + "\",outcome=\"" +
                   std::string(to_string(outcome)) + "\"} " + (rule.outcome == outcome ? "1" : "0") + "\n";
        }
    }
    header(out, kMetricNodeHealth,
           "Health of the node in the last launchguard node check: 1 for its state (healthy, warning, degraded, "
           "unknown), 0 for the others.");
    for (NodeHealth health : {NodeHealth::healthy, NodeHealth::warning, NodeHealth::degraded, NodeHealth::unknown}) {
        out += std::string(kMetricNodeHealth) + "{health=\"" + std::string(to_string(health)) + "\"} " +
               (verdict.health == health ? "1" : "0") + "\n";
    }
    header(out, kMetricCheckTimestamp, "Unix time at which the last launchguard node check finished.");
    const double unix_seconds = std::chrono::duration<double>(checked_at.time_since_epoch()).count();
    out += std::string(kMetricCheckTimestamp) + " " + number(unix_seconds) + "\n";
    header(out, kMetricCheckDuration, "Seconds the last launchguard node check took.");
    out += std::string(kMetricCheckDuration) + " " + number(duration.count()) + "\n";
    return out;
}

}  // namespace launchguard
