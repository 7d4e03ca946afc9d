#include "fleet/fleet.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <chrono>
#include <iterator>
#include <set>
#include <unordered_map>

#include "node/node_record.h"
#include "rules/rule.h"
#include "util/text.h"

namespace launchguard::fleet {
namespace json = boost::json;
namespace {

// Which layer of the launch stack each rule family and each record fact
// belongs to: the longest matching prefix decides.
struct LayerEntry {
    std::string_view prefix;
    std::string_view layer;
};

constexpr std::string_view kVirtualization = "virtualization";
constexpr std::string_view kCpuPower = "CPU power";
constexpr std::string_view kTopology = "topology";
constexpr std::string_view kFabric = "fabric";
constexpr std::string_view kPcie = "PCIe";
constexpr std::string_view kInventory = "inventory";
constexpr std::string_view kContainer = "container runtime";
constexpr std::string_view kKernel = "kernel and driver";
constexpr std::string_view kOther = "other";

constexpr LayerEntry kRuleLayers[] = {
    {"virt.", kVirtualization}, {"power.", kCpuPower},        {"numa.", kCpuPower}, {"cpu.", kTopology},
    {"topo.", kTopology},       {"conf.", kFabric},           {"net.", kFabric},    {"nccl.", kFabric},
    {"hw.pcie", kPcie},         {"hw.inventory", kInventory}, {"hw.", kInventory},  {"shm.", kContainer},
    {"mem.", kContainer},
};

constexpr LayerEntry kFactLayers[] = {
    {"kernel.", kKernel}, {"gpu.driver", kKernel},    {"virt.", kVirtualization}, {"iommu.", kVirtualization},
    {"cpu.", kCpuPower},  {"nccl.", kTopology},       {"hca.", kFabric},          {"gpu.peer_memory", kFabric},
    {"pcie.", kPcie},     {"inventory.", kInventory},
};

template <std::size_t N>
std::string_view longest_prefix(const LayerEntry (&table)[N], std::string_view id) {
    std::string_view best = kOther;
    std::size_t best_length = 0;
    for (const auto& entry : table) {
        if (id.starts_with(entry.prefix) && entry.prefix.size() > best_length) {
            best = entry.layer;
            best_length = entry.prefix.size();
        }
    }
    return best;
}

const json::value* member(const json::object& o, std::string_view key) {
    auto it = o.find(key);
    return it == o.end() ? nullptr : &it->value();
}

// A string member; an error naming it when absent or not a string.
bool string_member(const json::object& o, std::string_view key, std::string_view path, std::string& out,
                   RecordError& error, bool required = true) {
    const json::value* v = member(o, key);
    if (v == nullptr || v->is_null()) {
        if (!required) return true;
        error.message = std::string(path) + ": missing";
        return false;
    }
    if (!v->is_string()) {
        error.message = std::string(path) + ": not a string";
        return false;
    }
    out = std::string(v->as_string());
    return true;
}

bool parse_rules(const json::object& o, NodeRecord& node, RecordError& error) {
    const json::value* rules = member(o, "rules");
    if (rules == nullptr || !rules->is_array()) {
        error.message = "rules: missing or not a list";
        return false;
    }
    std::size_t index = 0;
    for (const auto& r : rules->as_array()) {
        const std::string path = "rules[" + std::to_string(index++) + "]";
        if (!r.is_object()) {
            error.message = path + ": not an object";
            return false;
        }
        NodeRecord::Rule rule;
        if (!string_member(r.as_object(), "rule", path + ".rule", rule.id, error) ||
            !string_member(r.as_object(), "outcome", path + ".outcome", rule.outcome, error))
            return false;
        if (rule.outcome != "pass" && rule.outcome != "warn" && rule.outcome != "block" && rule.outcome != "unknown") {
            error.message = path + ".outcome: '" + rule.outcome + "' is not pass, warn, block or unknown";
            return false;
        }
        node.rules.push_back(std::move(rule));
    }
    // The first finding's message for each rule that fired.
    if (const json::value* findings = member(o, "findings"); findings != nullptr && findings->is_array()) {
        for (const auto& f : findings->as_array()) {
            if (!f.is_object()) continue;
            const json::value* id = member(f.as_object(), "rule");
            const json::value* message = member(f.as_object(), "message");
            if (id == nullptr || message == nullptr || !id->is_string() || !message->is_string()) continue;
            for (auto& rule : node.rules) {
                if (rule.id == std::string(id->as_string()) && rule.message.empty())
                    rule.message = std::string(message->as_string());
            }
        }
    }
    return true;
}

bool parse_facts(const json::object& o, NodeRecord& node, RecordError& error) {
    const json::value* facts = member(o, "facts");
    if (facts == nullptr || !facts->is_object()) {
        error.message = "facts: missing or not an object";
        return false;
    }
    for (const auto& [name, fact] : facts->as_object()) {
        const json::value* value = fact.is_object() ? member(fact.as_object(), "value") : nullptr;
        if (value == nullptr) {
            error.message = "facts." + std::string(name) + ": not an object with a \"value\"";
            return false;
        }
        node.facts.emplace(std::string(name), fact_value_text(*value));
    }
    return true;
}

int digit_run_compare(std::string_view a, std::size_t& i, std::string_view b, std::size_t& j) {
    std::size_t ai = i;
    std::size_t bj = j;
    while (ai < a.size() && a[ai] == '0') ++ai;
    while (bj < b.size() && b[bj] == '0') ++bj;
    std::size_t ae = ai;
    std::size_t be = bj;
    while (ae < a.size() && std::isdigit(static_cast<unsigned char>(a[ae]))) ++ae;
    while (be < b.size() && std::isdigit(static_cast<unsigned char>(b[be]))) ++be;
    int result = 0;
    if (ae - ai != be - bj)
        result = ae - ai < be - bj ? -1 : 1;
    else
        result = a.substr(ai, ae - ai).compare(b.substr(bj, be - bj));
    i = ae;
    j = be;
    return result;
}

}  // namespace

bool natural_less(std::string_view a, std::string_view b) {
    std::size_t i = 0;
    std::size_t j = 0;
    while (i < a.size() && j < b.size()) {
        const bool da = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
        const bool db = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
        if (da && db) {
            const int c = digit_run_compare(a, i, b, j);
            if (c != 0) return c < 0;
            continue;
        }
        if (a[i] != b[j]) return a[i] < b[j];
        ++i;
        ++j;
    }
    if (a.size() - i != b.size() - j) return a.size() - i < b.size() - j;
    return a < b;
}

std::string_view layer_of_rule(std::string_view rule) { return longest_prefix(kRuleLayers, rule); }
std::string_view layer_of_fact(std::string_view fact) { return longest_prefix(kFactLayers, fact); }

const std::vector<std::string_view>& layer_order() {
    static const std::vector<std::string_view> order = {kVirtualization, kCpuPower,  kTopology, kFabric, kPcie,
                                                        kInventory,      kContainer, kKernel,   kOther};
    return order;
}

std::optional<NodeRecord> parse_node_record(std::string_view text, const std::string& origin, RecordError& error,
                                            std::int64_t now) {
    error.origin = origin;
    json::value parsed;
    try {
        boost::system::error_code ec;
        parsed = json::parse(text, ec);
        if (ec) {
            error.message = "not JSON: " + ec.message();
            return std::nullopt;
        }
    } catch (const std::exception& e) {
        error.message = std::string("not JSON: ") + e.what();
        return std::nullopt;
    }
    if (!parsed.is_object()) {
        error.message = "not a JSON object";
        return std::nullopt;
    }
    const json::object& o = parsed.as_object();
    NodeRecord node;
    node.origin = origin;
    std::string schema;
    if (!string_member(o, "schema", "schema", schema, error)) return std::nullopt;
    if (schema != kNodeRecordSchema) {
        error.message = "schema: '" + schema + "' is not " + std::string(kNodeRecordSchema);
        return std::nullopt;
    }
    const json::value* about = member(o, "node");
    if (about == nullptr || !about->is_object()) {
        error.message = "node: missing or not an object";
        return std::nullopt;
    }
    if (!string_member(about->as_object(), "hostname", "node.hostname", node.hostname, error) ||
        !string_member(about->as_object(), "class", "node.class", node.node_class, error) ||
        !string_member(o, "checked_at", "checked_at", node.checked_at, error) ||
        !string_member(o, "health", "health", node.health, error) ||
        !string_member(o, "problem", "problem", node.problem, error, false))
        return std::nullopt;
    if (node.hostname.empty() || node.node_class.empty()) {
        error.message = node.hostname.empty() ? "node.hostname: empty" : "node.class: empty";
        return std::nullopt;
    }
    if (node.health != "healthy" && node.health != "warning" && node.health != "degraded" && node.health != "unknown") {
        error.message = "health: '" + node.health + "' is not healthy, warning, degraded or unknown";
        return std::nullopt;
    }
    if (!parse_rules(o, node, error) || !parse_facts(o, node, error)) return std::nullopt;
    // The newest record of a host counts: a time that is not one, or one
    // in the future, would outrank every honest record.
    const auto when = parse_rfc3339(node.checked_at);
    if (!when) {
        error.message = "checked_at: '" + node.checked_at + "' is not an RFC 3339 time (2026-05-01T10:00:00Z)";
        return std::nullopt;
    }
    if (*when > now + kClockSkewSeconds) {
        error.message = "checked_at: " + node.checked_at + " is in the future (more than " +
                        std::to_string(kClockSkewSeconds) + " s past this host's clock)";
        return std::nullopt;
    }
    return node;
}

std::int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

void add_error(FleetInput& input, RecordError error) {
    if (input.errors.size() < kMaxErrorsKept)
        input.errors.push_back(std::move(error));
    else
        ++input.errors_left_out;
}

std::size_t record_memory(const NodeRecord& node) {
    // Each string's heap part, each map node's pointers and colour.
    constexpr std::size_t kMapNode = 48;
    std::size_t bytes = sizeof(NodeRecord) + node.origin.capacity() + node.hostname.capacity() +
                        node.node_class.capacity() + node.checked_at.capacity() + node.health.capacity() +
                        node.problem.capacity() + node.source.capacity();
    for (const auto& rule : node.rules)
        bytes += sizeof(NodeRecord::Rule) + rule.id.capacity() + rule.outcome.capacity() + rule.message.capacity();
    for (const auto& [name, value] : node.facts)
        bytes += kMapNode + sizeof(std::pair<const std::string, std::optional<std::string>>) + name.capacity() +
                 (value ? value->capacity() : 0);
    return bytes;
}

void bound_history(std::vector<ClassHistory>& history) {
    // 9999-12-31T23:59:59Z: the last time a four-digit year writes.
    constexpr std::int64_t kLastTime = 253402300799;
    if (history.size() > kMaxHistoryClasses) history.resize(kMaxHistoryClasses);
    for (auto& h : history) {
        std::erase_if(h.points, [](const HistoryPoint& p) { return p.time < 0 || p.time > kLastTime; });
        if (h.points.size() <= kMaxHistoryPoints) continue;
        std::vector<HistoryPoint> thinned;
        thinned.reserve(kMaxHistoryPoints);
        for (std::size_t i = 0; i < kMaxHistoryPoints; ++i)
            thinned.push_back(h.points[i * (h.points.size() - 1) / (kMaxHistoryPoints - 1)]);
        h.points = std::move(thinned);
    }
}

std::optional<std::int64_t> parse_rfc3339(std::string_view text) {
    // YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)
    auto digits = [&](std::size_t at, std::size_t count) -> std::optional<int> {
        if (at + count > text.size()) return std::nullopt;
        int value = 0;
        for (std::size_t i = at; i < at + count; ++i) {
            if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
            value = value * 10 + (text[i] - '0');
        }
        return value;
    };
    const auto year = digits(0, 4);
    const auto month = digits(5, 2);
    const auto day = digits(8, 2);
    const auto hour = digits(11, 2);
    const auto minute = digits(14, 2);
    const auto second = digits(17, 2);
    if (!year || !month || !day || !hour || !minute || !second || text[4] != '-' || text[7] != '-' ||
        (text[10] != 'T' && text[10] != 't' && text[10] != ' ') || text[13] != ':' || text[16] != ':')
        return std::nullopt;
    if (*month < 1 || *month > 12 || *day < 1 || *day > 31 || *hour > 23 || *minute > 59 || *second > 60)
        return std::nullopt;
    std::size_t pos = 19;
    if (pos < text.size() && text[pos] == '.') {
        ++pos;
        const std::size_t start = pos;
        while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
        if (pos == start) return std::nullopt;
    }
    std::int64_t offset = 0;
    if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
        ++pos;
    } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
        const auto oh = digits(pos + 1, 2);
        const auto om = digits(pos + 4, 2);
        if (!oh || !om || text[pos + 3] != ':') return std::nullopt;
        offset = (text[pos] == '+' ? 1 : -1) * (std::int64_t{*oh} * 3600 + std::int64_t{*om} * 60);
        pos += 6;
    } else {
        return std::nullopt;
    }
    if (pos != text.size()) return std::nullopt;
    // Days from the civil date (proleptic Gregorian), as in H. Hinnant's
    // public-domain date algorithms.
    const int y = *year - (*month <= 2 ? 1 : 0);
    const int era = (y >= 0 ? y : y - 399) / 400;
    const int yoe = y - era * 400;
    const int doy = (153 * (*month + (*month > 2 ? -3 : 9)) + 2) / 5 + *day - 1;
    const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    const std::int64_t days = std::int64_t{era} * 146097 + doe - 719468;
    return days * 86400 + std::int64_t{*hour} * 3600 + std::int64_t{*minute} * 60 + *second - offset;
}

bool conforms(const NodeRecord& node) {
    if (node.health == "unknown" || !node.conflict.empty()) return false;
    return std::none_of(node.rules.begin(), node.rules.end(),
                        [](const NodeRecord::Rule& rule) { return rule.outcome == "warn" || rule.outcome == "block"; });
}

std::vector<ClassHistory> history_of_records(const std::vector<NodeRecord>& nodes, std::size_t max_points) {
    // host -> its records' (time, index), by time
    std::unordered_map<std::string, std::vector<std::pair<std::int64_t, std::size_t>>> by_host;
    std::set<std::int64_t> times;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const auto when = parse_rfc3339(nodes[i].checked_at);
        if (!when) continue;
        by_host[nodes[i].hostname].emplace_back(*when, i);
        times.insert(*when);
    }
    const bool repeated =
        std::any_of(by_host.begin(), by_host.end(), [](const auto& host) { return host.second.size() > 1; });
    if (!repeated || times.size() < 2 || max_points < 2) return {};
    // Start once 95% of the hosts have their first record: before that the
    // first round of checks is still under way and a share of the few hosts
    // seen so far says little. Hosts added later join when they appear.
    std::vector<std::int64_t> firsts;
    for (auto& [host, records] : by_host) {
        std::sort(records.begin(), records.end());
        firsts.push_back(records.front().first);
    }
    std::sort(firsts.begin(), firsts.end());
    const std::int64_t start = firsts[(firsts.size() * 95 + 99) / 100 - 1];
    std::vector<std::int64_t> at(times.lower_bound(start), times.end());
    if (at.size() < 2) return {};
    if (at.size() > max_points) {
        const std::int64_t first = at.front();
        const std::int64_t last = at.back();
        at.clear();
        for (std::size_t i = 0; i < max_points; ++i)
            at.push_back(first + static_cast<std::int64_t>(static_cast<double>(last - first) * static_cast<double>(i) /
                                                           static_cast<double>(max_points - 1)));
    }
    std::map<std::string, ClassHistory> classes;
    for (const std::int64_t t : at) {
        std::map<std::string, HistoryPoint> here;
        for (const auto& [host, records] : by_host) {
            auto after =
                std::upper_bound(records.begin(), records.end(), std::pair<std::int64_t, std::size_t>{t, nodes.size()});
            if (after == records.begin()) continue;
            const NodeRecord& node = nodes[std::prev(after)->second];
            HistoryPoint& point = here[node.node_class];
            ++point.nodes;
            if (conforms(node)) ++point.conforming;
        }
        for (auto& [name, point] : here) {
            point.time = t;
            classes[name].name = name;
            classes[name].points.push_back(point);
        }
    }
    std::vector<ClassHistory> history;
    for (auto& [name, h] : classes) history.push_back(std::move(h));
    return history;
}

namespace {

std::size_t rule_rank(const std::string& id) {
    const auto& rules = all_rules();
    for (std::size_t i = 0; i < rules.size(); ++i) {
        if (rules[i]->info().id == id) return i;
    }
    return rules.size();
}

std::string fix_of(const std::string& rule) {
    const Rule* found = find_rule(rule);
    return found == nullptr ? std::string() : std::string(found->info().fix);
}

bool failed(const std::string& outcome) { return outcome == "warn" || outcome == "block"; }

// A node whose rules count: its check ran and no other source contradicts it.
bool judged(const NodeRecord& node) { return node.health != "unknown" && node.conflict.empty(); }

void sort_nodes(std::vector<std::string>& nodes) {
    std::sort(nodes.begin(), nodes.end(),
              [](const std::string& a, const std::string& b) { return natural_less(a, b); });
}

std::vector<Drift> drift_of(const std::vector<const NodeRecord*>& nodes) {
    std::map<std::string, std::map<std::string, std::vector<std::string>>> values;  // fact -> value -> nodes
    for (const NodeRecord* node : nodes) {
        if (!judged(*node)) continue;  // no facts: its check did not run, or whose they are is in doubt
        for (const auto& [fact, value] : node->facts) values[fact][value.value_or("unknown")].push_back(node->hostname);
    }
    // A node whose record lacks a fact others carry (an older launchguard)
    // holds "absent".
    std::size_t with_facts = 0;
    for (const NodeRecord* node : nodes) with_facts += judged(*node) ? 1 : 0;
    std::vector<Drift> drift;
    for (auto& [fact, by_value] : values) {
        std::size_t counted = 0;
        for (const auto& [value, holders] : by_value) counted += holders.size();
        if (counted < with_facts) {
            auto& absent = by_value["absent"];
            for (const NodeRecord* node : nodes) {
                if (judged(*node) && !node->facts.contains(fact)) absent.push_back(node->hostname);
            }
        }
        if (by_value.size() < 2) continue;
        std::vector<DriftValue> ranked;
        for (auto& [value, holders] : by_value) {
            sort_nodes(holders);
            ranked.push_back({value, std::move(holders)});
        }
        std::sort(ranked.begin(), ranked.end(), [](const DriftValue& a, const DriftValue& b) {
            if (a.nodes.size() != b.nodes.size()) return a.nodes.size() > b.nodes.size();
            return a.value < b.value;
        });
        Drift d;
        d.fact = fact;
        d.layer = std::string(layer_of_fact(fact));
        auto first_other = ranked.begin();
        if (ranked[0].nodes.size() > ranked[1].nodes.size()) {
            d.majority = ranked[0].value;
            d.majority_nodes = ranked[0].nodes.size();
            ++first_other;
        }
        d.others.assign(std::make_move_iterator(first_other), std::make_move_iterator(ranked.end()));
        drift.push_back(std::move(d));
    }
    return drift;
}

ClassReport judge_class(const std::string& name, std::vector<const NodeRecord*> nodes) {
    ClassReport report;
    report.name = name;
    report.nodes = nodes.size();
    std::sort(nodes.begin(), nodes.end(),
              [](const NodeRecord* a, const NodeRecord* b) { return natural_less(a->hostname, b->hostname); });

    std::map<std::string, std::size_t> columns;
    for (const NodeRecord* node : nodes) {
        for (const auto& rule : node->rules) columns.emplace(rule.id, 0);
    }
    for (const auto& [id, column] : columns) report.rules.push_back(id);
    std::sort(report.rules.begin(), report.rules.end(), [](const std::string& a, const std::string& b) {
        const std::size_t ra = rule_rank(a);
        const std::size_t rb = rule_rank(b);
        return ra != rb ? ra < rb : a < b;
    });
    for (std::size_t i = 0; i < report.rules.size(); ++i) columns[report.rules[i]] = i;

    std::map<std::string_view, LayerConformance> layers;
    for (const auto& rule : report.rules) {
        auto& layer = layers[layer_of_rule(rule)];
        layer.layer = std::string(layer_of_rule(rule));
        layer.nodes = nodes.size();
    }

    std::map<std::vector<std::string>, std::size_t> row_of;
    for (const NodeRecord* node : nodes) {
        std::vector<std::string> outcomes(report.rules.size());
        const bool ran = judged(*node);
        bool conforming = ran;
        std::set<std::string_view> failing_layers;
        if (ran) {
            for (const auto& rule : node->rules) {
                outcomes[columns[rule.id]] = rule.outcome;
                if (!failed(rule.outcome)) continue;
                conforming = false;
                auto& layer = layers[layer_of_rule(rule.id)];
                failing_layers.insert(layer_of_rule(rule.id));
                layer.failures.push_back({node->hostname, rule.id, rule.outcome, rule.message, fix_of(rule.id)});
            }
        } else {
            std::fill(outcomes.begin(), outcomes.end(), "none");
            for (auto& [id, layer] : layers) {
                failing_layers.insert(id);
                if (!node->conflict.empty())
                    layer.failures.push_back({node->hostname, "", "conflicting records", node->conflict,
                                              "find which writer wrote the other record: only the node's own "
                                              "node-check may write its record (records/<hostname>.json)"});
                else
                    layer.failures.push_back({node->hostname, "", "check unknown", node->problem,
                                              "run node-check on the node and read its notes"});
            }
        }
        if (conforming) ++report.conforming;
        for (auto& [id, layer] : layers) {
            if (!failing_layers.contains(id)) ++layer.conforming;
        }
        auto [it, inserted] = row_of.emplace(outcomes, report.rows.size());
        if (inserted) {
            OutcomeRow row;
            row.outcomes = outcomes;
            row.failing = ran ? static_cast<std::size_t>(std::count_if(outcomes.begin(), outcomes.end(), failed))
                              : outcomes.size() + 1;
            report.rows.push_back(std::move(row));
        }
        report.rows[it->second].nodes.push_back(node->hostname);
    }
    std::stable_sort(report.rows.begin(), report.rows.end(), [](const OutcomeRow& a, const OutcomeRow& b) {
        if (a.failing != b.failing) return a.failing > b.failing;
        return a.nodes.size() < b.nodes.size();
    });
    for (const auto layer : layer_order()) {
        if (auto it = layers.find(layer); it != layers.end()) report.layers.push_back(std::move(it->second));
    }
    report.drift = drift_of(nodes);
    return report;
}

}  // namespace

FleetReport analyze_fleet(FleetInput input, double threshold) {
    FleetReport report;
    report.threshold = threshold;
    report.errors = std::move(input.errors);
    report.errors_left_out = input.errors_left_out;
    report.superseded = input.superseded;
    report.conflicts = input.conflicts;
    report.incomplete = std::move(input.incomplete);
    report.history = std::move(input.history);
    report.source = std::move(input.source);
    std::map<std::string, std::vector<const NodeRecord*>> classes;
    for (const auto& node : input.nodes) classes[node.node_class].push_back(&node);
    for (auto& [name, nodes] : classes) {
        report.classes.push_back(judge_class(name, std::move(nodes)));
        report.nodes += report.classes.back().nodes;
        report.conforming += report.classes.back().conforming;
    }
    return report;
}

}  // namespace launchguard::fleet
