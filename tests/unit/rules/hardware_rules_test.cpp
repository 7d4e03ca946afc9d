// hw.* rules. hwloc/32em64t-2n8c2t lists 3 NVIDIA GPUs (0000:84:00.0,
// 0000:03:00.0, 0000:83:00.0; its AMD GPU is not counted) and mlx5_0
// (0000:04:00.0, port 1 ACTIVE);
// sysfs/kvm-guest-2n adds the PCIe links of those bus ids.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "support/launch_fixture.h"
#include "support/rule_harness.h"
#include "unit/rules/node_rules_test_support.h"

namespace launchguard {
namespace {

using testing::evidence_of;
using testing::kTwoNode;
using testing::launch_from_yaml;
using testing::mentions;
using testing::profile_from_yaml;
using testing::run_rule;
using testing::undecided_because;

// --- hw.pcie-degraded -----------------------------------------------------

TEST(HwPcieDegraded, BlocksANarrowGpuLinkAndASlowNicLink) {
    auto result = run_rule("hw.pcie-degraded", launch_from_yaml(std::string(kTwoNode) + "sysfs: sysfs/kvm-guest-2n\n"));
    // GPU 0 runs at 2.5 of 8 GT/s: an idle GPU's power saving, not reported.
    ASSERT_EQ(result.findings.size(), 2U);
    const Finding& gpu = result.findings[0];
    EXPECT_EQ(gpu.rule, "hw.pcie-degraded");
    EXPECT_EQ(gpu.action, Action::block);
    EXPECT_EQ(evidence_of(gpu, "device"), "GPU 1");
    EXPECT_EQ(evidence_of(gpu, "busid"), "0000:03:00.0");
    EXPECT_EQ(evidence_of(gpu, "current_link"), "5 GT/s x8");
    EXPECT_EQ(evidence_of(gpu, "max_link"), "5 GT/s x16");
    EXPECT_TRUE(mentions(evidence_of(gpu, "source"), "sysfs under"));
    EXPECT_TRUE(mentions(gpu.message, "GPU 1 (0000:03:00.0) PCIe link runs at x8 of x16 lanes (50% of its lanes)"));
    ASSERT_EQ(gpu.remediation.size(), 1U);
    EXPECT_EQ(gpu.remediation[0].kind, RemediationOp::Kind::manual);
    EXPECT_TRUE(mentions(gpu.remediation[0].text, "lspci -vv -s 0000:03:00.0"));

    const Finding& nic = result.findings[1];
    EXPECT_EQ(evidence_of(nic, "device"), "NIC mlx5_0");
    EXPECT_EQ(evidence_of(nic, "current_link"), "5 GT/s x8");
    EXPECT_EQ(evidence_of(nic, "max_link"), "8 GT/s x8");
    EXPECT_TRUE(mentions(nic.message, "NIC mlx5_0 (0000:04:00.0) PCIe link runs at 5 of 8 GT/s:"));
}

TEST(HwPcieDegraded, QuietWhenLinksRunAtTheirMaximum) {
    auto ctx = launch_from_yaml(std::string(kTwoNode) + "sysfs: sysfs/kvm-guest-2n\n");
    for (auto& gpu : ctx.topology.value().gpus) {
        if (gpu.link.max) gpu.link.current = gpu.link.max;
    }
    for (auto& nic : ctx.topology.value().nics) nic.link.current = nic.link.max;
    EXPECT_TRUE(run_rule("hw.pcie-degraded", ctx).quiet());
}

TEST(HwPcieDegraded, UsesTheNodesSysfsRecordsWhenTheTopologyHasNoLink) {
    auto ctx = launch_from_yaml(kTwoNode);
    std::map<std::string, PcieLinkRecord> links;
    links["0000:04:00.0"] = PcieLinkRecord{"0000:04:00.0", PcieLink{8, 4}, PcieLink{8, 8}};
    links["0000:84:00.0"] = PcieLinkRecord{"0000:84:00.0", PcieLink{2.5, 16}, PcieLink{8, 16}};
    ctx.node.pcie_links = Fact<std::map<std::string, PcieLinkRecord>>::known(links, "/sys/bus/pci/devices");
    auto result = run_rule("hw.pcie-degraded", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("device"), "NIC mlx5_0");
    EXPECT_EQ(result.evidence("current_link"), "8 GT/s x4");
    EXPECT_EQ(result.evidence("source"), "/sys/bus/pci/devices");
}

TEST(HwPcieDegraded, UnknownWithoutATopology) {
    // azure-vm-degraded has a GPU at x8 of x16, but without a topology nothing says which device is a GPU.
    auto result = run_rule("hw.pcie-degraded", launch_from_yaml("sysfs: sysfs/azure-vm-degraded\n"));
    EXPECT_TRUE(undecided_because(result, "hw.pcie-degraded", "node topology is unknown"));
}

TEST(HwPcieDegraded, UnknownWhenNoLinkStateIsKnown) {
    auto hwloc_only = run_rule("hw.pcie-degraded", launch_from_yaml(kTwoNode));
    EXPECT_TRUE(undecided_because(hwloc_only, "hw.pcie-degraded", "hwloc XML records only the current bandwidth"));
    // sysfs was read, but holds no record for these bus ids.
    auto ctx = launch_from_yaml(kTwoNode);
    ctx.node.pcie_links = Fact<std::map<std::string, PcieLinkRecord>>::known({}, "/sys/bus/pci/devices");
    auto no_record = run_rule("hw.pcie-degraded", ctx);
    EXPECT_TRUE(undecided_because(no_record, "hw.pcie-degraded", "no record for their bus ids"));
}

// --- hw.inventory ---------------------------------------------------------

TEST(HwInventory, BlocksWhenGpusAreMissing) {
    auto profile = profile_from_yaml("name: eight-gpus\nnode: {gpus: 8}\n");
    auto result = run_rule("hw.inventory", launch_from_yaml(kTwoNode), profile);
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "hw.inventory");
    EXPECT_EQ(finding.action, Action::block);
    EXPECT_EQ(result.evidence("found"), "3 GPUs");
    EXPECT_EQ(result.evidence("expected"), "8 (profile eight-gpus)");
    EXPECT_EQ(result.evidence("present"), "0000:84:00.0, 0000:03:00.0, 0000:83:00.0");
    EXPECT_TRUE(mentions(result.evidence("source"), "32em64t-2n8c2t-pci-normalio.xml"));
    EXPECT_TRUE(mentions(finding.message, "node has 3 GPUs, profile eight-gpus expects 8"));
    ASSERT_EQ(finding.remediation.size(), 1U);
    EXPECT_TRUE(mentions(finding.remediation[0].text, "state=drain"));
}

TEST(HwInventory, CountsRdmaNicsAndActivePorts) {
    // h100-baremetal's sysfs adds mlx5_1, whose port is DOWN.
    auto ctx = launch_from_yaml(std::string(kTwoNode) + "sysfs: sysfs/h100-baremetal\n");
    auto profile = profile_from_yaml("name: two-rails\nnode: {gpus: 3, rdma_nics: 2, active_ib_ports: 2}\n");
    auto result = run_rule("hw.inventory", ctx, profile);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("found"), "1 ACTIVE IB/RoCE port");
    EXPECT_EQ(result.evidence("present"), "mlx5_0:1");
    EXPECT_EQ(result.evidence("expected"), "2 (profile two-rails)");
}

TEST(HwInventory, BlocksForAMissingRdmaNic) {
    auto profile = profile_from_yaml("name: two-nics\nnode: {rdma_nics: 2}\n");
    auto result = run_rule("hw.inventory", launch_from_yaml(kTwoNode), profile);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("found"), "1 RDMA NIC");
    EXPECT_EQ(result.evidence("present"), "mlx5_0 (0000:04:00.0)");
}

TEST(HwInventory, QuietWhenCountsMatch) {
    auto profile = profile_from_yaml("name: exact\nnode: {gpus: 3, rdma_nics: 1, active_ib_ports: 1}\n");
    EXPECT_TRUE(run_rule("hw.inventory", launch_from_yaml(kTwoNode), profile).quiet());
}

TEST(HwInventory, QuietWhenTheProfileSetsNoCounts) {
    // Even without a topology: there is nothing to compare.
    EXPECT_TRUE(run_rule("hw.inventory", launch_from_yaml("{}")).quiet());
}

TEST(HwInventory, UnknownWithoutATopology) {
    auto profile = profile_from_yaml("name: eight-gpus\nnode: {gpus: 8}\n");
    auto result = run_rule("hw.inventory", launch_from_yaml("{}"), profile);
    EXPECT_TRUE(undecided_because(result, "hw.inventory", "no node topology in the test fixture"));
}

}  // namespace
}  // namespace launchguard
