#include "fleet/prometheus_source.h"

#include <boost/json.hpp>
#include <cmath>
#include <memory>
#include <new>
#include <set>

#include "node/node_metrics.h"
#include "node/node_record.h"

namespace launchguard::fleet {
namespace json = boost::json;
namespace {

// A node has a dozen rules; a target with hundreds is not a node's.
constexpr std::size_t kMaxRulesPerNode = 256;
// A launchguard series has at most six labels of its own beside the target's.
constexpr std::size_t kMaxLabels = 64;

// Roughly what a series holds in memory: map nodes and string heap parts.
std::size_t series_memory(const Series& s) {
    constexpr std::size_t kMapNode = 48;
    std::size_t bytes = sizeof(Series) + s.points.capacity() * sizeof(Series::Point);
    for (const auto& [name, value] : s.labels)
        bytes += kMapNode + sizeof(std::pair<const std::string, std::string>) + name.capacity() + value.capacity();
    return bytes;
}

// The labels each metric carries of its own (node/node_metrics.cpp).
struct OwnLabels {
    std::string_view metric;
    std::vector<std::string_view> labels;
};

const std::vector<OwnLabels>& own_labels() {
    static const std::vector<OwnLabels> table = {
        {kMetricNodeInfo, {"node", "node_class", "schema", "kernel_release", "gpu_driver_version"}},
        {kMetricNodeHealth, {"health"}},
        {kMetricCheckTimestamp, {}},
        {kMetricRuleOutcome, {"rule", "outcome"}},
        {kMetricFactInfo, {"fact", "value"}},
        {kMetricFactUnknownInfo, {"fact"}},
        {kMetricFindingInfo, {"rule", "message"}},
        {kMetricProblemInfo, {"problem"}},
    };
    return table;
}

// The labels that are no metric's own: those of the scrape target.
std::string target_of(const std::map<std::string, std::string>& labels) {
    static const std::set<std::string_view> own = [] {
        std::set<std::string_view> names{"__name__"};
        for (const auto& entry : own_labels()) names.insert(entry.labels.begin(), entry.labels.end());
        return names;
    }();
    std::string key = "{";
    for (const auto& [name, value] : labels) {
        if (own.contains(name)) continue;
        if (key.size() > 1) key += ',';
        key += name + "=\"" + value + "\"";
    }
    return key + "}";
}

std::string label(const Series& series, const std::string& name) {
    auto it = series.labels.find(name);
    return it == series.labels.end() ? std::string() : it->second;
}

std::optional<double> sample_value(const json::value& pair, double& time) {
    if (!pair.is_array() || pair.as_array().size() != 2) return std::nullopt;
    const auto& a = pair.as_array();
    if (a[0].is_double())
        time = a[0].as_double();
    else if (a[0].is_int64())
        time = static_cast<double>(a[0].as_int64());
    else if (a[0].is_uint64())
        time = static_cast<double>(a[0].as_uint64());
    else
        return std::nullopt;
    if (!a[1].is_string()) return std::nullopt;
    const std::string text(a[1].as_string());
    if (text == "NaN") return std::nan("");
    if (text == "+Inf") return HUGE_VAL;
    if (text == "-Inf") return -HUGE_VAL;
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size()) return std::nullopt;
    return value;
}

std::optional<Series> parse_series(const json::value& item) {
    if (!item.is_object()) return std::nullopt;
    const auto& o = item.as_object();
    Series series;
    const auto* metric = o.if_contains("metric");
    if (metric == nullptr || !metric->is_object()) return std::nullopt;
    if (metric->as_object().size() > kMaxLabels) return std::nullopt;
    for (const auto& [name, value] : metric->as_object()) {
        if (!value.is_string()) return std::nullopt;
        series.labels.emplace(std::string(name), std::string(value.as_string()));
    }
    if (const auto* value = o.if_contains("value")) {
        Series::Point point;
        const auto v = sample_value(*value, point.time);
        if (!v) return std::nullopt;
        point.value = *v;
        series.points.push_back(point);
    } else if (const auto* values = o.if_contains("values"); values != nullptr && values->is_array()) {
        for (const auto& pair : values->as_array()) {
            Series::Point point;
            const auto v = sample_value(pair, point.time);
            if (!v) return std::nullopt;
            point.value = *v;
            series.points.push_back(point);
        }
    } else {
        return std::nullopt;
    }
    return series;
}

}  // namespace

std::optional<std::vector<Series>> parse_query_response(std::string_view body, std::string& error,
                                                        std::size_t* skipped) {
    // One arena for the parsed answer, of at most kMaxParsedAnswerMemory:
    // no allocator overhead per value, all of it let go at once on return,
    // and an answer of the smallest values JSON allows (each costs the
    // parsed form many times its bytes) is refused rather than held. The
    // arena's pages are taken as the parser fills them.
    const std::unique_ptr<unsigned char[]> arena_bytes(new unsigned char[kMaxParsedAnswerMemory]);
    json::monotonic_resource arena(arena_bytes.get(), kMaxParsedAnswerMemory, json::get_null_resource());
    const json::storage_ptr storage(&arena);
    json::value parsed;
    boost::system::error_code ec;
    try {
        parsed = json::parse(body, ec, storage);
    } catch (const std::bad_alloc&) {
        error = "the answer takes more than " + std::to_string(kMaxParsedAnswerMemory >> 20) +
                " MiB to parse, fleet's bound for one answer";
        return std::nullopt;
    } catch (const std::exception& e) {
        error = std::string("the response is not JSON: ") + e.what();
        return std::nullopt;
    }
    if (ec) {
        error = "the response is not JSON: " + ec.message();
        return std::nullopt;
    }
    if (!parsed.is_object()) {
        error = "the response is not a JSON object";
        return std::nullopt;
    }
    const auto& o = parsed.as_object();
    const auto* status = o.if_contains("status");
    if (status == nullptr || !status->is_string()) {
        error = "the response has no \"status\"";
        return std::nullopt;
    }
    if (status->as_string() != "success") {
        const auto* type = o.if_contains("errorType");
        const auto* message = o.if_contains("error");
        error = "Prometheus says: ";
        if (type != nullptr && type->is_string()) error += std::string(type->as_string()) + ": ";
        error += message != nullptr && message->is_string()
                     ? std::string(message->as_string())
                     : "status " + json::serialize(*status) + ", no error message";
        return std::nullopt;
    }
    const auto* data = o.if_contains("data");
    if (data == nullptr || !data->is_object()) {
        error = "the response has no \"data\" object";
        return std::nullopt;
    }
    const auto* type = data->as_object().if_contains("resultType");
    if (type == nullptr || !type->is_string() || (type->as_string() != "vector" && type->as_string() != "matrix")) {
        error = "data.resultType is not \"vector\" or \"matrix\"";
        return std::nullopt;
    }
    const auto* result = data->as_object().if_contains("result");
    if (result == nullptr || !result->is_array()) {
        error = "data.result is missing or not a list";
        return std::nullopt;
    }
    std::vector<Series> series;
    std::size_t memory = 0;
    for (const auto& item : result->as_array()) {
        if (auto s = parse_series(item)) {
            memory += series_memory(*s);
            if (memory > kMaxAnswerMemory) {
                error = "the answer's series hold more than " + std::to_string(kMaxAnswerMemory >> 20) +
                        " MiB, fleet's bound for one answer";
                return std::nullopt;
            }
            series.push_back(std::move(*s));
        } else if (skipped != nullptr) {
            ++*skipped;
        }
    }
    return series;
}

const std::vector<SeriesQuery>& record_queries() {
    static const std::vector<SeriesQuery> queries = {
        {kMetricNodeInfo, "launchguard_node_info"},
        {kMetricNodeHealth, "launchguard_node_health == 1"},
        {kMetricCheckTimestamp, "launchguard_node_check_timestamp_seconds"},
        {kMetricRuleOutcome, "launchguard_node_rule_outcome == 1"},
        {kMetricFactInfo, "launchguard_node_fact_info"},
        {kMetricFactUnknownInfo, "launchguard_node_fact_unknown_info"},
        {kMetricFindingInfo, "launchguard_node_finding_info"},
        {kMetricProblemInfo, "launchguard_node_problem_info"},
    };
    return queries;
}

SeriesRecords::SeriesRecords(std::string origin, std::int64_t now) : origin_(std::move(origin)), now_(now) {}

bool SeriesRecords::add(std::string_view metric, const std::vector<Series>& series, std::string& error) {
    for (const auto& s : series) {
        if (s.points.empty()) continue;
        Building& b = targets_[target_of(s.labels)];
        if (metric == kMetricNodeInfo) {
            const std::string node = label(s, "node");
            const std::string node_class = label(s, "node_class");
            const std::string schema = label(s, "schema");
            if (schema != kNodeMetricsSchema) {
                b.problem = "launchguard_node_info: schema '" + schema + "' is not " + std::string(kNodeMetricsSchema);
            } else if (node.empty() || node_class.empty()) {
                b.problem =
                    std::string("launchguard_node_info: no ") + (node.empty() ? "node" : "node_class") + " label";
            } else if (b.info && (b.record.hostname != node || b.record.node_class != node_class)) {
                b.problem = "launchguard_node_info: two series (" + b.record.hostname + ", " + node + ")";
            }
            b.info = true;
            b.record.hostname = node;
            b.record.node_class = node_class;
        } else if (metric == kMetricNodeHealth) {
            const std::string health = label(s, "health");
            if (health != "healthy" && health != "warning" && health != "degraded" && health != "unknown")
                b.problem =
                    "launchguard_node_health: health '" + health + "' is not healthy, warning, degraded or unknown";
            else if (b.health && b.record.health != health)
                b.problem = "launchguard_node_health: both " + b.record.health + " and " + health;
            b.health = true;
            b.record.health = health;
        } else if (metric == kMetricCheckTimestamp) {
            const double t = s.points.back().value;
            if (std::isfinite(t) && t > static_cast<double>(now_ + kClockSkewSeconds))
                b.problem = "launchguard_node_check_timestamp_seconds: " + std::to_string(t) +
                            " is in the future (more than " + std::to_string(kClockSkewSeconds) +
                            " s past this host's clock)";
            else if (std::isfinite(t) && t >= 0)
                b.record.checked_at = utc_timestamp(std::chrono::system_clock::time_point(
                    std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(t))));
        } else if (metric == kMetricRuleOutcome) {
            const std::string rule = label(s, "rule");
            const std::string outcome = label(s, "outcome");
            if (rule.empty() ||
                (outcome != "pass" && outcome != "warn" && outcome != "block" && outcome != "unknown")) {
                b.problem = "launchguard_node_rule_outcome: rule '" + rule + "' with outcome '" + outcome +
                            "' (not pass, warn, block or unknown)";
                continue;
            }
            if (b.record.rules.size() >= kMaxRulesPerNode) {
                b.problem = "launchguard_node_rule_outcome: more than " + std::to_string(kMaxRulesPerNode) + " rules";
                continue;
            }
            for (const auto& r : b.record.rules) {
                if (r.id == rule && r.outcome != outcome)
                    b.problem =
                        "launchguard_node_rule_outcome: rule " + rule + " is both " + r.outcome + " and " + outcome;
            }
            b.record.rules.push_back({rule, outcome, ""});
        } else if (metric == kMetricFactInfo) {
            const std::string fact = label(s, "fact");
            if (!fact.empty()) b.record.facts[fact] = label(s, "value");
        } else if (metric == kMetricFactUnknownInfo) {
            const std::string fact = label(s, "fact");
            if (!fact.empty()) b.record.facts.emplace(fact, std::nullopt);
        } else if (metric == kMetricFindingInfo) {
            const std::string rule = label(s, "rule");
            for (auto& r : b.record.rules) {
                if (r.id == rule && r.message.empty()) r.message = label(s, "message");
            }
        } else if (metric == kMetricProblemInfo) {
            b.record.problem = label(s, "problem");
        }
    }
    std::size_t memory = 0;
    for (const auto& [target, b] : targets_) memory += target.capacity() + record_memory(b.record);
    if (memory > kMaxRecordMemory) {
        error = "the records rebuilt from the series hold more than " + std::to_string(kMaxRecordMemory >> 20) +
                " MiB, fleet's bound";
        return false;
    }
    return true;
}

FleetInput SeriesRecords::finish() {
    FleetInput input;
    input.now = now_;
    const std::string& origin = origin_;
    input.source = "prometheus " + origin;
    for (auto& [target, b] : targets_) {
        const std::string where = origin + " " + target;
        if (!b.info) {
            add_error(input, {where,
                              "no launchguard_node_info series (node-check older than the node "
                              "metrics schema, or a scrape that lost it): left out"});
            continue;
        }
        if (!b.problem.empty()) {
            add_error(input, {where + " (" + b.record.hostname + ")", b.problem + ": left out"});
            continue;
        }
        if (!b.health) {
            b.record.health = "unknown";
            if (b.record.problem.empty()) b.record.problem = "no launchguard_node_health series";
        }
        b.record.origin = where;
        // Each target is a source of its own: a second target that names
        // the same node contradicts it rather than replaces it.
        b.record.source = target;
        // The finding's message came after the rules; rules of a node whose
        // check did not run are none.
        if (b.record.health == "unknown") b.record.rules.clear();
        input.nodes.push_back(std::move(b.record));
    }
    keep_newest(input);
    return input;
}

FleetInput records_from_series(const SeriesByMetric& series, const std::string& origin, std::int64_t now) {
    SeriesRecords records(origin, now);
    std::string error;
    for (const auto& q : record_queries()) {
        auto it = series.find(q.metric);
        if (it != series.end() && !records.add(q.metric, it->second, error)) {
            FleetInput input = records.finish();
            input.incomplete = origin + ": " + error;
            return input;
        }
    }
    return records.finish();
}

std::string_view history_nodes_query() { return "count by (node_class) (launchguard_node_info)"; }

std::string_view history_conforming_query() {
    return "count by (node_class) (launchguard_node_info unless ignoring(node, node_class, schema, kernel_release, "
           "gpu_driver_version, rule, outcome, health) ((launchguard_node_rule_outcome{outcome=~\"warn|block\"} == 1) "
           "or (launchguard_node_health{health=\"unknown\"} == 1)))";
}

std::vector<ClassHistory> history_from_series(const std::vector<Series>& nodes, const std::vector<Series>& conforming) {
    // class -> time (ms) -> point
    std::map<std::string, std::map<std::int64_t, HistoryPoint>> classes;
    auto ms = [](double t) { return static_cast<std::int64_t>(std::llround(t * 1000.0)); };
    // Times a chart can place: 1970 to the end of year 9999 (1e300 is none).
    auto placeable = [](double t) { return std::isfinite(t) && t >= 0 && t < 253402300800.0; };
    auto count = [](double v) { return std::isfinite(v) && v > 0 && v < 1e12 ? static_cast<std::size_t>(v) : 0; };
    for (const auto& s : nodes) {
        auto& points = classes[label(s, "node_class")];
        for (const auto& p : s.points) {
            if (!placeable(p.time)) continue;
            auto& point = points[ms(p.time)];
            point.time = static_cast<std::int64_t>(std::floor(p.time));
            point.nodes += count(p.value);
        }
    }
    for (const auto& s : conforming) {
        auto found = classes.find(label(s, "node_class"));
        if (found == classes.end()) continue;
        for (const auto& p : s.points) {
            if (!placeable(p.time)) continue;
            auto it = found->second.find(ms(p.time));
            if (it != found->second.end()) it->second.conforming = std::min(it->second.nodes, count(p.value));
        }
    }
    std::vector<ClassHistory> history;
    for (auto& [name, points] : classes) {
        if (name.empty()) continue;
        ClassHistory h;
        h.name = name;
        for (auto& [t, point] : points) h.points.push_back(point);
        history.push_back(std::move(h));
    }
    bound_history(history);
    return history;
}

}  // namespace launchguard::fleet
