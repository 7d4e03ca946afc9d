#include "node/node_metrics.h"

#include <boost/json.hpp>
#include <map>

#include "node/node_record.h"
#include "util/prometheus_text.h"
#include "util/text_escape.h"

namespace launchguard {
namespace json = boost::json;
namespace {

std::string_view string_at(const json::object& o, std::string_view key) {
    auto it = o.find(key);
    if (it == o.end() || !it->value().is_string()) return {};
    return it->value().as_string();
}

// A fact of the record, {"value": ...}: its value's text, nullopt when the
// node could not read it.
std::optional<std::string> fact_text(const json::value& fact) {
    if (!fact.is_object()) return std::nullopt;
    auto it = fact.as_object().find("value");
    return it == fact.as_object().end() ? std::nullopt : fact_value_text(it->value());
}

// Label values must be valid UTF-8 (Prometheus refuses the whole file
// otherwise); facts and messages quote sysfs, which may hold any byte.
std::string label_text(std::string_view text) { return valid_utf8(text); }
std::string cut(std::string_view text) { return valid_utf8(text.substr(0, utf8_prefix(text, kMetricTextLimit))); }

void record_series(prometheus::TextWriter& out, const NodeVerdict& verdict, const json::object& record) {
    const json::object empty;
    const json::object* node = &empty;
    if (auto it = record.find("node"); it != record.end() && it->value().is_object()) node = &it->value().as_object();
    const json::object* facts = &empty;
    if (auto it = record.find("facts"); it != record.end() && it->value().is_object()) facts = &it->value().as_object();
    std::map<std::string, std::optional<std::string>, std::less<>> values;
    for (const auto& [name, fact] : *facts) {
        auto text = fact_text(fact);
        values.emplace(label_text(name), text ? std::optional<std::string>(label_text(*text)) : std::nullopt);
    }
    auto value_of = [&](std::string_view name) -> std::string {
        auto it = values.find(name);
        return it == values.end() ? std::string() : it->second.value_or("");
    };

    out.family(kMetricNodeInfo, "gauge",
               "The node as its last launchguard node check names it (always 1): host name, node class, the "
               "version of these series, kernel release and GPU driver.");
    const std::string hostname = label_text(string_at(*node, "hostname"));
    const std::string node_class = label_text(string_at(*node, "class"));
    const std::string kernel = value_of(record_fact::kKernelRelease);
    const std::string driver = value_of(record_fact::kGpuDriver);
    out.sample(kMetricNodeInfo,
               {{"node", hostname},
                {"node_class", node_class},
                {"schema", kNodeMetricsSchema},
                {"kernel_release", kernel},
                {"gpu_driver_version", driver}},
               std::uint64_t{1});
    out.family(kMetricFactInfo, "gauge",
               "A fact of the node record (kernel, driver, HCA models and firmware, topology file hash, IOMMU mode, "
               "CPU governor, inventory...) and its value (always 1).");
    for (const auto& [name, value] : values) {
        if (value) out.sample(kMetricFactInfo, {{"fact", name}, {"value", *value}}, std::uint64_t{1});
    }
    out.family(kMetricFactUnknownInfo, "gauge",
               "A fact of the node record that the last check could not read (always 1; the record says why).");
    for (const auto& [name, value] : values) {
        if (!value) out.sample(kMetricFactUnknownInfo, {{"fact", name}}, std::uint64_t{1});
    }
    out.family(kMetricFindingInfo, "gauge",
               "The message of the first finding of each rule that warned or blocked in the last check (always 1).");
    for (const auto& rule : verdict.rules) {
        if ((rule.outcome == RuleOutcome::warn || rule.outcome == RuleOutcome::block) && !rule.message.empty())
            out.sample(kMetricFindingInfo, {{"rule", rule.rule}, {"message", cut(rule.message)}}, std::uint64_t{1});
    }
    if (verdict.health == NodeHealth::unknown) {
        out.family(kMetricProblemInfo, "gauge", "Why the last launchguard node check could not run (always 1).");
        out.sample(kMetricProblemInfo, {{"problem", cut(verdict.problem)}}, std::uint64_t{1});
    }
}

}  // namespace

std::string render_node_metrics(const NodeVerdict& verdict, std::chrono::system_clock::time_point checked_at,
                                std::chrono::duration<double> duration, const json::object* record) {
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
    if (record != nullptr) record_series(out, verdict, *record);
    return out.take();
}

}  // namespace launchguard
