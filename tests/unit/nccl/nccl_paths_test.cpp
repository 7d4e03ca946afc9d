// The path model against values derived by hand from NCCL 2.30's source
// (src/graph/paths.cc, topo.cc); each test names the function that decides it.
#include "nccl/nccl_paths.h"

#include <gtest/gtest.h>

#include <string>

#include "unit/nccl/path_model_support.h"

namespace launchguard::nccl {
namespace {

using namespace path_testing;  // path_model_support.h

// ncclTopoSetPaths: GPU -> switch -> NIC is two PCI links off one switch:
// PIX; ncclTopoCheckGdr: PIX <= the 2.30 default level P2C, GDR on.
TEST(NcclPaths, GpuBesideItsNicIsPixWithGdr) {
    auto m = model_of(own_fixture("two-socket-nvswitch.xml"));
    ASSERT_TRUE(m.built) << m.error;
    const auto& g = gpu(m, "0000:1b:00.0");
    EXPECT_EQ(g.nics, std::vector<std::string>{"0000:1c:00.0"});
    EXPECT_EQ(g.nic, "0000:1c:00.0");
    ASSERT_TRUE(g.path);
    EXPECT_EQ(*g.path, Path::pix);
    EXPECT_EQ(g.gdr, std::optional<bool>(true));
    EXPECT_EQ(m.gdr_level, Path::p2c);
}

// ncclTopoComputePaths, PXN block: GPU 9b's own NIC a0 is PHB (through its
// CPU); peer 1b reaches NIC 1c at PIX with GDR and joins 9b over NVLink, and
// 9b's path type (PHB) is beyond PXN: its path to 1c becomes PXN at the same
// bandwidth, which ncclTopoGetLocal then prefers (equal bw, PXN < PHB).
// ncclTopoCheckGdr uses the proxy's PIX distance: GDR on.
TEST(NcclPaths, RemoteSocketGpuUsesPxnThroughNvlinkPeer) {
    auto m = model_of(own_fixture("two-socket-nvswitch.xml"));
    const auto& g = gpu(m, "0000:9b:00.0");
    EXPECT_EQ(g.nic, "0000:1c:00.0");
    ASSERT_TRUE(g.path);
    EXPECT_EQ(*g.path, Path::pxn);
    EXPECT_EQ(g.pxn_via, "0000:1b:00.0");
    EXPECT_EQ(g.gdr, std::optional<bool>(true));
}

// ncclPxnDisable: with NCCL_PXN_DISABLE=1 the PXN step is skipped; 9b keeps
// NIC a0 at PHB, and PHB > P2C refuses GDR in ncclTopoCheckGdr.
TEST(NcclPaths, PxnDisabledLeavesPhbWithoutGdr) {
    auto m = model_of(own_fixture("two-socket-nvswitch.xml"), {{"NCCL_PXN_DISABLE", "1"}});
    const auto& g = gpu(m, "0000:9b:00.0");
    EXPECT_EQ(g.nic, "0000:a0:00.0");
    ASSERT_TRUE(g.path);
    EXPECT_EQ(*g.path, Path::phb);
    EXPECT_EQ(g.gdr, std::optional<bool>(false));
    EXPECT_EQ(g.gdr_cause, "slot");
}

// ncclGetLevel with NCCL_NET_GDR_LEVEL=LOC: PIX > LOC, GDR off, blamed on the setting.
TEST(NcclPaths, GdrLevelLocTurnsGdrOff) {
    auto m = model_of(own_fixture("two-socket-nvswitch.xml"), {{"NCCL_NET_GDR_LEVEL", "LOC"}});
    const auto& g = gpu(m, "0000:1b:00.0");
    EXPECT_EQ(g.gdr, std::optional<bool>(false));
    EXPECT_EQ(g.gdr_cause, "setting NCCL_NET_GDR_LEVEL");
    EXPECT_EQ(m.gdr_level, Path::loc);
}

// Old numeric levels (levelsOldToNew): 3 is PHB, which lets 9b's PHB NIC use GDR.
TEST(NcclPaths, OldNumericGdrLevelMapsToPhb) {
    auto m = model_of(own_fixture("two-socket-nvswitch.xml"), {{"NCCL_NET_GDR_LEVEL", "3"}, {"NCCL_PXN_DISABLE", "1"}});
    EXPECT_EQ(m.gdr_level, Path::phb);
    EXPECT_EQ(gpu(m, "0000:9b:00.0").gdr, std::optional<bool>(true));
}

// ncclTopoSetPaths: GPU -> NVSwitch -> GPU is NVL; ncclTopoCheckP2p: NVL <= PXB, P2P on.
TEST(NcclPaths, NvswitchPairsAreNvlWithP2p) {
    auto m = model_of(own_fixture("two-socket-nvswitch.xml"));
    const auto& p = pair(m, "0000:1b:00.0", "0000:9d:00.0");
    EXPECT_EQ(p.path, std::optional<Path>(Path::nvl));
    EXPECT_EQ(p.p2p, std::optional<bool>(true));
    EXPECT_EQ(m.pairs.size(), 6U);
}

// ncclGetLevel("NCCL_P2P_DISABLE"): 1 means level LOC, so even NVL is too far.
TEST(NcclPaths, P2pDisableRefusesNvlinkPairs) {
    auto m = model_of(own_fixture("two-socket-nvswitch.xml"), {{"NCCL_P2P_DISABLE", "1"}});
    const auto& p = pair(m, "0000:1b:00.0", "0000:1d:00.0");
    EXPECT_EQ(p.path, std::optional<Path>(Path::nvl));
    EXPECT_EQ(p.p2p, std::optional<bool>(false));
    EXPECT_EQ(m.p2p_level, Path::loc);
}

// NCCL_P2P_LEVEL=PIX without NVLink: the cross-socket pair (SYS) is refused,
// the same-switch pair (PIX) kept.
TEST(NcclPaths, P2pLevelComparesPciPaths) {
    std::string xml = own_fixture("two-socket-nvswitch.xml");
    for (auto pos = xml.find("<nvlink"); pos != std::string::npos; pos = xml.find("<nvlink")) {
        xml.erase(pos, xml.find("/>", pos) + 2 - pos);
    }
    auto m = model_of(xml, {{"NCCL_P2P_LEVEL", "PIX"}});
    EXPECT_EQ(pair(m, "0000:1b:00.0", "0000:1d:00.0").path, std::optional<Path>(Path::pix));
    EXPECT_EQ(pair(m, "0000:1b:00.0", "0000:1d:00.0").p2p, std::optional<bool>(true));
    EXPECT_EQ(pair(m, "0000:1b:00.0", "0000:9b:00.0").path, std::optional<Path>(Path::sys));
    EXPECT_EQ(pair(m, "0000:1b:00.0", "0000:9b:00.0").p2p, std::optional<bool>(false));
}

// <net gdr="0"> (ncclTopoAddNet reads it, default 0): ncclTopoCheckGdr stops at once.
TEST(NcclPaths, NicWithoutGdrSupportRefuses) {
    std::string xml = own_fixture("two-socket-nvswitch.xml");
    xml.replace(xml.find("gdr=\"1\"/>"), 9, "gdr=\"0\"/>");
    auto m = model_of(xml);
    const auto& g = gpu(m, "0000:1b:00.0");
    EXPECT_EQ(g.gdr, std::optional<bool>(false));
    EXPECT_EQ(g.gdr_cause, "plugin");
}

// ncclTopoComputePaths P2C step: the GPU reaches its CPU over C2C and the NIC
// hangs off that CPU (PHB): mergePathType gives P2C, within the 2.30 default.
TEST(NcclPaths, GraceNicOnCpuIsP2cWithGdr) {
    auto m = model_of(own_fixture("grace-c2c.xml"));
    ASSERT_TRUE(m.built) << m.error;
    const auto& g = gpu(m, "0000:01:00.0");
    ASSERT_TRUE(g.path);
    EXPECT_EQ(*g.path, Path::p2c);
    EXPECT_EQ(g.gdr, std::optional<bool>(true));
    EXPECT_EQ(g.gdr_mode, "default");
}

// NCCL_NET_GDR_C2C=0 drops the default level to PXB; P2C is beyond it.
TEST(NcclPaths, GraceGdrC2cOffRefuses) {
    auto m = model_of(own_fixture("grace-c2c.xml"), {{"NCCL_NET_GDR_C2C", "0"}});
    const auto& g = gpu(m, "0000:01:00.0");
    EXPECT_EQ(g.gdr, std::optional<bool>(false));
    EXPECT_EQ(g.gdr_cause, "setting NCCL_NET_GDR_C2C");
}

// Release differences: before 2.27 there is no P2C and NCCL_NET_GDR_C2C
// defaults to 0 (PHB, off); in 2.27-2.29.1 a P2C NIC counts as C2C inside
// ncclTopoCheckGdr, so NCCL_NET_GDR_LEVEL=PXB still allows it, where 2.30 refuses.
TEST(NcclPaths, GraceVerdictFollowsTheNcclRelease) {
    auto old = model_of(own_fixture("grace-c2c.xml"), {}, Version{2, 26, 2});
    EXPECT_EQ(gpu(old, "0000:01:00.0").path, std::optional<Path>(Path::phb));
    EXPECT_EQ(gpu(old, "0000:01:00.0").gdr, std::optional<bool>(false));
    auto mid = model_of(own_fixture("grace-c2c.xml"), {{"NCCL_NET_GDR_LEVEL", "PXB"}}, Version{2, 28, 3});
    EXPECT_EQ(gpu(mid, "0000:01:00.0").gdr, std::optional<bool>(true));
    auto now = model_of(own_fixture("grace-c2c.xml"), {{"NCCL_NET_GDR_LEVEL", "PXB"}});
    EXPECT_EQ(gpu(now, "0000:01:00.0").gdr, std::optional<bool>(false));
}

// A skeleton (no <gpu>, no <nic>): the PCI tree decides path and NIC; the
// driver and plugin decide GDR support and NVLinks, which stay unknown.
TEST(NcclPaths, AzureNdv4SkeletonPairsEachGpuWithItsSwitchNic) {
    std::string xml = shared_fixture("ndv4-topo.xml");
    if (xml.empty()) GTEST_SKIP() << "shared fixture nccl-topo/ndv4-topo.xml not present";
    auto m = model_of(xml);
    ASSERT_TRUE(m.built) << m.error;
    EXPECT_EQ(m.gpus.size(), 8U);
    EXPECT_EQ(m.nics.size(), 8U);
    const auto& g3 = gpu(m, "0003:00:00.0");
    EXPECT_EQ(g3.nics, (std::vector<std::string>{"0103:00:00.0", "0104:00:00.0"}));
    // ncclTopoGetLocalNetType: dev 2 % 2 GPUs = 0, mirrored over 2 NICs -> first.
    EXPECT_EQ(g3.nic, "0103:00:00.0");
    EXPECT_EQ(gpu(m, "0004:00:00.0").nic, "0104:00:00.0");
    EXPECT_EQ(g3.path, std::optional<Path>(Path::pix));
    EXPECT_FALSE(g3.gdr.has_value());
    EXPECT_FALSE(g3.unknown.empty());
    const auto& same_switch = pair(m, "0003:00:00.0", "0004:00:00.0");
    EXPECT_FALSE(same_switch.path.has_value());
    EXPECT_EQ(same_switch.pci_path, std::optional<Path>(Path::pix));
    EXPECT_EQ(same_switch.p2p, std::optional<bool>(true));
    const auto& across = pair(m, "0001:00:00.0", "0003:00:00.0");
    EXPECT_EQ(across.pci_path, std::optional<Path>(Path::sys));
    EXPECT_FALSE(across.p2p.has_value());
}

// Moving NIC 0103 under the other socket's switch leaves GPUs 0003 and 0004
// one NIC (0104), which both use.
TEST(NcclPaths, NicMovedToOtherSocketSharesTheRemainingNic) {
    std::string xml = shared_fixture("ndv4-topo.xml");
    if (xml.empty()) GTEST_SKIP() << "shared fixture nccl-topo/ndv4-topo.xml not present";
    auto start = xml.find("<pci busid=\"0103:00:00.0\"");
    auto end = xml.find('\n', start);
    std::string line = xml.substr(start, end - start);
    xml.erase(start, end - start);
    xml.insert(xml.find("<pci busid=\"0101:00:00.0\""), line + "\n      ");
    auto m = model_of(xml);
    EXPECT_EQ(gpu(m, "0003:00:00.0").nic, "0104:00:00.0");
    EXPECT_EQ(gpu(m, "0004:00:00.0").nic, "0104:00:00.0");
}

// A skeleton whose NIC sits on a root port (PHB from the GPU's switch):
// ncclTopoCheckGdr refuses PHB, but the PXN step of ncclTopoComputePaths
// could relay through an NVLink peer the driver adds, so the verdict is
// unknown; with NCCL_PXN_DISABLE=1 it is decided.
TEST(NcclPaths, SkeletonNicOnRootPortIsUnknownUnlessPxnIsOff) {
    const std::string xml =
        "<system version=\"1\">\n"
        "<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\">\n"
        "<pci busid=\"0000:10:00.0\" class=\"0x060400\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">\n"
        "<pci busid=\"0000:11:00.0\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\"/>\n"
        "</pci>\n"
        "<pci busid=\"0000:20:00.0\" class=\"0x020700\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\"/>\n"
        "</cpu>\n"
        "</system>\n";
    auto open = model_of(xml);
    EXPECT_EQ(gpu(open, "0000:11:00.0").path, std::optional<Path>(Path::phb));
    EXPECT_FALSE(gpu(open, "0000:11:00.0").gdr.has_value());
    auto pxn_off = model_of(xml, {{"NCCL_PXN_DISABLE", "1"}});
    EXPECT_EQ(gpu(pxn_off, "0000:11:00.0").gdr, std::optional<bool>(false));
}

TEST(NcclPaths, RejectedFileHasNoModel) {
    auto m = model_of("<system version=\"2\"><cpu numaid=\"0\"/></system>");
    EXPECT_FALSE(m.built);
    EXPECT_NE(m.error.find("wrong version"), std::string::npos);
}

TEST(NcclPaths, MissingClassFailsLikeNccl) {
    auto m = model_of(
        "<system version=\"1\">\n<cpu numaid=\"0\" arch=\"x86_64\">\n<pci "
        "busid=\"0000:01:00.0\"/>\n</cpu>\n</system>\n");
    EXPECT_FALSE(m.built);
    EXPECT_NE(m.error.find("Attribute class of node pci not found"), std::string::npos);
    EXPECT_NE(m.error.find("line 3"), std::string::npos);
}

// ncclGetLevel: unknown names are ignored (the default stays).
TEST(NcclPaths, ParseLevel) {
    EXPECT_EQ(parse_level("PHB"), std::optional<Path>(Path::phb));
    EXPECT_EQ(parse_level("1"), std::optional<Path>(Path::pix));
    EXPECT_EQ(parse_level("9"), std::optional<Path>(Path::sys));
    EXPECT_FALSE(parse_level("phb").has_value());
}

}  // namespace
}  // namespace launchguard::nccl
