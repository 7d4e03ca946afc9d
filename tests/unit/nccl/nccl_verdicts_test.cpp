// NCCL's verdicts under the environment variables and releases that change
// them, derived by hand from NVIDIA/nccl (tag v2.30.7-1 unless a test names
// another; src/graph/paths.cc and topo.cc). Each test names the function
// that decides it.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "nccl/nccl_paths.h"
#include "support/text.h"
#include "unit/nccl/path_model_support.h"

namespace launchguard::nccl {
namespace {

using namespace path_testing;  // path_model_support.h
using testing::replace_all;

const std::string kTwoSocket = "two-socket-nvswitch.xml";
const std::string kGpu1b = "0000:1b:00.0";
const std::string kGpu9b = "0000:9b:00.0";
const Version k2_29_7{2, 29, 7};
const Version k2_30_4{2, 30, 4};

// ---- NCCL_NET_GDR_LEVEL (ncclGetLevel, then ncclTopoCheckGdr: distance > level refuses)

// PIX: 1b reaches NIC 1c at PIX (PIX <= PIX, on); 9b relays through 1b
// (PXN step of ncclTopoComputePaths: 1b's send GDR is on at PIX) and
// ncclTopoCheckGdr judges the proxy's PIX: on.
TEST(NcclVerdicts, GdrLevelPixKeepsPixAndPxnGpus) {
    auto m = model_of(own_fixture(kTwoSocket), {{"NCCL_NET_GDR_LEVEL", "PIX"}});
    EXPECT_EQ(m.gdr_level, Path::pix);
    EXPECT_EQ(gpu(m, kGpu1b).gdr, std::optional<bool>(true));
    EXPECT_EQ(gpu(m, kGpu9b).path, std::optional<Path>(Path::pxn));
    EXPECT_EQ(gpu(m, kGpu9b).gdr, std::optional<bool>(true));
}

// LOC: 1b's PIX is beyond LOC, so the GDR step of ncclTopoComputePaths routes
// 1b<->1c through CPU 0 (PHB). When 9b's turn comes, 1b (ncclTopoGetLocalGpu
// of NIC 1c) reaches 1c at PHB, beyond the PXN type P2C: no PXN, and 9b keeps
// its own NIC a0 on the root port (PHB), refused as well.
TEST(NcclVerdicts, GdrLevelLocRefusesEveryGpuAndStopsPxn) {
    auto m = model_of(own_fixture(kTwoSocket), {{"NCCL_NET_GDR_LEVEL", "LOC"}});
    EXPECT_EQ(m.gdr_level, Path::loc);
    const auto& g1b = gpu(m, kGpu1b);
    EXPECT_EQ(g1b.path, std::optional<Path>(Path::pix));
    EXPECT_EQ(g1b.nccl_path, std::optional<Path>(Path::phb));
    EXPECT_EQ(g1b.gdr, std::optional<bool>(false));
    const auto& g9b = gpu(m, kGpu9b);
    EXPECT_EQ(g9b.nic, "0000:a0:00.0");
    EXPECT_EQ(g9b.path, std::optional<Path>(Path::phb));
    EXPECT_TRUE(g9b.pxn_via.empty());
    EXPECT_EQ(g9b.gdr, std::optional<bool>(false));
    EXPECT_EQ(g9b.gdr_cause, "setting NCCL_NET_GDR_LEVEL");
}

// PHB with PXN off: 9b's root-port NIC a0 (PHB <= PHB) gets GDR.
TEST(NcclVerdicts, GdrLevelPhbAllowsTheRootPortNic) {
    auto m = model_of(own_fixture(kTwoSocket), {{"NCCL_NET_GDR_LEVEL", "PHB"}, {"NCCL_PXN_DISABLE", "1"}});
    EXPECT_EQ(m.gdr_level, Path::phb);
    const auto& g = gpu(m, kGpu9b);
    EXPECT_EQ(g.nic, "0000:a0:00.0");
    EXPECT_EQ(g.path, std::optional<Path>(Path::phb));
    EXPECT_EQ(g.gdr, std::optional<bool>(true));
}

// The blame: a GPU refused GDR is blamed on NCCL_NET_GDR_LEVEL only when the
// model without it gives GDR. With PIX and PXN off, 9b's root-port NIC (PHB)
// is beyond the default P2C as well: its slot. Under LOC, 9b would get GDR
// through PXN without the setting: the setting.
TEST(NcclVerdicts, GdrRefusalIsBlamedOnASettingOnlyWhenUnsettingHelps) {
    auto pix = model_of(own_fixture(kTwoSocket), {{"NCCL_NET_GDR_LEVEL", "PIX"}, {"NCCL_PXN_DISABLE", "1"}});
    EXPECT_EQ(gpu(pix, kGpu9b).gdr, std::optional<bool>(false));
    EXPECT_EQ(gpu(pix, kGpu9b).gdr_cause, "slot");
    EXPECT_EQ(gpu(pix, kGpu1b).gdr, std::optional<bool>(true));
    auto loc = model_of(own_fixture(kTwoSocket), {{"NCCL_NET_GDR_LEVEL", "LOC"}});
    EXPECT_EQ(gpu(loc, kGpu9b).gdr_cause, "setting NCCL_NET_GDR_LEVEL");
    // 2.26 defaults NCCL_NET_GDR_C2C to 0: no variable to unset, the slot.
    auto grace = model_of(own_fixture("grace-c2c.xml"), {}, Version{2, 26, 6});
    EXPECT_EQ(gpu(grace, "0000:01:00.0").gdr, std::optional<bool>(false));
    EXPECT_EQ(gpu(grace, "0000:01:00.0").gdr_cause, "slot");
}

// The numbers of levelsOldToNew: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and above SYS;
// names are matched exactly (strcmp), and P2C is a name only from 2.27.
TEST(NcclVerdicts, GdrLevelNumbersAndNames) {
    EXPECT_EQ(model_of(own_fixture(kTwoSocket), {{"NCCL_NET_GDR_LEVEL", "0"}}).gdr_level, Path::loc);
    EXPECT_EQ(model_of(own_fixture(kTwoSocket), {{"NCCL_NET_GDR_LEVEL", "2"}}).gdr_level, Path::pxb);
    EXPECT_EQ(model_of(own_fixture(kTwoSocket), {{"NCCL_NET_GDR_LEVEL", "7"}}).gdr_level, Path::sys);
    EXPECT_EQ(model_of(own_fixture(kTwoSocket), {{"NCCL_NET_GDR_LEVEL", "SYS"}}).gdr_level, Path::sys);
    auto lower = model_of(own_fixture(kTwoSocket), {{"NCCL_NET_GDR_LEVEL", "phb"}});
    EXPECT_EQ(lower.gdr_level, Path::p2c);
    EXPECT_FALSE(lower.notes.empty());
    EXPECT_EQ(parse_level("P2C"), std::optional<Path>(Path::p2c));
    EXPECT_FALSE(parse_level("P2C", Version{2, 26, 6}).has_value());
    EXPECT_FALSE(parse_level("C2C", Version{2, 25, 1}).has_value());
    EXPECT_EQ(parse_level("C2C", Version{2, 26, 2}), std::optional<Path>(Path::c2c));
}

// ---- NCCL_NET_GDR_READ (ncclTopoCheckGdr, read=1 only)

// 0 refuses sends over GDR; receives (read=0) keep it.
TEST(NcclVerdicts, GdrReadZeroRefusesSendsOnly) {
    auto m = model_of(own_fixture("verdict-shared-nics.xml"), {{"NCCL_NET_GDR_READ", "0"}});
    const auto& g = gpu(m, "0000:41:00.0");
    EXPECT_EQ(g.gdr, std::optional<bool>(true));
    EXPECT_EQ(g.gdr_read, std::optional<bool>(false));
}

// Default (-2): a pre-Ampere GPU (sm < 80) without an NVLink peer does not
// read over GDR; NCCL_NET_GDR_READ=1 turns it on. Ampere reads by default.
TEST(NcclVerdicts, GdrReadDefaultFollowsTheGpuGeneration) {
    const std::string volta = replace_all(own_fixture("verdict-shared-nics.xml"), "sm=\"80\"", "sm=\"70\"");
    EXPECT_EQ(gpu(model_of(volta), "0000:41:00.0").gdr_read, std::optional<bool>(false));
    EXPECT_EQ(gpu(model_of(volta), "0000:41:00.0").gdr, std::optional<bool>(true));
    EXPECT_EQ(gpu(model_of(volta, {{"NCCL_NET_GDR_READ", "1"}}), "0000:41:00.0").gdr_read, std::optional<bool>(true));
    EXPECT_EQ(gpu(model_of(own_fixture("verdict-shared-nics.xml")), "0000:41:00.0").gdr_read,
              std::optional<bool>(true));
}

// 2.30.3 added to the PXN step that the relay's own send GDR
// (ncclTopoCheckGdr read=1) be on. With NCCL_NET_GDR_READ=0 it is off, so
// 2.30.7 gives 9b no PXN (its own NIC a0 at PHB, GDR off), where 2.29.7
// still relays through 1b (PXN, the proxy's PIX within the P2C default).
TEST(NcclVerdicts, GdrReadZeroStopsPxnFrom2303) {
    auto now = model_of(own_fixture(kTwoSocket), {{"NCCL_NET_GDR_READ", "0"}});
    EXPECT_EQ(gpu(now, kGpu9b).nic, "0000:a0:00.0");
    EXPECT_EQ(gpu(now, kGpu9b).path, std::optional<Path>(Path::phb));
    EXPECT_EQ(gpu(now, kGpu9b).gdr, std::optional<bool>(false));
    auto before = model_of(own_fixture(kTwoSocket), {{"NCCL_NET_GDR_READ", "0"}}, k2_29_7);
    EXPECT_EQ(gpu(before, kGpu9b).nic, "0000:1c:00.0");
    EXPECT_EQ(gpu(before, kGpu9b).path, std::optional<Path>(Path::pxn));
    EXPECT_EQ(gpu(before, kGpu9b).gdr, std::optional<bool>(true));
    EXPECT_EQ(gpu(before, kGpu9b).gdr_read, std::optional<bool>(false));
}

// ---- NCCL_PXN_DISABLE (ncclPxnDisable)

// Both GPUs of socket 1 keep their root-port NIC a0 and lose GDR; with PXN on
// both use 1c through 1b (ncclTopoGetLocalGpu of 1c is 1b, dev 0).
TEST(NcclVerdicts, PxnDisableMovesSocketOneToItsRootPortNic) {
    auto on = model_of(own_fixture(kTwoSocket));
    for (const std::string busid : {"0000:9b:00.0", "0000:9d:00.0"}) {
        EXPECT_EQ(gpu(on, busid).nic, "0000:1c:00.0") << busid;
        EXPECT_EQ(gpu(on, busid).pxn_via, kGpu1b) << busid;
    }
    auto off = model_of(own_fixture(kTwoSocket), {{"NCCL_PXN_DISABLE", "1"}});
    EXPECT_TRUE(off.pxn_disabled);
    for (const std::string busid : {"0000:9b:00.0", "0000:9d:00.0"}) {
        EXPECT_EQ(gpu(off, busid).nic, "0000:a0:00.0") << busid;
        EXPECT_EQ(gpu(off, busid).gdr, std::optional<bool>(false)) << busid;
    }
    // Only 1 disables it (NCCL_PARAM read as a number, compared with 1).
    EXPECT_FALSE(model_of(own_fixture(kTwoSocket), {{"NCCL_PXN_DISABLE", "2"}}).pxn_disabled);
}

// ---- NCCL_P2P_LEVEL / NCCL_P2P_DISABLE (ncclGetUserP2pLevel, ncclTopoCheckP2p)

TEST(NcclVerdicts, P2pLevelNamesAndNumbers) {
    const std::string a = kGpu1b, b = "0000:9d:00.0";  // NVL through the NVSwitch
    auto nvl = model_of(own_fixture(kTwoSocket), {{"NCCL_P2P_LEVEL", "NVL"}});
    EXPECT_EQ(pair(nvl, a, b).p2p, std::optional<bool>(true));
    auto loc = model_of(own_fixture(kTwoSocket), {{"NCCL_P2P_LEVEL", "0"}});
    EXPECT_EQ(loc.p2p_level, Path::loc);
    EXPECT_EQ(pair(loc, a, b).p2p, std::optional<bool>(false));
    // NCCL_P2P_DISABLE is read first and only 1 counts; otherwise the level applies.
    auto not_one = model_of(own_fixture(kTwoSocket), {{"NCCL_P2P_DISABLE", "0"}, {"NCCL_P2P_LEVEL", "LOC"}});
    EXPECT_EQ(not_one.p2p_level_source, "NCCL_P2P_LEVEL=LOC");
    auto both = model_of(own_fixture(kTwoSocket), {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_P2P_LEVEL", "SYS"}});
    EXPECT_EQ(both.p2p_level, Path::loc);
    EXPECT_EQ(pair(both, a, b).p2p, std::optional<bool>(false));
    // P2P off routes the pair through the receiving GPU's CPU (addInterStep):
    // NVSwitch pair 1b-9d becomes 1b -> CPU 1 ... SYS.
    EXPECT_EQ(pair(both, a, b).path, std::optional<Path>(Path::nvl));
    EXPECT_EQ(pair(both, a, b).nccl_path, std::optional<Path>(Path::sys));
}

// Without NVLink the PCI paths decide: SYS across sockets passes only at P2P level SYS.
TEST(NcclVerdicts, P2pLevelSysOpensCrossSocketPciPairs) {
    std::string xml = own_fixture(kTwoSocket);
    for (auto pos = xml.find("<nvlink"); pos != std::string::npos; pos = xml.find("<nvlink")) {
        xml.erase(pos, xml.find("/>", pos) + 2 - pos);
    }
    EXPECT_EQ(pair(model_of(xml), kGpu1b, kGpu9b).p2p, std::optional<bool>(false));
    auto sys = model_of(xml, {{"NCCL_P2P_LEVEL", "SYS"}});
    EXPECT_EQ(pair(sys, kGpu1b, kGpu9b).path, std::optional<Path>(Path::sys));
    EXPECT_EQ(pair(sys, kGpu1b, kGpu9b).p2p, std::optional<bool>(true));
    EXPECT_EQ(pair(model_of(xml, {{"NCCL_P2P_LEVEL", "PHB"}}), kGpu1b, kGpu9b).p2p, std::optional<bool>(false));
}

// ncclTopoCheckP2p: on an AMD x86 CPU with at most two GPUs the default level is SYS.
TEST(NcclVerdicts, AmdPairDefaultsToSys) {
    const std::string two =
        "<system version=\"1\">\n"
        "<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\" familyid=\"25\" modelid=\"1\">\n"
        "<pci busid=\"0000:01:00.0\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">"
        "<gpu dev=\"0\" sm=\"80\" rank=\"0\" gdr=\"1\"/></pci>\n"
        "</cpu>\n"
        "<cpu numaid=\"1\" arch=\"x86_64\" vendor=\"AuthenticAMD\" familyid=\"25\" modelid=\"1\">\n"
        "<pci busid=\"0000:81:00.0\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">"
        "<gpu dev=\"1\" sm=\"80\" rank=\"1\" gdr=\"1\"/></pci>\n"
        "</cpu>\n"
        "</system>\n";
    auto m = model_of(two);
    ASSERT_TRUE(m.built) << m.error;
    EXPECT_EQ(m.p2p_level, Path::sys);
    EXPECT_EQ(pair(m, "0000:01:00.0", "0000:81:00.0").path, std::optional<Path>(Path::sys));
    EXPECT_EQ(pair(m, "0000:01:00.0", "0000:81:00.0").p2p, std::optional<bool>(true));
    const std::string intel = replace_all(two, "AuthenticAMD", "GenuineIntel");
    EXPECT_EQ(pair(model_of(intel), "0000:01:00.0", "0000:81:00.0").p2p, std::optional<bool>(false));
}

// ncclTopoCheckNet, asked by p2pCanConnect and shmCanConnect
// (verdict-cross-socket-nics.xml): two GPUs on two Sapphire Rapids sockets (QPI 22 GB/s), each with a NIC on its own
// switch (24 GB/s). P2P is off (SYS > PXB), and through the CPUs (22) is
// slower than either GPU's NIC (24): NCCL marks the pair NET. With
// NCCL_NET_DISABLE_INTRA=1, or a CPU link of 40 (Emerald Rapids), SHM.
TEST(NcclVerdicts, CrossSocketPairGoesThroughTheNetworkWhenThatIsFaster) {
    const std::string xml = own_fixture("verdict-cross-socket-nics.xml");
    auto m = model_of(xml);
    ASSERT_TRUE(m.built) << m.error;
    const auto& p = pair(m, "0000:11:00.0", "0000:91:00.0");
    EXPECT_EQ(p.path, std::optional<Path>(Path::sys));
    EXPECT_EQ(p.p2p, std::optional<bool>(false));
    EXPECT_EQ(p.transport, "NET");
    EXPECT_EQ(p.nccl_path, std::optional<Path>(Path::net));
    EXPECT_FALSE(m.notes.empty());
    EXPECT_EQ(pair(model_of(xml, {{"NCCL_NET_DISABLE_INTRA", "1"}}), "0000:11:00.0", "0000:91:00.0").transport, "SHM");
    const std::string emerald = replace_all(xml, "modelid=\"143\"", "modelid=\"207\"");
    EXPECT_EQ(pair(model_of(emerald), "0000:11:00.0", "0000:91:00.0").transport, "SHM");
    // P2P allowed at SYS: the network is still faster, and P2P (no intermediate GPU) gives way to it.
    EXPECT_EQ(pair(model_of(xml, {{"NCCL_P2P_LEVEL", "SYS"}}), "0000:11:00.0", "0000:91:00.0").transport, "NET");
}

// ---- NCCL_NVB_DISABLE and the path search (ncclTopoSetPaths)

// verdict-nvlink-chain.xml: GPUs 11 and 12 share a switch (PIX, 24 GB/s) and
// each has one NVLink (20 GB/s on sm 80) to GPU 21. From 2.30.7 the search
// keeps the best type first: 11-12 is NVB (through 21). NCCL_NVB_DISABLE=1
// forbids crossing 21: PIX. Before 2.30.7 the search keeps the first path of
// fewest hops unless a wider one comes: PIX (24 > 20) at two hops.
TEST(NcclVerdicts, NvbDependsOnNvbDisableAndTheRelease) {
    const std::string xml = own_fixture("verdict-nvlink-chain.xml");
    auto now = model_of(xml);
    ASSERT_TRUE(now.built) << now.error;
    EXPECT_EQ(pair(now, "0000:11:00.0", "0000:12:00.0").path, std::optional<Path>(Path::nvb));
    EXPECT_EQ(pair(now, "0000:11:00.0", "0000:21:00.0").path, std::optional<Path>(Path::nvl));
    auto no_nvb = model_of(xml, {{"NCCL_NVB_DISABLE", "1"}});
    EXPECT_EQ(pair(no_nvb, "0000:11:00.0", "0000:12:00.0").path, std::optional<Path>(Path::pix));
    auto before = model_of(xml, {}, k2_30_4);
    EXPECT_EQ(pair(before, "0000:11:00.0", "0000:12:00.0").path, std::optional<Path>(Path::pix));
    // NVB and PIX are both within the default P2P level PXB; NVL level refuses both.
    EXPECT_EQ(pair(now, "0000:11:00.0", "0000:12:00.0").p2p, std::optional<bool>(true));
    auto nvl_only = model_of(xml, {{"NCCL_P2P_LEVEL", "NVL"}});
    EXPECT_EQ(pair(nvl_only, "0000:11:00.0", "0000:12:00.0").p2p, std::optional<bool>(false));
}

// ---- The NIC each GPU uses (ncclTopoGetLocal, ncclTopoGetLocalNetType)

// verdict-shared-nics.xml: GPUs dev 2 (41) and dev 3 (46) share four NICs
// (42-45) behind one switch; GPUs dev 0 and 1 share NIC 12. 2.30.7 starts
// from gpu.dev % 2 local GPUs, mirrored over 4 NICs: dev 2 -> 0 -> 42,
// dev 3 -> 1 -> 2 -> 44. 2.30.4 and earlier mirror gpu.dev itself:
// dev 2 -> 1 -> 43, dev 3 -> 3 -> 45.
TEST(NcclVerdicts, SharedNicsFollowTheReleasesChannelPolicy) {
    const std::string xml = own_fixture("verdict-shared-nics.xml");
    auto now = model_of(xml);
    ASSERT_TRUE(now.built) << now.error;
    const std::vector<std::string> four{"0000:42:00.0", "0000:43:00.0", "0000:44:00.0", "0000:45:00.0"};
    EXPECT_EQ(gpu(now, "0000:41:00.0").nics, four);
    EXPECT_EQ(gpu(now, "0000:41:00.0").nic, "0000:42:00.0");
    EXPECT_EQ(gpu(now, "0000:46:00.0").nic, "0000:44:00.0");
    EXPECT_EQ(gpu(now, "0000:11:00.0").nic, "0000:12:00.0");
    EXPECT_EQ(gpu(now, "0000:13:00.0").nic, "0000:12:00.0");
    EXPECT_EQ(gpu(now, "0000:41:00.0").path, std::optional<Path>(Path::pix));
    EXPECT_EQ(gpu(now, "0000:41:00.0").gdr, std::optional<bool>(true));
    for (const Version& v : {k2_30_4, Version{2, 28, 3}, Version{2, 27, 7}}) {
        auto before = model_of(xml, {}, v);
        EXPECT_EQ(gpu(before, "0000:41:00.0").nic, "0000:43:00.0") << v.to_string();
        EXPECT_EQ(gpu(before, "0000:46:00.0").nic, "0000:45:00.0") << v.to_string();
    }
    // Pairs: same switch PIX (P2P on), across switches through the CPU PHB (off).
    EXPECT_EQ(pair(now, "0000:11:00.0", "0000:13:00.0").path, std::optional<Path>(Path::pix));
    EXPECT_EQ(pair(now, "0000:11:00.0", "0000:41:00.0").path, std::optional<Path>(Path::phb));
    EXPECT_EQ(pair(now, "0000:11:00.0", "0000:41:00.0").p2p, std::optional<bool>(false));
}

// A dual-port NIC (two <net> under one <nic>) is two NETs for NCCL: GPUs dev
// 0 and 1 spread over them (ncclTopoGetLocalNetType: 0 -> port 0, 1 -> port 1),
// and both name the one bus id, listed once among their local NICs.
TEST(NcclVerdicts, DualPortNicIsOneBusId) {
    const std::string xml = replace_all(own_fixture("verdict-shared-nics.xml"),
                                        "<net name=\"mlx5_0\" dev=\"0\" speed=\"200000\" port=\"1\" gdr=\"1\"/>",
                                        "<net name=\"mlx5_0\" dev=\"0\" speed=\"200000\" port=\"1\" gdr=\"1\"/>"
                                        "<net name=\"mlx5_0\" dev=\"5\" speed=\"200000\" port=\"2\" gdr=\"1\"/>");
    auto m = model_of(xml);
    ASSERT_TRUE(m.built) << m.error;
    EXPECT_EQ(gpu(m, "0000:11:00.0").nics, std::vector<std::string>{"0000:12:00.0"});
    EXPECT_EQ(gpu(m, "0000:13:00.0").nic, "0000:12:00.0");
    EXPECT_EQ(gpu(m, "0000:11:00.0").gdr, std::optional<bool>(true));
}

// ---- C2C across releases (ncclTopoCheckGdr, the P2C step of ncclTopoComputePaths)

// grace-c2c.xml: the GPU reaches its CPU over C2C and the NIC hangs off that CPU.
// 2.25 has no NCCL_NET_GDR_C2C: PHB > PXB, off even when set. 2.26 defaults
// it to 0; set to 1, PHB of a C2C GPU counts as C2C: on. 2.27.3 marks the
// NIC P2C and counts P2C as C2C: on; NCCL_NET_GDR_C2C=0 leaves P2C > PXB: off.
TEST(NcclVerdicts, GraceGdrAcrossReleases) {
    const std::string xml = own_fixture("grace-c2c.xml");
    const std::string busid = "0000:01:00.0";
    EXPECT_EQ(gpu(model_of(xml, {{"NCCL_NET_GDR_C2C", "1"}}, Version{2, 25, 1}), busid).gdr,
              std::optional<bool>(false));
    auto v226 = model_of(xml, {{"NCCL_NET_GDR_C2C", "1"}}, Version{2, 26, 6});
    EXPECT_EQ(gpu(v226, busid).path, std::optional<Path>(Path::phb));
    EXPECT_EQ(gpu(v226, busid).gdr, std::optional<bool>(true));
    EXPECT_EQ(gpu(v226, busid).gdr_mode, "default");
    auto v2273 = model_of(xml, {}, Version{2, 27, 3});
    EXPECT_EQ(gpu(v2273, busid).path, std::optional<Path>(Path::p2c));
    EXPECT_EQ(gpu(v2273, busid).gdr, std::optional<bool>(true));
    EXPECT_EQ(gpu(model_of(xml, {{"NCCL_NET_GDR_C2C", "0"}}, Version{2, 27, 3}), busid).gdr,
              std::optional<bool>(false));
    // From 2.29.2 the default level is P2C itself.
    auto v2292 = model_of(xml, {}, Version{2, 29, 2});
    EXPECT_EQ(v2292.gdr_level, Path::p2c);
    EXPECT_EQ(gpu(v2292, busid).gdr, std::optional<bool>(true));
    EXPECT_EQ(model_of(xml, {}, Version{2, 29, 1}).gdr_level, Path::pxb);
}

// addInterStep: from 2.27.5 (mergePathType) C2C to the CPU then PHB to the
// NIC is P2C; before, the worse type, PHB. Seen where GDR is refused to a NIC
// on the C2C GPU's own switch and NCCL reroutes the pair through the CPU.
TEST(NcclVerdicts, RerouteThroughTheCpuOfAC2cGpuFollowsTheRelease) {
    std::string xml = own_fixture("grace-c2c.xml");
    xml = replace_all(xml, "    <pci busid=\"0000:01:00.0\"",
                      "    <pci busid=\"0000:00:01.0\" class=\"0x060400\" link_speed=\"32.0 GT/s PCIe\" "
                      "link_width=\"16\">\n    <pci busid=\"0000:01:00.0\"");
    xml = replace_all(xml, "    </pci>\n  </cpu>", "    </pci>\n    </pci>\n  </cpu>");
    auto now = model_of(xml, {{"NCCL_NET_GDR_LEVEL", "LOC"}});
    ASSERT_TRUE(now.built) << now.error;
    EXPECT_EQ(gpu(now, "0000:01:00.0").path, std::optional<Path>(Path::pix));
    EXPECT_EQ(gpu(now, "0000:01:00.0").nccl_path, std::optional<Path>(Path::p2c));
    auto before = model_of(xml, {{"NCCL_NET_GDR_LEVEL", "LOC"}}, Version{2, 26, 6});
    EXPECT_EQ(gpu(before, "0000:01:00.0").nccl_path, std::optional<Path>(Path::phb));
}

// A release outside the modelled range gets the nearest modelled logic and says so.
TEST(NcclVerdicts, UnmodelledReleaseIsNamed) {
    EXPECT_TRUE(unmodelled_nccl_version(Version{2, 23, 4}).empty());
    EXPECT_TRUE(unmodelled_nccl_version(Version{2, 31, 0}).empty());
    EXPECT_FALSE(unmodelled_nccl_version(Version{2, 21, 5}).empty());
    EXPECT_FALSE(unmodelled_nccl_version(Version{3, 0, 0}).empty());
    auto m = model_of(own_fixture(kTwoSocket), {}, Version{2, 21, 5});
    ASSERT_TRUE(m.built);
    EXPECT_NE(m.nccl_version.find("2.23.0"), std::string::npos) << m.nccl_version;
    ASSERT_FALSE(m.notes.empty());
}

// ---- Public topology files (read at run time, skipped without them)

// The eight GPUs of a public file each have one local NIC at PIX: the NICs they use.
std::set<std::string> nics_of_one_pix_nic_each(const PathModel& m) {
    EXPECT_TRUE(m.built) << m.error;
    EXPECT_EQ(m.gpus.size(), 8U);
    std::set<std::string> used;
    for (const auto& g : m.gpus) {
        EXPECT_EQ(g.nics.size(), 1U) << g.busid;
        EXPECT_EQ(g.path, std::optional<Path>(Path::pix)) << g.busid;
        used.insert(g.nic);
    }
    return used;
}

// ndv5-topo.xml (Azure ND H100 v5) lists 8 GPUs and 8 NICs as a skeleton:
// every GPU has one NIC behind its own switch (PIX), GDR unknown (the file has
// no <gpu gdr>/<net gdr>); GDR level LOC decides it: off.
TEST(NcclVerdicts, AzureNdv5SkeletonGivesEachGpuOneNic) {
    const std::string xml = shared_fixture("ndv5-topo.xml");
    auto m = model_of(xml);
    EXPECT_EQ(nics_of_one_pix_nic_each(m).size(), 8U);
    for (const auto& g : m.gpus) EXPECT_FALSE(g.gdr.has_value()) << g.busid;
    auto loc = model_of(xml, {{"NCCL_NET_GDR_LEVEL", "LOC"}});
    for (const auto& g : loc.gpus) EXPECT_EQ(g.gdr, std::optional<bool>(false)) << g.busid;
}

// p4d-24xl-topo.xml (AWS p4d/p4de): each switch holds two GPUs and one EFA
// NIC. Both GPUs have that NIC as their only local NIC (PIX) and use it
// (ncclTopoGetLocalNetType: one local NIC, index 0), so four NICs serve eight
// GPUs; P2P within a switch is decided by PCI (PIX), across switches it
// waits on the NVLinks the driver adds.
TEST(NcclVerdicts, AwsP4dSkeletonPairsShareTheirSwitchNic) {
    const std::string xml = shared_fixture("p4d-24xl-topo.xml");
    auto m = model_of(xml);
    EXPECT_EQ(nics_of_one_pix_nic_each(m).size(), 4U);
    EXPECT_EQ(gpu(m, "0000:10:1c.0").nic, "0000:10:1b.0");
    EXPECT_EQ(gpu(m, "0000:10:1d.0").nic, "0000:10:1b.0");
    EXPECT_EQ(pair(m, "0000:10:1c.0", "0000:10:1d.0").p2p, std::optional<bool>(true));
    EXPECT_FALSE(pair(m, "0000:10:1c.0", "0000:90:1c.0").p2p.has_value());
}

// Settings on the public skeletons: NCCL_P2P_DISABLE=1 refuses every pair,
// NVLink or not (level LOC); NCCL_P2P_LEVEL=SYS admits even the SYS pairs of
// ndv4's four AMD NUMA nodes (eight GPUs: the AMD default stays PXB); a GDR
// level of PIX leaves the support question (unknown), LOC answers it (off).
TEST(NcclVerdicts, SettingsOnThePublicSkeletons) {
    const std::string p4d = shared_fixture("p4d-24xl-topo.xml");
    for (const auto& p : model_of(p4d, {{"NCCL_P2P_DISABLE", "1"}}).pairs)
        EXPECT_EQ(p.p2p, std::optional<bool>(false)) << p.a << " " << p.b;
    EXPECT_FALSE(gpu(model_of(p4d, {{"NCCL_NET_GDR_LEVEL", "PIX"}}), "0000:10:1c.0").gdr.has_value());
    EXPECT_EQ(gpu(model_of(p4d, {{"NCCL_NET_GDR_LEVEL", "LOC"}}), "0000:10:1c.0").gdr, std::optional<bool>(false));
    const std::string ndv4 = shared_fixture("ndv4-topo.xml");
    EXPECT_EQ(model_of(ndv4).p2p_level, Path::pxb);
    auto sys = model_of(ndv4, {{"NCCL_P2P_LEVEL", "SYS"}});
    EXPECT_EQ(pair(sys, "0001:00:00.0", "0003:00:00.0").pci_path, std::optional<Path>(Path::sys));
    EXPECT_EQ(pair(sys, "0001:00:00.0", "0003:00:00.0").p2p, std::optional<bool>(true));
}

}  // namespace
}  // namespace launchguard::nccl
