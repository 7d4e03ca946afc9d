// What a writer of the records (or a second scrape target) can and cannot do
// to another host's verdict, and the bounds that keep fleet's memory and
// output small whatever it is given.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "fleet/fleet.h"
#include "fleet/fleet_render.h"
#include "fleet/prometheus_source.h"
#include "node/node_metrics.h"
#include "unit/probe/temp_tree.h"

namespace launchguard::fleet {
namespace {

namespace json = boost::json;

// A node record as node-check writes it; `outcome` is the one rule's.
std::string record(const std::string& host, const std::string& outcome, const std::string& checked_at) {
    json::object o{{"schema", "launchguard.node-record/v1"},
                   {"node", json::object{{"hostname", host}, {"class", "gpu-a"}}},
                   {"checked_at", checked_at},
                   {"health", outcome == "pass" ? "healthy" : "degraded"},
                   {"rules", json::array{json::object{{"rule", "hw.pcie-degraded"}, {"outcome", outcome}}}},
                   {"facts", json::object{{"hca.firmware", json::object{{"value", "28.39.1002"}}}}}};
    return json::serialize(o) + "\n";
}

constexpr const char* kMay = "2026-05-01T10:00:00Z";
constexpr const char* kJune = "2026-06-01T10:00:00Z";

const NodeRecord* host(const FleetInput& input, const std::string& name) {
    for (const auto& n : input.nodes) {
        if (n.hostname == name) return &n;
    }
    return nullptr;
}

TEST(FleetClaims, AnotherWritersNewerPassingRecordCannotTurnAFailIntoAPass) {
    test::TempTree tree;
    tree.write("records/node-a1.json", record("node-a1", "block", kMay));
    tree.write("records/node-a2.json", record("node-a2", "pass", kMay));
    // Anyone who can write the folder: a newer record that passes.
    tree.write("records/zz.jsonl", record("node-a1", "pass", kJune));
    FleetInput input = read_fleet({tree.path("records")});
    ASSERT_EQ(input.nodes.size(), 2U);
    EXPECT_EQ(input.conflicts, 1U);
    const NodeRecord* a1 = host(input, "node-a1");
    ASSERT_NE(a1, nullptr);
    EXPECT_EQ(a1->origin, tree.path("records/node-a1.json") + ":1") << "its own record stands";
    EXPECT_NE(a1->conflict.find(tree.path("records/zz.jsonl") + ":1 (checked_at " + kJune + ", conforms)"),
              std::string::npos)
        << a1->conflict;
    EXPECT_FALSE(conforms(*a1));
    const FleetReport report = analyze_fleet(std::move(input), 0.6);
    EXPECT_EQ(report.conforming, 1U);
    EXPECT_FALSE(report.passes()) << "1 of 2 is under the threshold only if node-a1 counts as failing";
    const auto& failures = report.classes.at(0).layers.at(0).failures;
    ASSERT_FALSE(failures.empty());
    EXPECT_EQ(failures[0].outcome, "conflicting records");
    EXPECT_NE(render_fleet_text(report).find("1 host with conflicting records"), std::string::npos);
}

TEST(FleetClaims, AnOlderArchiveBesideTheOwnRecordIsHistoryNotAConflict) {
    test::TempTree tree;
    tree.write("records/node-a1.json", record("node-a1", "pass", kJune));
    tree.write("records/archive.jsonl", record("node-a1", "block", kMay));
    const FleetInput input = read_fleet({tree.path("records")});
    ASSERT_EQ(input.nodes.size(), 1U);
    EXPECT_EQ(input.conflicts, 0U);
    EXPECT_EQ(input.superseded, 1U);
    EXPECT_TRUE(conforms(input.nodes[0]));
}

TEST(FleetClaims, ARecordInAFileNamedForAnotherHostIsAConflict) {
    test::TempTree tree;
    tree.write("records/node-a1.json", record("node-a1", "block", kMay));
    tree.write("records/node-b7.json", record("node-a1", "pass", kMay));
    tree.write("records/node-c1.json", record("node-c9", "pass", kMay));
    const FleetInput input = read_fleet({tree.path("records")});
    ASSERT_EQ(input.nodes.size(), 2U);
    EXPECT_EQ(input.conflicts, 2U);
    const NodeRecord* a1 = host(input, "node-a1");
    ASSERT_NE(a1, nullptr);
    EXPECT_NE(a1->conflict.find("in a file named for another host"), std::string::npos) << a1->conflict;
    // A host whose only record is misplaced is there, and does not conform.
    const NodeRecord* c9 = host(input, "node-c9");
    ASSERT_NE(c9, nullptr);
    EXPECT_FALSE(conforms(*c9));
    // Given by name rather than in a directory, a file may be called anything.
    const FleetInput named = read_fleet({tree.path("records/node-c1.json")});
    ASSERT_EQ(named.nodes.size(), 1U);
    EXPECT_EQ(named.conflicts, 0U);
}

TEST(FleetClaims, SourcesWithoutAnOwnRecordThatDisagreeConflict) {
    FleetInput input;
    read_records_text(record("n1", "block", kMay) + record("n2", "pass", kMay), "a.jsonl", input);
    read_records_text(record("n1", "pass", kJune) + record("n2", "pass", kJune), "b.jsonl", input);
    keep_newest(input);
    EXPECT_EQ(input.conflicts, 1U);
    ASSERT_NE(host(input, "n1"), nullptr);
    EXPECT_FALSE(host(input, "n1")->conflict.empty());
    ASSERT_NE(host(input, "n2"), nullptr);
    EXPECT_TRUE(host(input, "n2")->conflict.empty()) << "sources that agree are no conflict";
    EXPECT_EQ(host(input, "n2")->checked_at, kJune);
}

TEST(FleetClaims, CheckedAtIsAnRfc3339TimeNotInTheFuture) {
    FleetInput input;
    input.now = *parse_rfc3339(kJune);
    read_records_text(record("late", "pass", "2026-06-01T10:04:00Z") +       // within the clock skew
                          record("ahead", "pass", "2026-06-01T10:06:00Z") +  // past it
                          record("odd", "pass", "9999-99-99") + record("text", "pass", "zzzz"),
                      "f.jsonl", input);
    ASSERT_EQ(input.nodes.size(), 1U);
    EXPECT_EQ(input.nodes[0].hostname, "late");
    ASSERT_EQ(input.errors.size(), 3U);
    EXPECT_EQ(input.errors[0].origin, "f.jsonl:2");
    EXPECT_NE(input.errors[0].message.find("is in the future"), std::string::npos) << input.errors[0].message;
    EXPECT_NE(input.errors[1].message.find("not an RFC 3339 time"), std::string::npos) << input.errors[1].message;
    EXPECT_NE(input.errors[2].message.find("'zzzz'"), std::string::npos) << input.errors[2].message;
}

TEST(FleetBounds, AnOversizedRecordIsAnErrorAndTheNextIsRead) {
    const std::string huge = "{\"schema\": \"" + std::string(kMaxRecordBytes + 10, 'x') + "\"}\n";
    FleetInput input;
    read_records_text(huge + record("n1", "pass", kMay), "big.jsonl", input);
    ASSERT_EQ(input.nodes.size(), 1U);
    ASSERT_EQ(input.errors.size(), 1U);
    EXPECT_EQ(input.errors[0].origin, "big.jsonl:1");
    EXPECT_NE(input.errors[0].message.find("larger than 1 MiB"), std::string::npos) << input.errors[0].message;
}

TEST(FleetBounds, ErrorsAreCountedPastTheFirstFew) {
    std::string text;
    for (int i = 0; i < 100; ++i) text += "{\"not\": \"a record\"}\n";
    FleetInput input;
    read_records_text(text + record("n1", "pass", kMay), "noise.jsonl", input);
    EXPECT_EQ(input.errors.size(), kMaxErrorsKept);
    EXPECT_EQ(input.errors_left_out, 100 - kMaxErrorsKept);
    const std::string out = render_fleet_text(analyze_fleet(std::move(input), 0.9));
    EXPECT_NE(out.find("100 records could not be read"), std::string::npos) << out;
    EXPECT_NE(out.find("... and 80 more"), std::string::npos) << out;
}

TEST(FleetBounds, ReadingStopsAtTheMemoryBoundAndTheVerdictCannotPass) {
    FleetInput input;
    input.memory = kMaxRecordMemory - 1;  // as if the records before had filled it
    read_records_text(record("n1", "pass", kMay) + record("n2", "block", kMay), "many.jsonl", input);
    ASSERT_EQ(input.nodes.size(), 1U) << "n2 is not read";
    EXPECT_NE(input.incomplete.find("reading stopped at many.jsonl:1"), std::string::npos) << input.incomplete;
    const FleetReport report = analyze_fleet(std::move(input), 0.5);
    EXPECT_EQ(report.conforming, report.nodes);
    EXPECT_FALSE(report.passes());
    EXPECT_NE(render_fleet_text(report).find("not every record was read"), std::string::npos);
}

TEST(FleetBounds, HistoryIsThinnedAndTimesOutOfRangeSkipped) {
    Series nodes;
    nodes.labels["node_class"] = "a";
    for (int i = 0; i < 100000; ++i) nodes.points.push_back({1777629600.0 + i, 4});
    nodes.points.push_back({1e300, 4});
    nodes.points.push_back({-5, 4});
    auto history = history_from_series({nodes}, {});
    ASSERT_EQ(history.size(), 1U);
    EXPECT_EQ(history[0].points.size(), kMaxHistoryPoints);
    EXPECT_EQ(history[0].points.front().time, 1777629600);
    EXPECT_EQ(history[0].points.back().time, 1777629600 + 99999);
    std::vector<ClassHistory> classes(kMaxHistoryClasses + 5);
    bound_history(classes);
    EXPECT_EQ(classes.size(), kMaxHistoryClasses);
}

// Series as Prometheus returns them for one scrape target.
Series series(const std::string& instance, std::map<std::string, std::string> labels, double value = 1) {
    Series s;
    s.labels = std::move(labels);
    s.labels["instance"] = instance;
    s.labels["job"] = "node";
    s.points.push_back({1777629600.0, value});
    return s;
}

SeriesByMetric target(const std::string& instance, const std::string& node, const std::string& outcome,
                      double checked_at = 1777629600.0) {
    SeriesByMetric by;
    by[std::string(kMetricNodeInfo)].push_back(
        series(instance, {{"node", node}, {"node_class", "c"}, {"schema", std::string(kNodeMetricsSchema)}}));
    by[std::string(kMetricNodeHealth)].push_back(
        series(instance, {{"health", outcome == "pass" ? "healthy" : "degraded"}}));
    by[std::string(kMetricCheckTimestamp)].push_back(series(instance, {}, checked_at));
    by[std::string(kMetricRuleOutcome)].push_back(
        series(instance, {{"rule", "hw.pcie-degraded"}, {"outcome", outcome}}));
    return by;
}

void merge(SeriesByMetric& into, const SeriesByMetric& from) {
    for (const auto& [metric, list] : from) into[metric].insert(into[metric].end(), list.begin(), list.end());
}

TEST(FleetClaims, ASecondScrapeTargetNamingTheNodeIsAConflict) {
    SeriesByMetric by = target("gpu-a1:9100", "gpu-a1", "block");
    merge(by, target("10.0.0.99:9100", "gpu-a1", "pass", 1777629700.0));
    merge(by, target("gpu-a2:9100", "gpu-a2", "pass"));
    const FleetInput input = records_from_series(by, "http://prom:9090");
    ASSERT_EQ(input.nodes.size(), 2U);
    EXPECT_EQ(input.conflicts, 1U);
    const NodeRecord* a1 = host(input, "gpu-a1");
    ASSERT_NE(a1, nullptr);
    EXPECT_FALSE(conforms(*a1));
    EXPECT_NE(a1->conflict.find("instance=\"10.0.0.99:9100\""), std::string::npos) << a1->conflict;
    EXPECT_NE(a1->conflict.find("instance=\"gpu-a1:9100\""), std::string::npos) << a1->conflict;
    EXPECT_FALSE(analyze_fleet(input, 0.6).passes()) << "1 of 2 conforms";
}

TEST(FleetClaims, AScrapeTargetFromTheFutureIsLeftOut) {
    const FleetInput input = records_from_series(target("gpu-a1:9100", "gpu-a1", "pass", 4e9), "p", 1777629600);
    EXPECT_TRUE(input.nodes.empty());
    ASSERT_EQ(input.errors.size(), 1U);
    EXPECT_NE(input.errors[0].message.find("is in the future"), std::string::npos) << input.errors[0].message;
}

TEST(FleetBounds, ATargetWithHundredsOfRulesIsNotANode) {
    SeriesByMetric by = target("t:9100", "n", "pass");
    for (int i = 0; i < 1000; ++i)
        by[std::string(kMetricRuleOutcome)].push_back(
            series("t:9100", {{"rule", "r" + std::to_string(i)}, {"outcome", "pass"}}));
    const FleetInput input = records_from_series(by, "p");
    EXPECT_TRUE(input.nodes.empty());
    ASSERT_EQ(input.errors.size(), 1U);
    EXPECT_NE(input.errors[0].message.find("more than 256 rules"), std::string::npos) << input.errors[0].message;
}

TEST(FleetBounds, ASeriesWithHundredsOfLabelsIsSkipped) {
    json::object labels;
    for (int i = 0; i < 100; ++i) labels["l" + std::to_string(i)] = "v";
    const std::string body = json::serialize(json::object{
        {"status", "success"},
        {"data",
         json::object{{"resultType", "vector"},
                      {"result", json::array{json::object{{"metric", labels}, {"value", json::array{1, "1"}}}}}}}});
    std::string error;
    std::size_t skipped = 0;
    const auto parsed = parse_query_response(body, error, &skipped);
    ASSERT_TRUE(parsed) << error;
    EXPECT_TRUE(parsed->empty());
    EXPECT_EQ(skipped, 1U);
}

}  // namespace
}  // namespace launchguard::fleet
