// How the topology XML becomes NCCL's graph (ncclTopoGetSystemFromXml and the
// functions it calls in NCCL 2.30's src/graph/topo.cc), checked through what
// it decides: each GPU's local NICs, its path and GDR verdict, and each GPU
// pair's path and P2P verdict. The expected values are derived by hand from
// NCCL's source; each names the function that decides it. The fixtures are
// described in tests/fixtures/nccl-paths/README.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <regex>
#include <stdexcept>
#include <string>

#include "context/topology.h"
#include "nccl/nccl_paths.h"
#include "nccl/node_paths.h"
#include "support/shared_fixtures.h"
#include "support/text.h"
#include "unit/nccl/path_model_support.h"

namespace launchguard::nccl {
namespace {

using path_testing::gpu;
using path_testing::pair;
using path_testing::path_to;
using testing::replace_all;

std::string fixture(const std::string& name) {
    std::string text = path_testing::own_fixture(name);
    if (text.empty()) throw std::runtime_error("fixture nccl-paths/" + name + " missing");
    return text;
}

PathModel built_model_of(const std::string& xml, std::map<std::string, std::string> env = {}) {
    PathSettings settings;
    settings.env = std::move(env);
    auto m = compute_paths(parse_topology_tree(xml), settings);
    if (!m.built) throw std::runtime_error("no model: " + m.error);
    return m;
}

std::string bus(int b) {
    char text[16];
    std::snprintf(text, sizeof text, "0000:%02x:00.0", b);
    return text;
}

void expect_all_pairs(const PathModel& m, Path path, bool p2p) {
    ASSERT_FALSE(m.pairs.empty());
    for (const auto& p : m.pairs) {
        EXPECT_EQ(p.path, std::optional<Path>(path)) << p.a << " " << p.b;
        EXPECT_EQ(p.p2p, std::optional<bool>(p2p)) << p.a << " " << p.b;
    }
}

// dgx-a100.xml: GPU i and NIC i sit on one sub switch of a Broadcom PEX Gen4
// pair; GPUs 2c, 2c+1 and NICs 2c, 2c+1 share a top switch.
constexpr int kA100Base[] = {0x00, 0x20, 0x80, 0xa0};
std::string a100_gpu(int i) { return bus(kA100Base[i / 2] + 7 + 8 * (i % 2)); }
std::string a100_nic(int i) { return bus(kA100Base[i / 2] + 0xc + 8 * (i % 2)); }

// ncclTopoFlattenBcmSwitches folds both sub switches into the top one, so the
// GPU reaches both NICs of its switch over two PCI links: PIX at min(Gen4 x16
// 24 GB/s, 200 Gb/s 25 GB/s) = 24 (ncclTopoSetPaths). ncclTopoGetLocal keeps
// both (same bandwidth, same type); ncclTopoGetLocalNetType gives GPU dev d
// the (d % 2)-th of them (mirrorBits over 2 NICs changes nothing), so GPU i
// uses NIC i. ncclTopoCheckGdr: PIX is within 2.30's default P2C, both ends
// report gdr="1". Every pair meets on the one NVS node ncclTopoAddNvLinks
// makes of the six NVSwitches: NVL, within the P2P level (ncclTopoCheckP2p).
TEST(NcclTopoGraph, DgxA100BroadcomGen4SwitchesAreFlattened) {
    auto m = built_model_of(fixture("dgx-a100.xml"));
    ASSERT_EQ(m.gpus.size(), 8U);
    ASSERT_EQ(m.nics.size(), 8U);
    for (int i = 0; i < 8; ++i) {
        const auto& g = gpu(m, a100_gpu(i));
        const int first = i & ~1;
        EXPECT_EQ(g.nics, (std::vector<std::string>{a100_nic(first), a100_nic(first + 1)})) << i;
        EXPECT_EQ(g.nic, a100_nic(i)) << i;
        EXPECT_EQ(g.path, std::optional<Path>(Path::pix)) << i;
        EXPECT_EQ(g.gdr, std::optional<bool>(true)) << i;
    }
    expect_all_pairs(m, Path::nvl, true);
}

// The same tree with the switches' vendor id changed: getBcmGen matches
// nothing, the sub switches stay, and GPU 0 reaches NIC 1 through two
// switches (PXB, ncclTopoSetPaths). ncclTopoGetLocal then keeps NIC 0 alone
// (same bandwidth, PIX before PXB).
TEST(NcclTopoGraph, OtherVendorsSwitchesAreNotFlattened) {
    auto m = built_model_of(replace_all(fixture("dgx-a100.xml"), "vendor=\"0x1000\"", "vendor=\"0x10b5\""));
    const auto& g0 = gpu(m, a100_gpu(0));
    EXPECT_EQ(g0.nics, std::vector<std::string>{a100_nic(0)});
    EXPECT_EQ(g0.nic, a100_nic(0));
    EXPECT_EQ(path_to(m, a100_gpu(0), a100_nic(1)), Path::pxb);
}

// ncclTopoComputePaths, PXN step: NIC 2's own GPU reaches it at PIX with GDR
// and is GPU 0's NVLink peer, while GPU 0's path is PHB (same socket) or SYS
// (other socket), both beyond PXN: GPU 0 goes through the peer, PXN. With
// NCCL_PXN_DISABLE=1 the PCI paths stay (PHB, SYS; ncclTopoCheckGdr refuses
// them but only paths below PHB are rerouted).
TEST(NcclTopoGraph, DgxA100FarNicsArePxnUnlessDisabled) {
    auto m = built_model_of(fixture("dgx-a100.xml"));
    EXPECT_EQ(path_to(m, a100_gpu(0), a100_nic(2)), Path::pxn);
    EXPECT_EQ(path_to(m, a100_gpu(0), a100_nic(4)), Path::pxn);
    auto off = built_model_of(fixture("dgx-a100.xml"), {{"NCCL_PXN_DISABLE", "1"}});
    EXPECT_EQ(path_to(off, a100_gpu(0), a100_nic(2)), Path::phb);
    EXPECT_EQ(path_to(off, a100_gpu(0), a100_nic(4)), Path::sys);
    // The local NICs (PIX, 24 GB/s) do not change.
    EXPECT_EQ(gpu(off, a100_gpu(0)).nic, a100_nic(0));
}

// ncclTopoCheckGdr compares the GPU-NIC distance (PIX) with the level:
// LOC refuses it, PIX and PHB allow it.
TEST(NcclTopoGraph, DgxA100GdrLevels) {
    EXPECT_EQ(gpu(built_model_of(fixture("dgx-a100.xml"), {{"NCCL_NET_GDR_LEVEL", "LOC"}}), a100_gpu(0)).gdr,
              std::optional<bool>(false));
    EXPECT_EQ(gpu(built_model_of(fixture("dgx-a100.xml"), {{"NCCL_NET_GDR_LEVEL", "PIX"}}), a100_gpu(0)).gdr,
              std::optional<bool>(true));
    EXPECT_EQ(gpu(built_model_of(fixture("dgx-a100.xml"), {{"NCCL_NET_GDR_LEVEL", "PHB"}}), a100_gpu(0)).gdr,
              std::optional<bool>(true));
}

// ncclTopoCheckP2p: NCCL_P2P_DISABLE=1 sets the level to LOC, beyond which
// NVL lies: P2P off for every pair.
TEST(NcclTopoGraph, DgxA100P2pDisabled) {
    auto m = built_model_of(fixture("dgx-a100.xml"), {{"NCCL_P2P_DISABLE", "1"}});
    for (const auto& p : m.pairs) EXPECT_EQ(p.p2p, std::optional<bool>(false)) << p.a << " " << p.b;
}

// NIC 0 moved to a switch on socket 1: GPU 0 reaches it at SYS; GPUs 0 and 1
// now have NIC 1 alone (PIX, ncclTopoGetLocal), and ncclTopoGetLocalNetType
// gives both of them that NIC (one NIC for two GPUs). Socket 1's GPUs reach
// the moved NIC at PHB, worse than their own PIX NICs, so nobody uses it.
TEST(NcclTopoGraph, DgxA100NicOnTheOtherSocket) {
    auto m = built_model_of(fixture("dgx-a100-nic-other-socket.xml"));
    for (int i : {0, 1}) {
        const auto& g = gpu(m, a100_gpu(i));
        EXPECT_EQ(g.nics, std::vector<std::string>{a100_nic(1)}) << i;
        EXPECT_EQ(g.nic, a100_nic(1)) << i;
        EXPECT_EQ(g.path, std::optional<Path>(Path::pix)) << i;
        EXPECT_EQ(g.gdr, std::optional<bool>(true)) << i;
    }
    EXPECT_EQ(path_to(m, a100_gpu(4), a100_nic(0)), Path::phb);
    for (const auto& g : m.gpus) EXPECT_NE(g.nic, a100_nic(0)) << g.busid;
}

// hgx-h100.xml: GPU i and NIC i alone on one (non-Broadcom) Gen5 switch.
constexpr int kH100Base[] = {0x10, 0x20, 0x30, 0x40, 0x90, 0xa0, 0xb0, 0xc0};

// ncclTopoSetPaths: PIX at min(Gen5 x16 48 GB/s, 400 Gb/s 50 GB/s) = 48, the
// one local NIC; GDR within P2C; pairs NVL through the NVS node that the four
// NVSwitches' <nvlink> elements (5+4+4+5 links) make.
TEST(NcclTopoGraph, HgxH100PairsEachGpuWithItsSwitchNic) {
    auto m = built_model_of(fixture("hgx-h100.xml"));
    ASSERT_EQ(m.gpus.size(), 8U);
    for (int i = 0; i < 8; ++i) {
        const auto& g = gpu(m, bus(kH100Base[i] + 8));
        EXPECT_EQ(g.nics, std::vector<std::string>{bus(kH100Base[i] + 9)}) << i;
        EXPECT_EQ(g.nic, bus(kH100Base[i] + 9)) << i;
        EXPECT_EQ(g.path, std::optional<Path>(Path::pix)) << i;
        EXPECT_EQ(g.gdr, std::optional<bool>(true)) << i;
    }
    expect_all_pairs(m, Path::nvl, true);
    // Without NVLink GPU 0 reaches NIC 1 (same socket) through the CPU, NIC 4
    // across sockets; its NVLink peers make both PXN.
    EXPECT_EQ(path_to(m, bus(0x18), bus(0x29)), Path::pxn);
    auto pxn_off = built_model_of(fixture("hgx-h100.xml"), {{"NCCL_PXN_DISABLE", "1"}});
    EXPECT_EQ(path_to(pxn_off, bus(0x18), bus(0x29)), Path::phb);
    EXPECT_EQ(path_to(pxn_off, bus(0x18), bus(0x99)), Path::sys);
}

// ncclTopoCheckP2p: NCCL_P2P_LEVEL=NVL keeps NVL pairs, NCCL_P2P_DISABLE=1
// turns them off.
TEST(NcclTopoGraph, HgxH100P2pLevels) {
    expect_all_pairs(built_model_of(fixture("hgx-h100.xml"), {{"NCCL_P2P_LEVEL", "NVL"}}), Path::nvl, true);
    auto off = built_model_of(fixture("hgx-h100.xml"), {{"NCCL_P2P_DISABLE", "1"}});
    for (const auto& p : off.pairs) EXPECT_EQ(p.p2p, std::optional<bool>(false)) << p.a << " " << p.b;
}

// NICs on the CPU's root ports: every GPU reaches its socket's four NICs at
// PHB, 48 GB/s (ncclTopoSetPaths), so all four are local (ncclTopoGetLocal)
// and four GPUs share them: ncclTopoGetLocalNetType takes dev % 4, mirrored
// over four NICs (mirrorBits: 0,1,2,3 -> 0,2,1,3). ncclTopoCheckGdr: PHB is
// beyond the default P2C (GDR off, no PXN peer reaches a NIC below PHB);
// NCCL_NET_GDR_LEVEL=PHB allows it.
TEST(NcclTopoGraph, HgxH100NicsOnRootPorts) {
    auto m = built_model_of(fixture("hgx-h100-nics-root-ports.xml"));
    const int mirrored[] = {0, 2, 1, 3};
    for (int i = 0; i < 8; ++i) {
        const int socket = i / 4;
        const auto& g = gpu(m, bus(kH100Base[i] + 8));
        std::vector<std::string> socket_nics;
        for (int k = 0; k < 4; ++k) socket_nics.push_back(bus(kH100Base[socket * 4 + k] + 0xd));
        EXPECT_EQ(g.nics, socket_nics) << i;
        EXPECT_EQ(g.nic, bus(kH100Base[socket * 4 + mirrored[i % 4]] + 0xd)) << i;
        EXPECT_EQ(g.path, std::optional<Path>(Path::phb)) << i;
        EXPECT_EQ(g.gdr, std::optional<bool>(false)) << i;
    }
    auto phb = built_model_of(fixture("hgx-h100-nics-root-ports.xml"), {{"NCCL_NET_GDR_LEVEL", "PHB"}});
    for (const auto& g : phb.gpus) EXPECT_EQ(g.gdr, std::optional<bool>(true)) << g.busid;
}

// p4de-like.xml: two GPUs on one sub switch, the EFA device on another under
// the same top switch: PXB (ncclTopoSetPaths, PCI->PCI), bandwidth min(24,
// 100 Gb/s = 12.5). Both GPUs keep that one NIC (PXB beats the PXN paths to
// the other EFAs at the same 12.5 GB/s) and both use it; GDR within P2C.
TEST(NcclTopoGraph, P4deTwoGpusShareTheirSwitchEfa) {
    auto m = built_model_of(fixture("p4de-like.xml"));
    constexpr int base[] = {0x10, 0x20, 0x90, 0xa0};
    for (int i = 0; i < 8; ++i) {
        const auto& g = gpu(m, bus(base[i / 2] + 2 + i % 2));
        EXPECT_EQ(g.nics, std::vector<std::string>{bus(base[i / 2] + 6)}) << i;
        EXPECT_EQ(g.nic, bus(base[i / 2] + 6)) << i;
        EXPECT_EQ(g.path, std::optional<Path>(Path::pxb)) << i;
        EXPECT_EQ(g.gdr, std::optional<bool>(true)) << i;
    }
    expect_all_pairs(m, Path::nvl, true);
    EXPECT_EQ(path_to(m, bus(0x12), bus(0x26)), Path::pxn);
}

// NCCL_NET_GDR_LEVEL=PIX refuses the EFA device's PXB (ncclTopoCheckGdr), so
// ncclTopoComputePaths routes GPU->NIC through the CPU (PHB, 12.5 GB/s) and
// no GPU relays for another (PXN needs GDR at the peer): each GPU's two
// socket EFAs tie at PHB and both are local (ncclTopoGetLocal); four GPUs
// share them, and ncclTopoGetLocalNetType gives dev d NIC mirrorBits(d % 4, 2)
// = d & 1.
TEST(NcclTopoGraph, P4deGdrLevelPixSendsEveryGpuThroughTheCpu) {
    auto m = built_model_of(fixture("p4de-like.xml"), {{"NCCL_NET_GDR_LEVEL", "PIX"}});
    const std::vector<std::string> socket0{bus(0x16), bus(0x26)};
    const std::string gpus[] = {bus(0x12), bus(0x13), bus(0x22), bus(0x23)};
    for (int dev = 0; dev < 4; ++dev) {
        const auto& g = gpu(m, gpus[dev]);
        EXPECT_EQ(g.nics, socket0) << g.busid;
        EXPECT_EQ(g.nic, socket0[static_cast<std::size_t>(dev & 1)]) << g.busid;
        EXPECT_EQ(g.gdr, std::optional<bool>(false)) << g.busid;
    }
}

// bcm-gen5-pair.xml: a Broadcom PEX Gen5 top switch (subsystem device 0x0xxx)
// over two sub switches (0x1xxx): getBcmGen(level 1) matches, the GPU and the
// NIC end up on the top switch, PIX. With the sub switches' subsystem device
// outside 0x1xxx they stay: PXB.
TEST(NcclTopoGraph, BroadcomGen5PairIsFlattened) {
    EXPECT_EQ(gpu(built_model_of(fixture("bcm-gen5-pair.xml")), "0000:43:00.0").path, std::optional<Path>(Path::pix));
    auto kept = built_model_of(
        replace_all(fixture("bcm-gen5-pair.xml"), "subsystem_device=\"0x1000\"", "subsystem_device=\"0x2000\""));
    EXPECT_EQ(gpu(kept, "0000:43:00.0").path, std::optional<Path>(Path::pxb));
}

// ncclTopoAddCpu: a <nic> straight under a <cpu> gets id
// NCCL_TOPO_ID(system, NCCL_TOPO_LOCAL_NIC_ID(numaid, 0)); NCCL_TOPO_ID's mask
// drops the NUMA bits, so the second socket's <nic> joins the first one's NIC
// node, which hangs off CPU 0 only: the GPU on socket 1 reaches its own
// socket's net at SYS, not PHB.
TEST(NcclTopoGraph, CpuLevelNicsAreOneNodeOnTheFirstCpu) {
    auto m = built_model_of(fixture("cpu-level-nics.xml"));
    ASSERT_EQ(m.gpus.size(), 1U);
    ASSERT_EQ(m.gpus[0].nic_paths.size(), 2U);
    EXPECT_EQ(m.gpus[0].nic_paths[0], Path::sys);
    EXPECT_EQ(m.gpus[0].nic_paths[1], Path::sys);
}

// busIdToInt64 reads the hex digits and skips ':' and '.', so an <nvlink
// target> without the domain, in capitals, names the same GPU: NVL.
TEST(NcclTopoGraph, BusIdsCompareAsNumbers) {
    auto m = built_model_of(fixture("busid-spellings.xml"));
    ASSERT_EQ(m.gpus.size(), 2U);
    EXPECT_EQ(m.gpus[1].busid, "0000:1d:00.0");
    EXPECT_EQ(pair(m, "0000:1b:00.0", "0000:1d:00.0").path, std::optional<Path>(Path::nvl));
}

// A <net> without gdr: ncclTopoPopulateNics fills it with the plugin's answer,
// so GDR is unknown, not off. A <gpu> without rank: ncclTopoFillGpu sets it for
// every GPU a rank uses, so the GPU stays (ncclTopoAddPci would drop it only
// when no rank runs on it).
TEST(NcclTopoGraph, MissingNetGdrAndGpuRankAreFilledByNccl) {
    auto no_net_gdr = built_model_of(replace_all(fixture("hgx-h100.xml"), " gdr=\"1\"/>", "/>"));
    const auto& g0 = gpu(no_net_gdr, bus(0x18));
    EXPECT_EQ(g0.path, std::optional<Path>(Path::pix));
    EXPECT_FALSE(g0.gdr.has_value());
    EXPECT_NE(g0.gdr_why.find("network plugin"), std::string::npos) << g0.gdr_why;

    auto no_rank = built_model_of(std::regex_replace(fixture("hgx-h100.xml"), std::regex(" rank=\"[0-9]+\""), ""));
    EXPECT_EQ(no_rank.gpus.size(), 8U);
    EXPECT_EQ(gpu(no_rank, bus(0x18)).nic, bus(0x19));
    EXPECT_FALSE(no_rank.notes.empty());
}

// Two functions of one NIC (bus ids differing in the last character, one
// parent) are ports NCCL fuses (ncclTopoGetPath: PATH_PORT, ncclTopoAutoMerge);
// the model keeps them apart and says so. Two NICs on two devices: no note.
TEST(NcclTopoGraph, PortsOfOneNicAreNotedAsFusedByNccl) {
    auto dual = built_model_of(replace_all(fixture("hgx-h100-nics-root-ports.xml"), "0000:2d:00.0", "0000:1d:00.1"));
    auto mentions = [](const PathModel& m, const std::string& text) {
        return std::any_of(m.notes.begin(), m.notes.end(),
                           [&text](const std::string& n) { return n.find(text) != std::string::npos; });
    };
    EXPECT_TRUE(mentions(dual, "0000:1d:00.0 and 0000:1d:00.1 are two ports of one device")) << dual.notes.size();
    EXPECT_FALSE(mentions(built_model_of(fixture("hgx-h100-nics-root-ports.xml")), "two ports of one device"));
    // Two <net> under one <nic>: their common parent is the <nic>, PATH_PORT.
    const std::string second_port =
        "<net name=\"mlx5_0\" dev=\"0\" speed=\"400000\" port=\"1\" latency=\"0.000000\" "
        "guid=\"0x946dae0300000000\" maxconn=\"131072\" gdr=\"1\"/>";
    auto two_nets =
        built_model_of(replace_all(fixture("hgx-h100.xml"), second_port,
                                   second_port + "<net name=\"mlx5_0_2\" dev=\"8\" speed=\"400000\" port=\"2\"/>"));
    EXPECT_TRUE(mentions(two_nets, "NIC 0000:19:00.0 has 2 <net> ports")) << two_nets.notes.size();
    // On two sub switches the ports' parents differ: not PATH_PORT.
    EXPECT_FALSE(mentions(built_model_of(replace_all(fixture("dgx-a100.xml"), "0000:14:00.0", "0000:0c:00.1")),
                          "two ports of one device"));
}

// ncclTopoGetXmlFromGpu asks NVML for the C2C links of an sm >= 90 <gpu>
// without <c2c>: on an arm64 (Grace) CPU that may add one, so it is noted;
// a <gpu> with its <c2c> is not.
TEST(NcclTopoGraph, GraceGpuWithoutC2cIsNoted) {
    auto mentions_c2c = [](const PathModel& m) {
        return std::any_of(m.notes.begin(), m.notes.end(),
                           [](const std::string& n) { return n.find("lists no <c2c>") != std::string::npos; });
    };
    const std::string with_c2c = fixture("grace-c2c.xml");
    EXPECT_FALSE(mentions_c2c(built_model_of(with_c2c)));
    EXPECT_TRUE(mentions_c2c(built_model_of(replace_all(with_c2c, "<c2c bw=\"40000\" count=\"10\"/>", ""))));
    EXPECT_FALSE(mentions_c2c(built_model_of(fixture("hgx-h100.xml"))));
}

// The live node: ncclTopoGetXmlFromSys climbs sysfs two levels at a time, so
// of root port / switch upstream port / downstream port it keeps the upstream
// port alone: a GPU and a NIC on two downstream ports of one switch are PIX.
// A device on a root port hangs off the CPU.
TEST(NcclTopoGraph, LiveNodeKeepsTheBridgesNcclKeeps) {
    NodeTopology node;
    Gpu g;
    g.busid = "0000:1b:00.0";
    g.numa_node = 0;
    g.pci_bridges = {"0000:00:01.0", "0000:19:00.0", "0000:1a:00.0"};
    node.gpus.push_back(g);
    Nic n;
    n.busid = "0000:1c:00.0";
    n.numa_node = 0;
    n.pci_bridges = {"0000:00:01.0", "0000:19:00.0", "0000:1a:08.0"};
    node.nics.push_back(n);
    Nic root;
    root.busid = "0000:40:00.0";
    root.numa_node = 0;
    root.pci_bridges = {"0000:00:03.0"};
    node.nics.push_back(root);
    const std::string xml = topology_xml_from_node(node);
    EXPECT_EQ(xml.find("0000:1a:00.0"), std::string::npos) << xml;
    EXPECT_EQ(xml.find("0000:00:01.0"), std::string::npos) << xml;
    auto m = built_model_of(xml);
    ASSERT_EQ(m.gpus.size(), 1U);
    ASSERT_EQ(m.nics.size(), 2U);
    EXPECT_EQ(m.gpus[0].nic_paths[0], Path::pix);
    EXPECT_EQ(m.gpus[0].nic_paths[1], Path::phb);
}

// ncclIbInit reports a device per ACTIVE port only: an HCA whose ports are
// all down is no NIC for NCCL; one with unknown ports is kept.
TEST(NcclTopoGraph, LiveNodeLeavesOutNicsWithoutAnActivePort) {
    NodeTopology node;
    Gpu g;
    g.busid = "0000:1b:00.0";
    g.numa_node = 0;
    node.gpus.push_back(g);
    Nic down;
    down.busid = "0000:1c:00.0";
    down.numa_node = 0;
    down.ports.push_back(IbPort{1, "DOWN", "Polling", std::nullopt, "InfiniBand"});
    node.nics.push_back(down);
    Nic active = down;
    active.busid = "0000:1d:00.0";
    active.ports.push_back(IbPort{2, "ACTIVE", "LinkUp", 400.0, "InfiniBand"});
    node.nics.push_back(active);
    Nic unknown;
    unknown.busid = "0000:1e:00.0";
    unknown.numa_node = 0;
    node.nics.push_back(unknown);
    auto m = built_model_of(topology_xml_from_node(node));
    EXPECT_EQ(m.nics, (std::vector<std::string>{"0000:1d:00.0", "0000:1e:00.0"}));
}

// Public files, read at run time. ndv5 (Azure ND H100 v5): a skeleton where
// each GPU and its NIC share one bridge: PIX (ncclTopoSetPaths); the one
// local NIC each.
TEST(NcclTopoGraph, AzureNdv5PairsEachGpuWithItsBridgeNic) {
    auto m = built_model_of(path_testing::shared_fixture("ndv5-topo.xml"));
    ASSERT_EQ(m.gpus.size(), 8U);
    ASSERT_EQ(m.nics.size(), 8U);
    // Bridge ffff:ff:0k.0 holds the k-th GPU and NIC 01(k):00:00.0.
    const char* gpus[] = {"0001", "0002", "0003", "0008", "0009", "000a", "000b", "000c"};
    for (int k = 0; k < 8; ++k) {
        const std::string g = std::string(gpus[k]) + ":00:00.0";
        char n[16];
        std::snprintf(n, sizeof n, "%04x:00:00.0", 0x101 + k);
        EXPECT_EQ(gpu(m, g).nics, std::vector<std::string>{n}) << g;
        EXPECT_EQ(gpu(m, g).nic, n) << g;
        EXPECT_EQ(gpu(m, g).path, std::optional<Path>(Path::pix)) << g;
    }
}

// p4d-24xl-topo.xml (AWS): two GPUs and one EFA device per switch, every
// device a bare <pci> (the driver and the plugin fill them in): PIX, one
// local NIC for both GPUs (ncclTopoGetLocal), and the two GPUs PIX apart.
TEST(NcclTopoGraph, AwsP4dTwoGpusPerSwitchNic) {
    auto m = built_model_of(path_testing::shared_fixture("p4d-24xl-topo.xml"));
    ASSERT_EQ(m.gpus.size(), 8U);
    ASSERT_EQ(m.nics.size(), 4U);
    for (const char* bus_prefix : {"0000:10", "0000:20", "0000:90", "0000:a0"}) {
        const std::string prefix = bus_prefix;
        for (const char* slot : {":1c.0", ":1d.0"}) {
            const auto& g = gpu(m, prefix + slot);
            EXPECT_EQ(g.nics, std::vector<std::string>{prefix + ":1b.0"}) << g.busid;
            EXPECT_EQ(g.nic, prefix + ":1b.0") << g.busid;
            EXPECT_EQ(g.path, std::optional<Path>(Path::pix)) << g.busid;
        }
        EXPECT_EQ(pair(m, prefix + ":1c.0", prefix + ":1d.0").pci_path, std::optional<Path>(Path::pix));
    }
    EXPECT_EQ(pair(m, "0000:10:1c.0", "0000:20:1c.0").pci_path, std::optional<Path>(Path::phb));
    EXPECT_EQ(pair(m, "0000:10:1c.0", "0000:90:1c.0").pci_path, std::optional<Path>(Path::sys));
}

}  // namespace
}  // namespace launchguard::nccl
