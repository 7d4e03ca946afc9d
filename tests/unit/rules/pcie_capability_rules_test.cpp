// hw.pcie-acs-p2p and virt.ats-off on sysfs trees with binary PCI
// configuration space (support/pci_config.h), read the way node checks read
// them (probe_pci_capabilities), over a topology where GPU 0000:18:00.0 and
// NIC mlx5_0 0000:19:00.0 share a PCIe switch (upstream port 0000:16:00.0,
// downstream ports 0000:17:00.0 and 0000:17:01.0) below root port
// 0000:15:01.0, and GPU 0000:28:00.0 sits under another root port.
#include <gtest/gtest.h>

#include <string>

#include "probe/sysfs_probe.h"
#include "support/launch_fixture.h"
#include "support/pci_config.h"
#include "support/rule_harness.h"
#include "unit/probe/temp_tree.h"
#include "unit/rules/node_rules_test_support.h"

namespace launchguard {
namespace {

using testing::launch_from_yaml;
using testing::manual_steps;
using testing::mentions;
using testing::PciConfigSpace;
using testing::profile_from_yaml;
using testing::run_rule;
using testing::undecided_because;

constexpr std::uint16_t kAcsRedirect = 0x001d;  // SV, RR, CR, UF: what a BIOS with ACS on sets
constexpr std::uint16_t kAcsOff = 0x0000;

NodeTopology switch_topology() {
    NodeTopology topo;
    topo.source = "test topology";
    Gpu near;
    near.index = 0;
    near.busid = "0000:18:00.0";
    near.pci_bridges = {"0000:15:01.0", "0000:16:00.0", "0000:17:00.0"};
    Gpu far;
    far.index = 1;
    far.busid = "0000:28:00.0";
    far.pci_bridges = {"0000:25:01.0"};
    Nic nic;
    nic.hca = "mlx5_0";
    nic.busid = "0000:19:00.0";
    nic.pci_bridges = {"0000:15:01.0", "0000:16:00.0", "0000:17:01.0"};
    nic.ports.push_back(IbPort{1, "ACTIVE", "LinkUp", 400.0, "InfiniBand"});
    topo.gpus = {near, far};
    topo.nics = {nic};
    return topo;
}

struct Node {
    test::TempTree tree;
    void config(const std::string& busid, const std::string& bytes) const {
        tree.write("sys/bus/pci/devices/" + busid + "/config", bytes);
    }
    LaunchContext context(const std::string& virtualization = "none") const {
        LaunchContext ctx = launch_from_yaml("node: {virtualization: " + virtualization + "}\n");
        NodeTopology topo = switch_topology();
        ctx.node.pci_capabilities = probe_pci_capabilities(
            tree.root(),
            {"0000:15:01.0", "0000:16:00.0", "0000:17:00.0", "0000:17:01.0", "0000:25:01.0", "0000:19:00.0"});
        ctx.topology = Fact<NodeTopology>::known(std::move(topo), "test topology");
        return ctx;
    }
};

// --- hw.pcie-acs-p2p ------------------------------------------------------

TEST(HwPcieAcsP2p, BlocksRedirectOnTheSwitchPortsBetweenGpuAndNic) {
    Node node;
    // ACS on the root ports is harmless: GPU-NIC traffic under the switch never reaches them.
    node.config("0000:15:01.0", PciConfigSpace().aer().acs(kAcsRedirect).bytes());
    node.config("0000:16:00.0", PciConfigSpace().aer().bytes());
    node.config("0000:17:00.0", PciConfigSpace().aer().acs(kAcsRedirect).bytes());
    node.config("0000:17:01.0", PciConfigSpace().acs(0x0004).bytes());
    node.config("0000:25:01.0", PciConfigSpace().acs(kAcsRedirect).bytes());
    auto result = run_rule("hw.pcie-acs-p2p", node.context());
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.action, Action::block);
    EXPECT_TRUE(mentions(finding.message,
                         "2 bridges between GPUs and NICs on this bare-metal node "
                         "(0000:17:00.0, 0000:17:01.0)"));
    EXPECT_EQ(result.evidence("0000:17:00.0"),
              "ACS Control 0x001d (Source Validation, P2P Request Redirect, P2P Completion Redirect) between GPU "
              "0000:18:00.0 and NIC mlx5_0 0000:19:00.0");
    EXPECT_TRUE(mentions(result.evidence("0000:17:01.0"), "ACS Control 0x0004 (P2P Request Redirect)"));
    EXPECT_EQ(result.evidence("0000:15:01.0"), "");
    EXPECT_EQ(result.evidence("0000:25:01.0"), "");
    EXPECT_TRUE(mentions(manual_steps(finding)[0], "setpci -s 0000:17:00.0 ECAP_ACS+0x6.w=0000"));
}

TEST(HwPcieAcsP2p, QuietWithAcsOffOrWithoutTheCapability) {
    Node node;
    node.config("0000:17:00.0", PciConfigSpace().aer().acs(kAcsOff).bytes());
    node.config("0000:17:01.0", PciConfigSpace().aer().bytes());
    EXPECT_TRUE(run_rule("hw.pcie-acs-p2p", node.context()).quiet());
    // Upstream Forwarding and Egress Control alone redirect nothing between two downstream ports.
    Node other;
    other.config("0000:17:00.0", PciConfigSpace().acs(0x0010).bytes());
    other.config("0000:17:01.0", PciConfigSpace().acs(0x0020).bytes());
    EXPECT_TRUE(run_rule("hw.pcie-acs-p2p", other.context()).quiet());
}

TEST(HwPcieAcsP2p, QuietInAVmWhereAcsMustStayOn) {
    Node node;
    node.config("0000:17:00.0", PciConfigSpace().acs(kAcsRedirect).bytes());
    node.config("0000:17:01.0", PciConfigSpace().acs(kAcsRedirect).bytes());
    EXPECT_TRUE(run_rule("hw.pcie-acs-p2p", node.context("kvm")).quiet());
    EXPECT_TRUE(
        run_rule("hw.pcie-acs-p2p", node.context(), profile_from_yaml("name: vm\nnode: {virtual_machine: true}\n"))
            .quiet());
}

TEST(HwPcieAcsP2p, UnknownWhenConfigSpaceWasReadWithoutRoot) {
    Node node;
    node.config("0000:17:00.0", PciConfigSpace().acs(kAcsRedirect).bytes(64));
    node.config("0000:17:01.0", PciConfigSpace().acs(kAcsRedirect).bytes(64));
    EXPECT_TRUE(undecided_because(run_rule("hw.pcie-acs-p2p", node.context()), "hw.pcie-acs-p2p", "needs root"));
}

TEST(HwPcieAcsP2p, UnknownWhenNotRead) {
    LaunchContext ctx = launch_from_yaml("node: {virtualization: none}\n");
    ctx.topology = Fact<NodeTopology>::known(switch_topology(), "test topology");
    ctx.node.pci_capabilities = Fact<std::map<std::string, PciCapabilities>>::unknown("not read in this test");
    EXPECT_TRUE(undecided_because(run_rule("hw.pcie-acs-p2p", ctx), "hw.pcie-acs-p2p", "not read in this test"));
}

// --- virt.ats-off ---------------------------------------------------------

const char* kAtsProfile = "name: vm-gdr\nnode: {virtual_machine: true}\nvirtualization: {require_nic_ats: true}\n";

TEST(VirtAtsOff, BlocksANicWithAtsDisabled) {
    Node node;
    node.config("0000:19:00.0", PciConfigSpace().aer().ats(0x0000).bytes());
    auto result = run_rule("virt.ats-off", node.context("kvm"), profile_from_yaml(kAtsProfile));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.finding().action, Action::block);
    EXPECT_TRUE(mentions(result.finding().message, "mlx5_0 0000:19:00.0 (ATS present, Enable clear)"));
    EXPECT_TRUE(mentions(manual_steps(result.finding())[0], "ATS_ENABLED=true"));
}

TEST(VirtAtsOff, ANicWithoutTheCapabilityCountsAsOff) {
    Node node;
    node.config("0000:19:00.0", PciConfigSpace().aer().bytes());
    auto result = run_rule("virt.ats-off", node.context("kvm"), profile_from_yaml(kAtsProfile));
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message, "no ATS capability exposed to the VM"));
}

TEST(VirtAtsOff, QuietWithAtsEnabledOnBareMetalOrWithoutTheKnob) {
    Node enabled;
    enabled.config("0000:19:00.0", PciConfigSpace().ats(0x8000).bytes());
    EXPECT_TRUE(run_rule("virt.ats-off", enabled.context("kvm"), profile_from_yaml(kAtsProfile)).quiet());
    Node off;
    off.config("0000:19:00.0", PciConfigSpace().ats(0x0000).bytes());
    EXPECT_TRUE(run_rule("virt.ats-off", off.context("none"), profile_from_yaml(kAtsProfile)).quiet());
    EXPECT_TRUE(run_rule("virt.ats-off", off.context("kvm")).quiet());
}

TEST(VirtAtsOff, UnknownWithoutRootOrVirtualization) {
    Node node;
    node.config("0000:19:00.0", PciConfigSpace().ats(0x0000).bytes(64));
    EXPECT_TRUE(undecided_because(run_rule("virt.ats-off", node.context("kvm"), profile_from_yaml(kAtsProfile)),
                                  "virt.ats-off", "needs root"));
    LaunchContext ctx = node.context("kvm");
    ctx.node.virtualization = Fact<std::string>::unknown("no DMI in this test");
    EXPECT_TRUE(undecided_because(run_rule("virt.ats-off", ctx, profile_from_yaml(kAtsProfile)), "virt.ats-off",
                                  "no DMI in this test"));
}

}  // namespace
}  // namespace launchguard
