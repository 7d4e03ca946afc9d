// Rules on NCCL's predicted paths, on the topology files of
// tests/fixtures/nccl-paths (see the README there for their layout).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "support/launch_fixture.h"
#include "support/rule_harness.h"
#include "support/text.h"
#include "unit/rules/node_rules_test_support.h"

namespace launchguard {
namespace {

using testing::evidence_of;
using testing::launch_from_yaml;
using testing::mentions;
using testing::profile_from_yaml;
using testing::run_rule;
using testing::undecided_because;

// A launch whose NCCL_TOPO_FILE is the fixture, with extra NCCL variables and files.
LaunchContext launch_with_topology(const std::string& fixture, const std::string& env = "",
                                   const std::string& files = "") {
    std::string yaml = "env: {NCCL_TOPO_FILE: /opt/topo.xml" + env + "}\nfiles:\n  /opt/topo.xml: |\n";
    std::string line;
    std::istringstream lines(testing::read_all(testing::fixture_path("nccl-paths/" + fixture)));
    while (std::getline(lines, line)) yaml += "    " + line + "\n";
    yaml += files;
    return launch_from_yaml(yaml);
}

Profile gdr_profile() { return profile_from_yaml("name: gdr\nnode: {gpudirect_rdma: true}\n"); }

// --- net.gdr-path-off ---------------------------------------------------------

TEST(NetGdrPathOff, FiresWhenTheLevelSettingRefusesGdr) {
    auto result = run_rule("net.gdr-path-off",
                           launch_with_topology("two-socket-nvswitch.xml", ", NCCL_NET_GDR_LEVEL: LOC"), gdr_profile());
    ASSERT_EQ(result.findings.size(), 4U);
    const Finding& first = result.findings[0];
    EXPECT_EQ(evidence_of(first, "gpu"), "0000:1b:00.0");
    EXPECT_EQ(evidence_of(first, "nic"), "0000:1c:00.0");
    EXPECT_EQ(evidence_of(first, "path"), "PIX");
    EXPECT_EQ(evidence_of(first, "cause"), "setting NCCL_NET_GDR_LEVEL");
    EXPECT_TRUE(mentions(first.message, "through host memory"));
    ASSERT_EQ(first.remediation.size(), 1U);
    EXPECT_EQ(first.remediation[0].kind, RemediationOp::Kind::unset_env);
}

TEST(NetGdrPathOff, FiresOnASlotTooFarWhenPxnIsOff) {
    auto result = run_rule("net.gdr-path-off", launch_with_topology("two-socket-nvswitch.xml", ", NCCL_PXN_DISABLE: 1"),
                           gdr_profile());
    ASSERT_EQ(result.findings.size(), 2U);
    EXPECT_EQ(evidence_of(result.findings[0], "gpu"), "0000:9b:00.0");
    EXPECT_EQ(evidence_of(result.findings[0], "path"), "PHB");
    EXPECT_EQ(evidence_of(result.findings[0], "cause"), "slot");
}

TEST(NetGdrPathOff, QuietWhenEveryGpuGetsGdr) {
    EXPECT_TRUE(run_rule("net.gdr-path-off", launch_with_topology("two-socket-nvswitch.xml"), gdr_profile()).quiet());
}

TEST(NetGdrPathOff, QuietWhereTheProfileDoesNotExpectGdr) {
    auto ctx = launch_with_topology("two-socket-nvswitch.xml", ", NCCL_NET_GDR_LEVEL: LOC");
    EXPECT_TRUE(run_rule("net.gdr-path-off", ctx, profile_from_yaml("name: plain\n")).quiet());
}

// --- topo.nic-uneven -----------------------------------------------------------

TEST(TopoNicUneven, FiresWhenPxnPutsFourGpusOnOneNic) {
    auto result = run_rule("topo.nic-uneven", launch_with_topology("two-socket-nvswitch.xml"));
    ASSERT_EQ(result.findings.size(), 1U);
    EXPECT_EQ(evidence_of(result.findings[0], "nic"), "0000:1c:00.0");
    EXPECT_EQ(evidence_of(result.findings[0], "fair_share"), "2");
}

TEST(TopoNicUneven, QuietWhenEachNicServesItsSocket) {
    auto ctx = launch_with_topology("two-socket-nvswitch.xml", ", NCCL_PXN_DISABLE: 1");
    EXPECT_TRUE(run_rule("topo.nic-uneven", ctx).quiet());
}

// --- topo.p2p-off --------------------------------------------------------------

TEST(TopoP2pOff, FiresForNvlinkPairsWhenP2pIsDisabled) {
    auto result = run_rule("topo.p2p-off", launch_with_topology("two-socket-nvswitch.xml", ", NCCL_P2P_DISABLE: 1"));
    ASSERT_EQ(result.findings.size(), 6U);
    EXPECT_EQ(evidence_of(result.findings[0], "path"), "NVL");
    EXPECT_TRUE(mentions(result.findings[0].message, "NVLink"));
    ASSERT_EQ(result.findings[0].remediation.size(), 1U);
    EXPECT_EQ(result.findings[0].remediation[0].name, "NCCL_P2P_DISABLE");
}

TEST(TopoP2pOff, QuietByDefault) {
    EXPECT_TRUE(run_rule("topo.p2p-off", launch_with_topology("two-socket-nvswitch.xml")).quiet());
}

// --- net.gdr-iommu-groups --------------------------------------------------------

LaunchContext grace_launch(const std::string& params, const std::string& nic_group) {
    auto ctx = launch_with_topology("grace-c2c.xml", "",
                                    params.empty() ? "" : "  /proc/driver/nvidia/params: \"" + params + "\"\n");
    std::vector<IommuGroup> groups{{"7", "DMA", {"0000:01:00.0"}}, {nic_group, "DMA", {"0000:03:00.0"}}};
    if (nic_group == "7") groups = {{"7", "DMA", {"0000:01:00.0", "0000:03:00.0"}}};
    ctx.node.iommu_groups = Fact<std::vector<IommuGroup>>::known(groups, "/sys/kernel/iommu_groups");
    return ctx;
}

Profile grace_profile() { return profile_from_yaml("name: grace\nnode: {grace: true}\n"); }

TEST(NetGdrIommuGroups, FiresAcrossGroupsWithoutTheOverride) {
    auto result = run_rule("net.gdr-iommu-groups", grace_launch("GrdmaPciTopoCheckOverride: 0", "9"), grace_profile());
    ASSERT_EQ(result.findings.size(), 1U);
    EXPECT_EQ(evidence_of(result.findings[0], "gpu_iommu_group"), "7");
    EXPECT_EQ(evidence_of(result.findings[0], "nic_iommu_group"), "9");
    EXPECT_TRUE(mentions(result.findings[0].message, "sockets"));
}

TEST(NetGdrIommuGroups, QuietWithTheOverride) {
    EXPECT_TRUE(
        run_rule("net.gdr-iommu-groups", grace_launch("GrdmaPciTopoCheckOverride: 1", "9"), grace_profile()).quiet());
}

TEST(NetGdrIommuGroups, QuietInOneGroup) {
    EXPECT_TRUE(
        run_rule("net.gdr-iommu-groups", grace_launch("GrdmaPciTopoCheckOverride: 0", "7"), grace_profile()).quiet());
}

TEST(NetGdrIommuGroups, UnknownWhenTheDriverParametersAreNotShown) {
    auto result = run_rule("net.gdr-iommu-groups", grace_launch("", "9"), grace_profile());
    EXPECT_TRUE(undecided_because(result, "net.gdr-iommu-groups", "NVreg_GrdmaPciTopoCheckOverride"));
}

TEST(NetGdrIommuGroups, NotJudgedOffSmmuNodes) {
    EXPECT_TRUE(run_rule("net.gdr-iommu-groups", grace_launch("GrdmaPciTopoCheckOverride: 0", "9")).quiet());
}

}  // namespace
}  // namespace launchguard
