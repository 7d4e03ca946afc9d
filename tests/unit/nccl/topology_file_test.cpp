// parse_topology() against real topology files and against derived files that
// each carry one defect that NCCL's ncclTopoGetXmlFromFile (src/graph/xml.cc)
// either ignores silently or rejects.
#include "nccl/topology_file.h"
#include "support/shared_fixtures.h"
#include "support/text.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace launchguard::nccl {
namespace {

std::string read_fixture(const std::string& name) {
    return testing::read_all(testing::shared_fixture_path("nccl-topo/" + name));
}

std::vector<std::string> busids(const TopologyFile& topo) {
    std::vector<std::string> out;
    for (const auto& pci : topo.pcis) out.push_back(pci.busid);
    return out;
}

// A minimal file NCCL accepts: <system version="1"> around one <cpu> and one
// <pci> (xml.cc requires nothing more); the derived fixtures below start from it.
constexpr std::string_view kMinimal =
    "<system version=\"1\">\n"
    "  <cpu numaid=\"0\" affinity=\"ff\">\n"
    "    <pci busid=\"0000:00:1b.0\" class=\"0x030200\"/>\n"
    "  </cpu>\n"
    "</system>\n";

TEST(NcclTopoFile, AcceptsAzureNdv4WithItsBusIds) {
    TopologyFile topo = parse_topology(read_fixture("ndv4-topo.xml"));
    EXPECT_EQ(topo.outcome, TopoOutcome::accepted) << topo.reason;
    ASSERT_EQ(topo.cpus.size(), 4U);
    EXPECT_EQ(topo.cpus[0].numaid, "0");
    EXPECT_EQ(topo.cpus[0].affinity, "00000000,00000000,00ffffff");
    EXPECT_EQ(topo.cpus[0].line, 2);
    ASSERT_EQ(topo.pcis.size(), 20U);
    EXPECT_EQ(topo.pcis[0].busid, "ffff:ff:01.0");
    EXPECT_EQ(topo.pcis[0].cls, "0x060400");
    EXPECT_EQ(topo.pcis[1].busid, "0003:00:00.0");
    EXPECT_EQ(topo.pcis[1].cls, "0x030200");
    EXPECT_EQ(topo.pcis[1].line, 4);
    EXPECT_EQ(topo.pcis[2].busid, "0103:00:00.0");
    EXPECT_EQ(topo.pcis[2].cls, "0x020700");
    EXPECT_TRUE(topo.upper_case_busids.empty());
}

TEST(NcclTopoFile, AcceptsAzureNdv5WithItsBusIds) {
    TopologyFile topo = parse_topology(read_fixture("ndv5-topo.xml"));
    EXPECT_EQ(topo.outcome, TopoOutcome::accepted) << topo.reason;
    EXPECT_EQ(topo.cpus.size(), 2U);
    auto ids = busids(topo);
    ASSERT_EQ(ids.size(), 24U);
    EXPECT_EQ(ids[0], "ffff:ff:01.0");
    EXPECT_EQ(ids[1], "0001:00:00.0");
    EXPECT_EQ(ids[2], "0101:00:00.0");
    EXPECT_EQ(ids[23], "0108:00:00.0");
}

TEST(NcclTopoFile, AcceptsAwsP4dWithLeadingLicenceCommentAndTrailingComments) {
    TopologyFile topo = parse_topology(read_fixture("p4d-24xl-topo.xml"));
    EXPECT_EQ(topo.outcome, TopoOutcome::accepted) << topo.reason;
    EXPECT_EQ(topo.cpus.size(), 2U);
    EXPECT_EQ(topo.cpus[0].line, 16);
    auto ids = busids(topo);
    std::vector<std::string> first_switch = {"ffff:ff:01.0", "0000:10:1c.0", "0000:10:1d.0", "0000:10:1b.0"};
    ASSERT_EQ(ids.size(), 16U);
    EXPECT_EQ(std::vector<std::string>(ids.begin(), ids.begin() + 4), first_switch);
    EXPECT_EQ(ids.back(), "0000:a0:1b.0");
}

TEST(NcclTopoFile, RejectsRcclModelForVersion2) {
    TopologyFile topo = parse_topology(read_fixture("rccl-topo_4p1h.xml"));
    EXPECT_EQ(topo.outcome, TopoOutcome::rejected);
    EXPECT_EQ(topo.reason, "XML Topology has wrong version 2, 1 needed");
    EXPECT_EQ(topo.line, 5);
}

TEST(NcclTopoFile, MinimalFileIsAccepted) {
    TopologyFile topo = parse_topology(kMinimal);
    EXPECT_EQ(topo.outcome, TopoOutcome::accepted) << topo.reason;
    EXPECT_EQ(busids(topo), std::vector<std::string>{"0000:00:1b.0"});
    EXPECT_EQ(topo.pcis[0].line, 3);
}

TEST(NcclTopoFile, SingleLineFileFromAwsIssueIsAccepted) {
    TopologyFile topo =
        parse_topology("<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:00:1b.0\"/></cpu></system>");
    EXPECT_EQ(topo.outcome, TopoOutcome::accepted) << topo.reason;
    EXPECT_EQ(busids(topo), std::vector<std::string>{"0000:00:1b.0"});
}

struct TopoCase {
    const char* label;
    const char* what_was_changed;  // relative to kMinimal
    std::string text;
    TopoOutcome outcome;
    std::string reason_contains;
    int line;
};

std::string replace_first(std::string_view text, std::string_view from, std::string_view to) {
    std::string out(text);
    out.replace(out.find(from), from.size(), to);
    return out;
}

class NcclTopoDerived : public ::testing::TestWithParam<TopoCase> {};

TEST_P(NcclTopoDerived, MatchesNcclOutcome) {
    const TopoCase& c = GetParam();
    TopologyFile topo = parse_topology(c.text);
    EXPECT_EQ(to_string(topo.outcome), to_string(c.outcome)) << c.what_was_changed << "\nreason: " << topo.reason;
    EXPECT_NE(topo.reason.find(c.reason_contains), std::string::npos)
        << "reason: " << topo.reason << "\nexpected to contain: " << c.reason_contains;
    EXPECT_EQ(topo.line, c.line) << c.what_was_changed;
}

std::string crlf(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c == '\n') out += '\r';
        out += c;
    }
    return out;
}

std::string tabs_for_indent(std::string_view text) {
    std::string out;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        end = end == std::string_view::npos ? text.size() : end + 1;
        std::string_view line = text.substr(start, end - start);
        std::size_t indent = line.find_first_not_of(' ');
        if (indent != 0 && indent != std::string_view::npos) out += '\t';
        out += line.substr(indent == std::string_view::npos ? 0 : indent);
        start = end;
    }
    return out;
}

std::string seventeen_attributes() {
    std::string attrs;
    for (int i = 0; i < 16; ++i) attrs += " a" + std::to_string(i) + "=\"x\"";
    return replace_first(kMinimal, "<cpu numaid=\"0\" affinity=\"ff\">", "<cpu" + attrs + " numaid=\"7\">");
}

INSTANTIATE_TEST_SUITE_P(
    Outcomes, NcclTopoDerived,
    ::testing::Values(
        TopoCase{"empty", "whole file removed", "", TopoOutcome::silently_ignored, "no elements", 0},
        TopoCase{"whitespace", "only spaces and newlines", "  \n\n \r\n", TopoOutcome::silently_ignored, "no elements",
                 0},
        TopoCase{"root_topology", "<system> renamed <topology>",
                 replace_first(replace_first(kMinimal, "<system", "<topology"), "</system>", "</topology>"),
                 TopoOutcome::silently_ignored, "Ignoring element topology", 0},
        TopoCase{"system_no_children", "<cpu> subtree removed", "<system version=\"1\">\n</system>\n",
                 TopoOutcome::silently_ignored, "no <cpu>", 1},
        TopoCase{"system_self_closing", "<system version=\"1\"/> only", "<system version=\"1\"/>\n",
                 TopoOutcome::silently_ignored, "no <cpu>", 1},
        TopoCase{"system_only_unknown_children", "<cpu> renamed <socket>",
                 replace_first(replace_first(kMinimal, "<cpu", "<socket"), "</cpu>", "</socket>"),
                 TopoOutcome::silently_ignored, "no <cpu>", 1},
        TopoCase{"no_version", "version attribute removed", replace_first(kMinimal, " version=\"1\"", ""),
                 TopoOutcome::rejected, "Attribute version of node system not found", 1},
        TopoCase{"version_2", "version=\"2\"", replace_first(kMinimal, "version=\"1\"", "version=\"2\""),
                 TopoOutcome::rejected, "XML Topology has wrong version 2, 1 needed", 1},
        TopoCase{"prolog", "<?xml version=\"1.0\"?> line prepended",
                 "<?xml version=\"1.0\"?>\n" + std::string(kMinimal), TopoOutcome::rejected,
                 "XML Parse : expected >, got '?'", 1},
        TopoCase{"tab_indent", "leading spaces replaced by one TAB", tabs_for_indent(kMinimal), TopoOutcome::rejected,
                 "XML Parse error : expecting '<', got '\\t'", 2},
        TopoCase{"attributes_split", "affinity moved to its own line",
                 replace_first(kMinimal, "numaid=\"0\" affinity", "numaid=\"0\"\n       affinity"),
                 TopoOutcome::rejected, "XML Parse : expected >, got '\\n'", 2},
        TopoCase{"unterminated_system", "</system> removed", replace_first(kMinimal, "</system>\n", ""),
                 TopoOutcome::rejected, "XML Parse : unterminated system", 1},
        TopoCase{"mismatched_close", "</cpu> written </pci>", replace_first(kMinimal, "</cpu>", "</pci>"),
                 TopoOutcome::rejected, "XML Mismatch : cpu / pci", 4},
        TopoCase{"unquoted_value", "numaid=0 without quotes", replace_first(kMinimal, "\"0\" ", "0 "),
                 TopoOutcome::rejected, "Expected (double) quote", 2},
        TopoCase{"spaces_around_equals", "numaid = \"0\"", replace_first(kMinimal, "numaid=", "numaid = "),
                 TopoOutcome::rejected, "Expected (double) quote", 2},
        TopoCase{"unterminated_comment", "<!-- without -->", std::string(kMinimal) + "<!-- trailing\n",
                 TopoOutcome::rejected, "unterminated comment", 6},
        TopoCase{"ignored_element_closed_by_any_tag",
                 "an unknown <foo> under <cpu> closed by </bar> (NCCL reads children of an ignored element into "
                 "the element's own slot, so any closing tag matches)",
                 replace_first(kMinimal, "  </cpu>", "    <foo>\n    </bar>\n  </cpu>"), TopoOutcome::accepted, "", 0},
        TopoCase{"ignored_element_unterminated", "an unknown <foo> opened at the end and never closed",
                 std::string(kMinimal) + "<foo>\n", TopoOutcome::rejected, "XML Parse : unterminated ", 6},
        TopoCase{"crlf", "LF replaced by CRLF", crlf(kMinimal), TopoOutcome::accepted, "", 0},
        TopoCase{"single_quotes", "double quotes replaced by single quotes",
                 replace_first(replace_first(kMinimal, "\"0000:00:1b.0\"", "'0000:00:1b.0'"), "\"1\"", "'1'"),
                 TopoOutcome::accepted, "", 0},
        TopoCase{
            "comments", "comments before, inside and after",
            "<!-- generated -->\n" + replace_first(kMinimal, "  </cpu>", "    <!-- a=b c -->\n  </cpu>") + "<!--x-->\n",
            TopoOutcome::accepted, "", 0},
        TopoCase{"seventeen_attributes", "16 extra attributes before numaid on <cpu>", seventeen_attributes(),
                 TopoOutcome::accepted, "", 0}),
    [](const ::testing::TestParamInfo<TopoCase>& param_info) { return std::string(param_info.param.label); });

TEST(NcclTopoFile, ExtraAttributesBeyondSixteenAreDropped) {
    // Derived from kMinimal: 16 attributes before numaid push numaid out.
    TopologyFile topo = parse_topology(seventeen_attributes());
    ASSERT_EQ(topo.cpus.size(), 1U);
    EXPECT_EQ(topo.cpus[0].numaid, "");
}

TEST(NcclTopoFile, ListsUpperCaseBusIdsNcclWillNeverMatch) {
    // Derived from kMinimal: a second <pci> with upper-case hex digits.
    std::string text = replace_first(kMinimal, "  </cpu>", "    <pci busid=\"0000:AB:00.0\"/>\n  </cpu>");
    TopologyFile topo = parse_topology(text);
    EXPECT_EQ(topo.outcome, TopoOutcome::accepted);
    EXPECT_EQ(topo.upper_case_busids, std::vector<std::string>{"0000:AB:00.0"});
    EXPECT_EQ(topo.pcis.at(1).line, 4);
}

TEST(NcclTopoFile, PciUnderIgnoredElementsIsNotCollected) {
    // NCCL's handler tables allow <pci> only under <cpu> or <pci>: one under
    // <gpu> is consumed as an ignored element and never reaches the topology.
    std::string text =
        replace_first(kMinimal, "<pci busid=\"0000:00:1b.0\" class=\"0x030200\"/>",
                      "<pci busid=\"0000:00:1b.0\">\n<gpu dev=\"0\"><pci busid=\"0000:99:00.0\"/></gpu>\n"
                      "</pci>");
    TopologyFile topo = parse_topology(text);
    EXPECT_EQ(topo.outcome, TopoOutcome::accepted) << topo.reason;
    EXPECT_EQ(busids(topo), std::vector<std::string>{"0000:00:1b.0"});
}

TEST(NcclTopoFile, TooManyNodesIsRejectedLikeNccl) {
    // NCCL_TOPO_XML_MAX_NODES = 256 handled nodes.
    std::string text = "<system version=\"1\">\n<cpu numaid=\"0\">\n";
    for (int i = 0; i < 300; ++i) text += "<pci busid=\"0000:00:00.0\"/>\n";
    text += "</cpu>\n</system>\n";
    TopologyFile topo = parse_topology(text);
    EXPECT_EQ(topo.outcome, TopoOutcome::rejected);
    EXPECT_EQ(topo.reason, "Error : XML parser is limited to 256 nodes");
}

TEST(NcclTopoFile, DeepNestingDoesNotCrash) {
    std::string text;
    for (int i = 0; i < 100000; ++i) text += "<a>";
    TopologyFile topo = parse_topology(text);
    EXPECT_EQ(topo.outcome, TopoOutcome::rejected);
}

TEST(NcclTopoFile, ThirtyThousandCommentsDoNotOverflowTheStack) {
    // NCCL reads one comment per recursion; the parser must not.
    std::string text;
    for (int i = 0; i < 30000; ++i) text += "<!---->";
    text += std::string(kMinimal);
    TopologyFile topo = parse_topology(text);
    EXPECT_EQ(topo.outcome, TopoOutcome::accepted) << topo.reason;
    EXPECT_EQ(topo.pcis.size(), 1U);
}

TEST(NcclTopoFile, CommentsBetweenElementsAreSkippedAtAnyDepth) {
    std::string text =
        "<system version=\"1\"><!-- a --><!-- b -->\n<cpu numaid=\"0\"><!----><pci busid=\"0000:00:1b.0\"/>"
        "</cpu><!-- c --></system><!-- end -->\n";
    TopologyFile topo = parse_topology(text);
    EXPECT_EQ(topo.outcome, TopoOutcome::accepted) << topo.reason;
    EXPECT_EQ(topo.pcis.size(), 1U);
}

TEST(NcclTopoFile, VersionIsTruncatedToAnIntAsNcclStoresIt) {
    // strtol gives 2^32 + 1; NCCL keeps it in an int: 1.
    TopologyFile wrapped = parse_topology(replace_first(kMinimal, "version=\"1\"", "version=\"4294967297\""));
    EXPECT_EQ(wrapped.outcome, TopoOutcome::accepted) << wrapped.reason;
    TopologyFile negative = parse_topology(replace_first(kMinimal, "version=\"1\"", "version=\"4294967295\""));
    EXPECT_EQ(negative.outcome, TopoOutcome::rejected);
    EXPECT_EQ(negative.reason, "XML Topology has wrong version -1, 1 needed");
}

TEST(NcclTopoFile, ANulByteEndsAnAttributeValueAsNcclsCStringDoes) {
    std::string text(kMinimal);
    const std::string busid = "0000:00:1b.0";
    text.replace(text.find(busid), busid.size(), busid + std::string("\0junk", 5));
    TopologyFile topo = parse_topology(text);
    EXPECT_EQ(topo.outcome, TopoOutcome::accepted) << topo.reason;
    ASSERT_EQ(topo.pcis.size(), 1U);
    EXPECT_EQ(topo.pcis[0].busid, busid);
}

TEST(NcclTopoFile, OutcomeNames) {
    EXPECT_EQ(to_string(TopoOutcome::accepted), "accepted");
    EXPECT_EQ(to_string(TopoOutcome::silently_ignored), "silently_ignored");
    EXPECT_EQ(to_string(TopoOutcome::rejected), "rejected");
}

TEST(NcclTopoFile, InProcessPaths) {
    EXPECT_TRUE(is_in_process_path("/proc/self/fd/3"));
    EXPECT_TRUE(is_in_process_path("/proc/12345/fd/17"));
    EXPECT_TRUE(is_in_process_path("/dev/fd/4"));
    EXPECT_FALSE(is_in_process_path("/proc/self/fd/"));
    EXPECT_FALSE(is_in_process_path("/proc/self/fdinfo/3"));
    EXPECT_FALSE(is_in_process_path("/proc/abc/fd/3"));
    EXPECT_FALSE(is_in_process_path("/opt/microsoft/ndv5/topo.xml"));
    EXPECT_FALSE(is_in_process_path("/dev/fd/x"));
    EXPECT_FALSE(is_in_process_path(kDefaultTopoPath));
}

}  // namespace
}  // namespace launchguard::nccl

namespace launchguard::nccl {
namespace {

TEST(NcclTopoNuma, EveryPciCarriesTheNumaNodeOfItsCpu) {
    TopologyFile topo = parse_topology(read_fixture("ndv5-topo.xml"));
    ASSERT_EQ(topo.outcome, TopoOutcome::accepted);
    ASSERT_EQ(topo.pcis.size(), 24U);
    EXPECT_EQ(topo.pcis.front().busid, "ffff:ff:01.0");
    EXPECT_EQ(topo.pcis.front().numaid, "0");
    EXPECT_EQ(topo.pcis[1].busid, "0001:00:00.0");  // GPU 0 of an ND H100 v5, on NUMA node 0
    EXPECT_EQ(topo.pcis[1].numaid, "0");
    EXPECT_EQ(topo.pcis.back().busid, "0108:00:00.0");  // the last NIC, on NUMA node 1
    EXPECT_EQ(topo.pcis.back().numaid, "1");
}

}  // namespace
}  // namespace launchguard::nccl
