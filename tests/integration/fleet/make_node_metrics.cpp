// Synthetic node checks for the fleet report's Prometheus test: N nodes in
// three classes checked every INTERVAL seconds over HOURS hours, written as
// (1) OpenMetrics with a timestamp on every sample, each check's series made
// by node-check's own writer (render_node_metrics) with the labels a scrape
// adds (instance, job), for `promtool tsdb create-blocks-from openmetrics`;
// (2) the same checks as node records (JSON lines) for `launchguard fleet`
// over a directory; (3) what the report must say (expected.json): nodes and
// conforming nodes per class at the last check, the drifting facts with the
// number of nodes off the majority, and conformance per class at each check.
// Exposition text from real `node-check --metrics-file` runs can be added
// with --extra FILE INSTANCE: its samples are stamped at every check time.
//
// usage: make_node_metrics N HOURS INTERVAL END_UNIX_SECONDS OUT_DIR [--extra FILE INSTANCE]...
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "node/node_metrics.h"

namespace json = boost::json;
using launchguard::NodeHealth;
using launchguard::NodeVerdict;
using launchguard::RuleOutcome;

namespace {

const char* const kClasses[] = {"dgx-h100", "hgx-b200", "l40s-inference"};
const char* const kRules[] = {"power.governor", "hw.pcie-degraded", "net.ib-port-degraded", "virt.iommu-translating",
                              "hw.inventory"};

struct Check {
    std::string host;
    std::string node_class;
    NodeVerdict verdict;
    json::object record;
};

std::string class_of(std::size_t i, std::size_t n) {
    const double share = static_cast<double>(i) / static_cast<double>(n);
    return share < 0.6 ? kClasses[0] : share < 0.9 ? kClasses[1] : kClasses[2];
}

json::object fact(json::value v) { return json::object{{"value", std::move(v)}, {"source", "synthetic"}}; }

std::string iso(std::int64_t t) {
    const std::time_t when = t;
    std::tm tm{};
    gmtime_r(&when, &tm);
    char text[32];
    std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return text;
}

// Node i at check k (of `checks`): a few fixed faults, and from the middle
// of the range on, a bad governor on every tenth hgx-b200 node.
Check make_check(std::size_t i, std::size_t n, std::size_t k, std::size_t checks, std::int64_t t) {
    Check c;
    c.node_class = class_of(i, n);
    c.host = c.node_class.substr(0, c.node_class.find('-')) + "-" + std::to_string(10000 + i).substr(1);
    const bool unknown = i % 500 == 499;
    json::object head{{"schema", "launchguard.node-record/v1"},
                      {"node", json::object{{"hostname", c.host}, {"class", c.node_class}}},
                      {"checked_at", iso(t)}};
    if (unknown) {
        c.verdict = launchguard::unknown_verdict("probe stalled: /sys/class/infiniband did not answer in 10s");
        head["health"] = "unknown";
        head["problem"] = c.verdict.problem;
        head["rules"] = json::array{};
        head["facts"] = json::object{};
        c.record = std::move(head);
        return c;
    }
    c.verdict.health = NodeHealth::healthy;
    json::array rules;
    json::array findings;
    for (const char* rule : kRules) {
        RuleOutcome outcome = RuleOutcome::pass;
        std::string message;
        const std::string id = rule;
        if (id == "hw.pcie-degraded" && i % 211 == 17) {
            outcome = RuleOutcome::block;
            message = "GPU 0000:17:00.0 runs at 16GT/s x8 of 32GT/s x16";
        } else if (id == "net.ib-port-degraded" && i % 401 == 23) {
            outcome = RuleOutcome::block;
            message = "mlx5_3 port 1 is Down";
        } else if (id == "power.governor" && c.node_class == kClasses[1] && i % 10 == 0 && k >= checks / 2) {
            outcome = RuleOutcome::warn;
            message = "scaling_governor is powersave on 64 CPUs";
        } else if (id == "virt.iommu-translating" && i % 97 == 5) {
            outcome = RuleOutcome::unknown;
            message = "no /sys/kernel/iommu_groups";
        }
        if (outcome == RuleOutcome::block) c.verdict.health = NodeHealth::degraded;
        if (outcome == RuleOutcome::warn && c.verdict.health == NodeHealth::healthy)
            c.verdict.health = NodeHealth::warning;
        c.verdict.rules.push_back({id, outcome, message});
        rules.push_back(json::object{{"rule", id}, {"outcome", launchguard::to_string(outcome)}});
        if (outcome == RuleOutcome::warn || outcome == RuleOutcome::block)
            findings.push_back(json::object{{"rule", id}, {"message", message}});
    }
    head["health"] = launchguard::to_string(c.verdict.health);
    head["rules"] = std::move(rules);
    head["findings"] = std::move(findings);
    json::object facts{
        {"kernel.release", fact(i % 97 == 3 ? "6.1.0-17-amd64" : "6.1.0-18-amd64")},
        {"gpu.driver_version", fact("550.54.15")},
        {"hca.firmware", fact(i % 331 == 7 ? "28.37.1014" : "28.39.1002")},
        {"hca.models", fact("MT4129")},
        {"nccl.topo_file_hash", fact(i % 499 == 11 ? "fnv1a64:0000000000009999" : "fnv1a64:0000000000001234")},
        {"cpu.governor", fact("performance")},
        {"inventory.gpus", fact(8)},
        {"iommu.mode",
         i % 250 == 42 ? json::object{{"value", nullptr}, {"reason", "no iommu_groups"}} : fact("identity")},
    };
    head["facts"] = std::move(facts);
    c.record = std::move(head);
    return c;
}

bool conforms(const Check& c) {
    if (c.verdict.health == NodeHealth::unknown) return false;
    for (const auto& r : c.verdict.rules)
        if (r.outcome == RuleOutcome::warn || r.outcome == RuleOutcome::block) return false;
    return true;
}

// Exposition text -> per family: its HELP/TYPE lines and its samples, each
// sample with the scrape's labels and a timestamp added.
struct Families {
    std::vector<std::string> order;
    std::map<std::string, std::string> head;
    std::map<std::string, std::string> samples;

    void add(const std::string& text, const std::string& instance, std::int64_t t) {
        std::istringstream in(text);
        std::string line;
        const std::string extra = "instance=\"" + instance + "\",job=\"node\"";
        const std::string stamp = " " + std::to_string(t) + "\n";
        while (std::getline(in, line)) {
            if (line.empty()) continue;
            if (line.starts_with("# ")) {
                std::istringstream words(line);
                std::string hash, kind, name;
                words >> hash >> kind >> name;
                if (!head.contains(name)) order.push_back(name);
                std::string& h = head[name];
                if (h.find("# " + kind + " ") == std::string::npos) h += line + "\n";
                continue;
            }
            const std::size_t brace = line.find('{');
            const std::size_t space = line.find(' ');
            std::string name;
            std::string labelled;
            if (brace != std::string::npos && brace < space) {
                name = line.substr(0, brace);
                const std::size_t close = line.rfind('}');
                labelled = line.substr(0, close) + "," + extra + line.substr(close);
            } else {
                name = line.substr(0, space);
                labelled = name + "{" + extra + "}" + line.substr(space);
            }
            samples[name] += labelled + stamp;
        }
    }

    void write(std::ostream& out) const {
        for (const auto& name : order) {
            out << head.at(name);
            if (auto it = samples.find(name); it != samples.end()) out << it->second;
        }
        out << "# EOF\n";
    }
};

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 6) {
        std::cerr << "usage: make_node_metrics N HOURS INTERVAL END_UNIX_SECONDS OUT_DIR [--extra FILE INSTANCE]...\n";
        return 2;
    }
    const std::size_t n = std::stoul(argv[1]);
    const double hours = std::stod(argv[2]);
    const std::int64_t interval = std::stoll(argv[3]);
    const std::int64_t end = std::stoll(argv[4]);
    const std::string out = argv[5];
    std::vector<std::pair<std::string, std::string>> extras;
    for (int a = 6; a < argc; a += 3) {
        if (std::string(argv[a]) != "--extra" || a + 2 >= argc) {
            std::cerr << "make_node_metrics: expected --extra FILE INSTANCE\n";
            return 2;
        }
        extras.emplace_back(slurp(argv[a + 1]), argv[a + 2]);
    }
    const std::size_t checks = static_cast<std::size_t>(hours * 3600 / static_cast<double>(interval)) + 1;
    const std::int64_t start = end - static_cast<std::int64_t>(checks - 1) * interval;

    Families families;
    std::ofstream records(out + "/records/records.jsonl");
    json::object expected_history;  // class -> [[time, nodes, conforming]]
    json::object last_classes;
    std::map<std::string, std::map<std::string, std::map<std::string, std::size_t>>> drift;  // class->fact->value->n
    for (std::size_t k = 0; k < checks; ++k) {
        const std::int64_t t = start + static_cast<std::int64_t>(k) * interval;
        std::map<std::string, std::pair<std::size_t, std::size_t>> at;
        for (std::size_t i = 0; i < n; ++i) {
            Check c = make_check(i, n, k, checks, t);
            const std::string text = launchguard::render_node_metrics(
                c.verdict, std::chrono::system_clock::time_point(std::chrono::seconds(t)),
                std::chrono::milliseconds(800), &c.record);
            families.add(text, c.host + ":9100", t);
            records << json::serialize(c.record) << "\n";
            auto& counts = at[c.node_class];
            ++counts.first;
            counts.second += conforms(c) ? 1 : 0;
            if (k + 1 == checks && c.verdict.health != NodeHealth::unknown) {
                for (const auto& [name, f] : c.record.at("facts").as_object()) {
                    const auto& v = f.as_object().at("value");
                    drift[c.node_class][std::string(name)][v.is_null()     ? "unknown"
                                                           : v.is_string() ? std::string(v.as_string())
                                                                           : json::serialize(v)]++;
                }
            }
        }
        for (const auto& [extra, instance] : extras) families.add(extra, instance, t);
        for (const auto& [name, counts] : at) {
            if (!expected_history.contains(name)) expected_history[name] = json::array{};
            expected_history[name].as_array().push_back(json::array{iso(t), counts.first, counts.second});
            if (k + 1 == checks)
                last_classes[name] = json::object{{"nodes", counts.first}, {"conforming", counts.second}};
        }
    }
    std::ofstream om(out + "/metrics.om");
    families.write(om);
    json::object expected_drift;
    for (const auto& [node_class, facts] : drift) {
        json::object per_fact;
        for (const auto& [name, values] : facts) {
            if (values.size() < 2) continue;
            std::size_t total = 0;
            std::size_t most = 0;
            for (const auto& [value, count] : values) {
                total += count;
                most = std::max(most, count);
            }
            per_fact[name] = total - most;  // nodes off the majority
        }
        expected_drift[node_class] = std::move(per_fact);
    }
    std::ofstream(out + "/expected.json") << json::serialize(json::object{{"classes", std::move(last_classes)},
                                                                          {"drift", std::move(expected_drift)},
                                                                          {"history", std::move(expected_history)},
                                                                          {"at", iso(end)},
                                                                          {"checks", checks}})
                                          << "\n";
    return 0;
}
