// Grouping by class, conformance by layer, majority and drift (ties
// included), the threshold, and records that cannot be read.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "fleet/fleet.h"
#include "fleet/fleet_render.h"
#include "unit/probe/temp_tree.h"

namespace launchguard::fleet {
namespace {

namespace json = boost::json;

struct Node {
    std::string host;
    std::string node_class = "gpu-a";
    std::string firmware = "28.39.1002";
    std::string governor_outcome = "pass";
    std::string health = "healthy";
    std::string checked_at = "2026-05-01T10:00:00Z";
};

Node node(std::string host, std::string node_class = "gpu-a") {
    Node n;
    n.host = std::move(host);
    n.node_class = std::move(node_class);
    return n;
}

std::string record(const Node& n) {
    json::object facts{{"hca.firmware", json::object{{"value", n.firmware}, {"source", "fixture"}}},
                       {"kernel.release", json::object{{"value", "6.1.0"}, {"source", "fixture"}}},
                       {"gpu.driver_version", json::object{{"value", nullptr}, {"reason", "no driver"}}}};
    json::array findings;
    if (n.governor_outcome != "pass") {
        findings.push_back(json::object{{"rule", "power.governor"}, {"message", "governor is powersave"}});
    }
    json::object o{{"schema", "launchguard.node-record/v1"},
                   {"node", json::object{{"hostname", n.host}, {"class", n.node_class}}},
                   {"checked_at", n.checked_at},
                   {"health", n.health},
                   {"rules", json::array{json::object{{"rule", "power.governor"}, {"outcome", n.governor_outcome}},
                                         json::object{{"rule", "hw.pcie-degraded"}, {"outcome", "pass"}}}},
                   {"facts", facts},
                   {"findings", findings}};
    return json::serialize(o) + "\n";
}

FleetReport analyze(const std::vector<Node>& nodes, double threshold = 0.95, const std::string& extra = "") {
    std::string text;
    for (const auto& n : nodes) text += record(n);
    text += extra;
    FleetInput input;
    read_records_text(text, "fleet.jsonl", input);
    keep_newest(input);
    return analyze_fleet(std::move(input), threshold);
}

const Drift* drift_of(const ClassReport& c, const std::string& fact) {
    for (const auto& d : c.drift) {
        if (d.fact == fact) return &d;
    }
    return nullptr;
}

const LayerConformance* layer_of(const ClassReport& c, const std::string& layer) {
    for (const auto& l : c.layers) {
        if (l.layer == layer) return &l;
    }
    return nullptr;
}

std::vector<Node> many(const std::string& prefix, int count, const std::string& node_class = "gpu-a") {
    std::vector<Node> nodes;
    for (int i = 1; i <= count; ++i) nodes.push_back(node(prefix + std::to_string(i), node_class));
    return nodes;
}

TEST(Fleet, GroupsByClassAndJudgesEachLayer) {
    auto nodes = many("node-a", 10);
    auto others = many("node-b", 4, "gpu-b");
    nodes.insert(nodes.end(), others.begin(), others.end());
    nodes[2].governor_outcome = "warn";
    nodes[2].health = "warning";
    const FleetReport report = analyze(nodes);
    ASSERT_EQ(report.classes.size(), 2U);
    EXPECT_EQ(report.classes[0].name, "gpu-a");
    EXPECT_EQ(report.classes[0].nodes, 10U);
    EXPECT_EQ(report.classes[0].conforming, 9U);
    EXPECT_EQ(report.classes[1].conforming, 4U);
    EXPECT_EQ(report.nodes, 14U);
    EXPECT_EQ(report.conforming, 13U);

    const LayerConformance* power = layer_of(report.classes[0], "CPU power");
    ASSERT_NE(power, nullptr);
    EXPECT_EQ(power->conforming, 9U);
    ASSERT_EQ(power->failures.size(), 1U);
    EXPECT_EQ(power->failures[0].node, "node-a3");
    EXPECT_EQ(power->failures[0].rule, "power.governor");
    EXPECT_EQ(power->failures[0].message, "governor is powersave");
    EXPECT_FALSE(power->failures[0].fix.empty()) << "the rule catalog's fix";
    const LayerConformance* pcie = layer_of(report.classes[0], "PCIe");
    ASSERT_NE(pcie, nullptr);
    EXPECT_EQ(pcie->conforming, 10U);
}

TEST(Fleet, LayersComeFromOneTable) {
    EXPECT_EQ(layer_of_rule("virt.iommu-strict"), "virtualization");
    EXPECT_EQ(layer_of_rule("power.cstates"), "CPU power");
    EXPECT_EQ(layer_of_rule("numa.balancing-on"), "CPU power");
    EXPECT_EQ(layer_of_rule("topo.file-missing"), "topology");
    EXPECT_EQ(layer_of_rule("net.ib-port-degraded"), "fabric");
    EXPECT_EQ(layer_of_rule("hw.pcie-degraded"), "PCIe");
    EXPECT_EQ(layer_of_rule("hw.inventory"), "inventory");
    EXPECT_EQ(layer_of_rule("shm.small"), "container runtime");
    EXPECT_EQ(layer_of_rule("made.up"), "other");
    EXPECT_EQ(layer_of_fact("hca.firmware"), "fabric");
    EXPECT_EQ(layer_of_fact("iommu.mode"), "virtualization");
}

TEST(Fleet, DriftNamesTheMinorityNodes) {
    auto nodes = many("node-a", 20);
    nodes[16].firmware = "28.37.1014";
    nodes[4].firmware = "28.37.1014";
    nodes[9].firmware = "28.36.0000";
    const FleetReport report = analyze(nodes);
    const Drift* fw = drift_of(report.classes[0], "hca.firmware");
    ASSERT_NE(fw, nullptr);
    ASSERT_TRUE(fw->majority.has_value());
    EXPECT_EQ(*fw->majority, "28.39.1002");
    EXPECT_EQ(fw->majority_nodes, 17U);
    ASSERT_EQ(fw->others.size(), 2U);
    EXPECT_EQ(fw->others[0].value, "28.37.1014");
    EXPECT_EQ(fw->others[0].nodes, (std::vector<std::string>{"node-a5", "node-a17"})) << "natural order";
    EXPECT_EQ(fw->others[1].nodes, (std::vector<std::string>{"node-a10"}));
    EXPECT_EQ(fw->layer, "fabric");
    // One value everywhere (even one unknown everywhere) is no drift.
    EXPECT_EQ(drift_of(report.classes[0], "kernel.release"), nullptr);
    EXPECT_EQ(drift_of(report.classes[0], "gpu.driver_version"), nullptr);

    const std::string text = render_fleet_text(report);
    EXPECT_NE(text.find("hca.firmware: 28.39.1002 on 17 nodes; 28.37.1014 on 2: node-a5, node-a17; 28.36.0000 on "
                        "1: node-a10"),
              std::string::npos)
        << text;
}

TEST(Fleet, ATieHasNoMajority) {
    auto nodes = many("node-a", 4);
    nodes[0].firmware = "1.0";
    nodes[1].firmware = "1.0";
    nodes[2].firmware = "2.0";
    nodes[3].firmware = "2.0";
    const FleetReport report = analyze(nodes);
    const Drift* fw = drift_of(report.classes[0], "hca.firmware");
    ASSERT_NE(fw, nullptr);
    EXPECT_FALSE(fw->majority.has_value());
    ASSERT_EQ(fw->others.size(), 2U) << "every value is listed";
    EXPECT_EQ(fw->others[0].value, "1.0");
    EXPECT_EQ(fw->others[1].value, "2.0");

    // A tie below the top does not matter: 3 against 1 and 1.
    auto five = many("node-b", 5);
    five[0].firmware = "x";
    five[1].firmware = "y";
    const FleetReport five_report = analyze(five);
    const Drift* top = drift_of(five_report.classes[0], "hca.firmware");
    ASSERT_NE(top, nullptr);
    ASSERT_TRUE(top->majority.has_value());
    EXPECT_EQ(top->majority_nodes, 3U);
    EXPECT_EQ(top->others.size(), 2U);
}

TEST(Fleet, ThresholdDecidesTheVerdict) {
    auto nodes = many("node-a", 20);
    nodes[0].governor_outcome = "block";
    nodes[0].health = "degraded";
    EXPECT_TRUE(analyze(nodes, 0.95).passes()) << "19 of 20 is exactly 95%";
    nodes[1].governor_outcome = "warn";
    EXPECT_FALSE(analyze(nodes, 0.95).passes());
    EXPECT_TRUE(analyze(nodes, 0.9).passes());
    EXPECT_TRUE(analyze(nodes, 0.0).passes());
    EXPECT_FALSE(analyze({}, 0.0).passes()) << "no node: nothing to pass";
}

TEST(Fleet, AnUnknownCheckIsNotConformingAnywhereAndHasNoFacts) {
    auto nodes = many("node-a", 3);
    nodes[1].health = "unknown";
    const FleetReport report = analyze(nodes);
    EXPECT_EQ(report.conforming, 2U);
    const LayerConformance* pcie = layer_of(report.classes[0], "PCIe");
    ASSERT_NE(pcie, nullptr);
    EXPECT_EQ(pcie->conforming, 2U);
    ASSERT_EQ(pcie->failures.size(), 1U);
    EXPECT_EQ(pcie->failures[0].outcome, "check unknown");
    // Its facts count for no value.
    EXPECT_EQ(drift_of(report.classes[0], "hca.firmware"), nullptr);
    // Outliers first: the node whose check did not run heads the outcome view.
    ASSERT_EQ(report.classes[0].rows.size(), 2U);
    EXPECT_EQ(report.classes[0].rows[0].nodes, (std::vector<std::string>{"node-a2"}));
    EXPECT_EQ(report.classes[0].rows[1].nodes.size(), 2U) << "identical rows collapse";
}

TEST(Fleet, BadRecordsAreNamedAndTheRestIsReported) {
    const std::string bad =
        "{\"schema\": \"launchguard.node-record/v1\"}\n"
        "{not json\n"
        "{\"schema\": \"launchguard.node-record/v9\"}\n";
    const FleetReport report = analyze(many("node-a", 3), 0.95, bad);
    EXPECT_EQ(report.nodes, 3U);
    EXPECT_TRUE(report.passes());
    ASSERT_EQ(report.errors.size(), 3U);
    EXPECT_EQ(report.errors[0].origin, "fleet.jsonl:4");
    EXPECT_EQ(report.errors[0].message, "node: missing or not an object");
    EXPECT_EQ(report.errors[1].origin, "fleet.jsonl:5");
    EXPECT_NE(report.errors[1].message.find("not JSON"), std::string::npos);
    EXPECT_EQ(report.errors[2].origin, "fleet.jsonl:6");
    EXPECT_NE(report.errors[2].message.find("v9"), std::string::npos);

    // Text before the first record is a record of its own, and an error.
    FleetInput input;
    read_records_text("[1, 2]\n" + record(node("node-z1")), "lead.jsonl", input);
    ASSERT_EQ(input.nodes.size(), 1U);
    ASSERT_EQ(input.errors.size(), 1U);
    EXPECT_EQ(input.errors[0].origin, "lead.jsonl:1");
    EXPECT_EQ(input.errors[0].message, "not a JSON object");

    RecordError error;
    EXPECT_FALSE(parse_node_record(R"({"schema":"launchguard.node-record/v1","node":{"hostname":"a","class":"c"},
        "checked_at":"t","health":"fine","rules":[],"facts":{}})",
                                   "x.json:1", error));
    EXPECT_EQ(error.message, "health: 'fine' is not healthy, warning, degraded or unknown");
    EXPECT_FALSE(parse_node_record(R"({"schema":"launchguard.node-record/v1","node":{"hostname":"a","class":"c"},
        "checked_at":"t","health":"healthy","rules":[{"rule":"x","outcome":"maybe"}],"facts":{}})",
                                   "x.json:1", error));
    EXPECT_EQ(error.message, "rules[0].outcome: 'maybe' is not pass, warn, block or unknown");
    EXPECT_FALSE(parse_node_record(R"({"schema":"launchguard.node-record/v1","node":{"hostname":"a","class":"c"},
        "checked_at":"t","health":"healthy","rules":[],"facts":{"k":3}})",
                                   "x.json:1", error));
    EXPECT_EQ(error.message, "facts.k: not an object with a \"value\"");
    EXPECT_EQ(error.origin, "x.json:1");
}

TEST(Fleet, ReadsDirectoriesAndPrettyRecordsAndKeepsTheNewest) {
    test::TempTree tree;
    Node old_a1 = node("node-a1");
    old_a1.firmware = "old";
    old_a1.checked_at = "2026-04-01T00:00:00Z";
    Node a1 = node("node-a1");
    tree.write("records/node-a1.json", json::serialize(json::parse(record(a1))));
    // Pretty-printed records one after another, as `srun ... --format json` writes them.
    std::string stream;
    for (const Node& n : {old_a1, node("node-a2")}) {
        std::string pretty;
        for (char c : json::serialize(json::parse(record(n)))) {
            pretty += c;
            if (c == ',') pretty += "\n  ";
        }
        stream += pretty + "\n";
    }
    tree.write("records/stream.jsonl", stream);
    tree.write("records/notes.txt", "ignored: not *.json or *.jsonl");
    tree.write("records/broken.json", "{\"schema\": 1}\n");
    FleetInput input = read_fleet({tree.path("records")});
    ASSERT_EQ(input.nodes.size(), 2U);
    EXPECT_EQ(input.superseded, 1U);
    for (const auto& n : input.nodes) EXPECT_EQ(n.facts.at("hca.firmware").value_or(""), "28.39.1002") << n.hostname;
    ASSERT_EQ(input.errors.size(), 1U);
    EXPECT_EQ(input.errors[0].origin, tree.path("records/broken.json") + ":1");
    EXPECT_EQ(input.errors[0].message, "schema: not a string");
}

TEST(Fleet, NaturalOrderAndAbbreviation) {
    EXPECT_TRUE(natural_less("node-a2", "node-a10"));
    EXPECT_FALSE(natural_less("node-a10", "node-a2"));
    EXPECT_TRUE(natural_less("a", "b"));
    EXPECT_TRUE(natural_less("node-a02", "node-a3"));
    EXPECT_EQ(thousands(1021), "1,021");
    EXPECT_EQ(thousands(1000000), "1,000,000");
    EXPECT_EQ(thousands(12), "12");
    EXPECT_EQ(abbreviate_nodes({"a", "b", "c"}, 2), "a, b, … (+1 more)");
}

TEST(Fleet, HtmlIsSelfContainedAndEscapesRecordText) {
    auto nodes = many("node-a", 3);
    nodes[0].host = "<script>x</script>";
    nodes[1].firmware = "9.9";
    const std::string html = render_fleet_html(analyze(nodes));
    EXPECT_EQ(html.find("<script"), std::string::npos);
    EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
    EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg")) << "no link but the SVG namespace";
    EXPECT_EQ(html.find("https://"), std::string::npos);
    EXPECT_NE(html.find("<svg"), std::string::npos);
    EXPECT_NE(html.find("hca.firmware"), std::string::npos);

    const auto j = fleet_to_json(analyze(nodes)).as_object();
    EXPECT_EQ(j.at("verdict").as_string(), "pass");
    EXPECT_EQ(j.at("classes").as_array()[0].at("drift").as_array()[0].at("fact").as_string(), "hca.firmware");
}

}  // namespace
}  // namespace launchguard::fleet
