// compare_placement() with the real Azure and AWS topology files against the
// machines they were written for, and with derived files that misplace
// devices the two ways the field sees: swapped <cpu> blocks and NICs hung
// under the other socket.
#include "nccl/topology_placement.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "probe/hwloc_probe.h"
#include "support/azure_fixtures.h"
#include "support/text.h"

namespace launchguard::nccl {
namespace {

using testing::fixture_text;
using testing::replace_all;

// Exchanges two strings everywhere (neither may contain the other).
std::string swap_text(const std::string& text, const std::string& a, const std::string& b) {
    return replace_all(replace_all(replace_all(text, a, "\x01"), b, a), "\x01", b);
}

struct Socket {
    std::string cpus;               // cpulist of the NUMA node
    std::vector<std::string> gpus;  // bus ids
    std::vector<std::string> nics;
};

// A VM as its provider describes it: NUMA nodes of the VM size's vCPUs, each
// device on its socket, and a flat PCI tree (every device alone behind a host
// bridge), which is why these VMs need a topology file at all.
NodeTopology vm(const std::vector<Socket>& sockets) {
    NodeTopology node;
    node.source = "test VM";
    for (std::size_t numa = 0; numa < sockets.size(); ++numa) {
        const Socket& socket = sockets[numa];
        CpuSet cpus = CpuSet::parse_list(socket.cpus).value();
        node.numa_nodes.push_back(NumaNode{static_cast<int>(numa), cpus});
        for (const auto& busid : socket.gpus) {
            Gpu gpu;
            gpu.index = static_cast<int>(node.gpus.size());
            gpu.busid = busid;
            gpu.numa_node = static_cast<int>(numa);
            gpu.local_cpus = cpus;
            node.gpus.push_back(gpu);
        }
        for (const auto& busid : socket.nics) {
            Nic nic;
            nic.hca = "mlx5_" + std::to_string(node.nics.size());
            nic.busid = busid;
            nic.numa_node = static_cast<int>(numa);
            nic.local_cpus = cpus;
            node.nics.push_back(nic);
        }
    }
    return node;
}

// ND H100 v5: 96 vCPUs on two NUMA nodes; GPUs and NICs as Azure places them.
NodeTopology azure_ndv5() {
    return vm({{"0-47",
                {"0001:00:00.0", "0002:00:00.0", "0003:00:00.0", "0008:00:00.0"},
                {"0101:00:00.0", "0102:00:00.0", "0103:00:00.0", "0104:00:00.0"}},
               {"48-95",
                {"0009:00:00.0", "000a:00:00.0", "000b:00:00.0", "000c:00:00.0"},
                {"0105:00:00.0", "0106:00:00.0", "0107:00:00.0", "0108:00:00.0"}}});
}

// ND A100 v4: 96 vCPUs on four NUMA nodes of 24.
NodeTopology azure_ndv4() {
    return vm({{"0-23", {"0003:00:00.0", "0004:00:00.0"}, {"0103:00:00.0", "0104:00:00.0"}},
               {"24-47", {"0001:00:00.0", "0002:00:00.0"}, {"0101:00:00.0", "0102:00:00.0"}},
               {"48-71", {"000d:00:00.0", "000e:00:00.0"}, {"0107:00:00.0", "0108:00:00.0"}},
               {"72-95", {"000b:00:00.0", "000c:00:00.0"}, {"0105:00:00.0", "0106:00:00.0"}}});
}

// p4d.24xlarge: 2 sockets of 24 cores with hyperthreads numbered after all cores.
NodeTopology aws_p4d() {
    return vm({{"0-23,48-71",
                {"0000:10:1c.0", "0000:10:1d.0", "0000:20:1c.0", "0000:20:1d.0"},
                {"0000:10:1b.0", "0000:20:1b.0"}},
               {"24-47,72-95",
                {"0000:90:1c.0", "0000:90:1d.0", "0000:a0:1c.0", "0000:a0:1d.0"},
                {"0000:90:1b.0", "0000:a0:1b.0"}}});
}

PlacementDrift compare(const std::string& text, const NodeTopology& node) {
    TopologyFile file = parse_topology(text);
    EXPECT_EQ(file.outcome, TopoOutcome::accepted) << file.reason;
    return compare_placement(file, node);
}

TEST(NcclTopoPlacement, RealFilesAgreeWithTheirOwnMachines) {
    EXPECT_FALSE(compare(fixture_text("nccl-topo/ndv5-topo.xml"), azure_ndv5()).drifted());
    EXPECT_FALSE(compare(fixture_text("nccl-topo/ndv4-topo.xml"), azure_ndv4()).drifted());
    EXPECT_FALSE(compare(fixture_text("nccl-topo/p4d-24xl-topo.xml"), aws_p4d()).drifted());
}

TEST(NcclTopoPlacement, RealFileRecordsItsSwitchesAndSockets) {
    TopologyFile file = parse_topology(fixture_text("nccl-topo/ndv5-topo.xml"));
    ASSERT_GE(file.pcis.size(), 3U);
    EXPECT_EQ(file.pcis[1].busid, "0001:00:00.0");
    EXPECT_EQ(file.pcis[1].bridges, std::vector<std::string>{"ffff:ff:01.0"});
    EXPECT_EQ(file.pcis[1].affinity, "00000000,0000ffff,ffffffff");
    EXPECT_EQ(file.pcis[1].cpu_line, 2);
    EXPECT_TRUE(file.pcis[0].bridges.empty());
}

TEST(NcclTopoPlacement, SwappedCpuBlocksMisplaceEveryDevice) {
    // Derived from the real ndv5 file: the two <cpu> elements exchange numaid and affinity.
    std::string swapped =
        swap_text(fixture_text("nccl-topo/ndv5-topo.xml"), R"(numaid="0" affinity="00000000,0000ffff,ffffffff")",
                  R"(numaid="1" affinity="ffffffff,ffff0000,00000000")");
    PlacementDrift drift = compare(swapped, azure_ndv5());
    ASSERT_EQ(drift.devices.size(), 16U);
    const DevicePlacementMismatch& first = drift.devices.front();
    EXPECT_EQ(first.kind, "GPU");
    EXPECT_EQ(first.busid, "0001:00:00.0");
    EXPECT_EQ(first.line, 4);
    EXPECT_EQ(first.cpu_line, 2);
    EXPECT_EQ(first.file_numa, "1");
    EXPECT_EQ(first.node_numa, 0);
    EXPECT_EQ(first.file_cpus, "48-95");
    EXPECT_EQ(first.node_cpus, "0-47");
    EXPECT_TRUE(first.numa_differs);
    EXPECT_TRUE(first.cpus_differ);
    EXPECT_EQ(drift.devices.back().kind, "NIC");
    // GPU and NIC moved together: each GPU still pairs with its own NIC.
    EXPECT_TRUE(drift.pairings.empty());
}

TEST(NcclTopoPlacement, AffinityAloneCanBeWrong) {
    // Derived: the first <cpu> keeps numaid 0 but claims socket 1's CPUs.
    std::string text =
        replace_all(fixture_text("nccl-topo/ndv5-topo.xml"), R"(numaid="0" affinity="00000000,0000ffff,ffffffff")",
                    R"(numaid="0" affinity="ffffffff,ffff0000,00000000")");
    PlacementDrift drift = compare(text, azure_ndv5());
    ASSERT_EQ(drift.devices.size(), 8U);
    EXPECT_FALSE(drift.devices[0].numa_differs);
    EXPECT_TRUE(drift.devices[0].cpus_differ);
}

TEST(NcclTopoPlacement, NicMovedAcrossSocketsIsMisplacedAndMispaired) {
    // Derived: NIC 0101 (socket 0) and NIC 0105 (socket 1) exchange places in the file.
    std::string moved = swap_text(fixture_text("nccl-topo/ndv5-topo.xml"), "0101:00:00.0", "0105:00:00.0");
    PlacementDrift drift = compare(moved, azure_ndv5());
    ASSERT_EQ(drift.devices.size(), 2U);
    EXPECT_EQ(drift.devices[0].busid, "0101:00:00.0");
    EXPECT_EQ(drift.devices[0].file_numa, "1");
    ASSERT_EQ(drift.pairings.size(), 2U);
    const NicPairingMismatch& gpu0 = drift.pairings[0];
    EXPECT_EQ(gpu0.gpu_busid, "0001:00:00.0");
    EXPECT_EQ(gpu0.file_nearest, std::vector<std::string>{"0105:00:00.0"});
    EXPECT_EQ(gpu0.file_path, PathType::pix);
    EXPECT_EQ(gpu0.node_nearest,
              (std::vector<std::string>{"0101:00:00.0", "0102:00:00.0", "0103:00:00.0", "0104:00:00.0"}));
    EXPECT_EQ(gpu0.node_path, PathType::phb);
    EXPECT_EQ(drift.pairings[1].gpu_busid, "0009:00:00.0");
}

TEST(NcclTopoPlacement, SwitchesOnTheNodeDecideThePairing) {
    // A bare-metal node whose PCI tree shows switches: GPU 0 shares switch
    // 10:00.0 with NIC 0101, not with NIC 0102. The real ndv5 file pairs
    // GPU 0001 with 0101 (same fake bridge) and GPU 0002 with 0102.
    NodeTopology node = azure_ndv5();
    node.gpus[0].pci_bridges = {"0000:10:00.0"};
    node.nics[0].pci_bridges = {"0000:10:00.0"};
    node.gpus[1].pci_bridges = {"0000:20:00.0"};
    node.nics[1].pci_bridges = {"0000:20:00.0"};
    EXPECT_FALSE(compare(fixture_text("nccl-topo/ndv5-topo.xml"), node).drifted());

    // Derived: the file hangs NIC 0102 under GPU 0001's bridge and 0101 under GPU 0002's.
    std::string crossed = swap_text(fixture_text("nccl-topo/ndv5-topo.xml"), "0101:00:00.0", "0102:00:00.0");
    PlacementDrift drift = compare(crossed, node);
    EXPECT_TRUE(drift.devices.empty());
    ASSERT_EQ(drift.pairings.size(), 2U);
    EXPECT_EQ(drift.pairings[0].file_nearest, std::vector<std::string>{"0102:00:00.0"});
    EXPECT_EQ(drift.pairings[0].node_nearest, std::vector<std::string>{"0101:00:00.0"});
    EXPECT_EQ(drift.pairings[0].node_path, PathType::pix);
}

TEST(NcclTopoPlacement, HwlocGivesTheNodesSwitchesAndSockets) {
    auto node = load_topology_from_xml(testing::shared_fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml"));
    ASSERT_TRUE(node) << node.error().to_string();
    const Gpu* gpu = node.value().gpu_by_busid("0000:03:00.0");
    ASSERT_NE(gpu, nullptr);
    EXPECT_EQ(gpu->pci_bridges, std::vector<std::string>{"0000:00:03.0"});

    // The hand-written file in tests/fixtures/cli puts GPU 03:00.0 on socket 1; hwloc has it on 0.
    PlacementDrift drift = compare(fixture_text("cli/topo-32em64t-swapped-numa.xml"), node.value());
    ASSERT_EQ(drift.devices.size(), 1U);
    EXPECT_EQ(drift.devices[0].busid, "0000:03:00.0");
    EXPECT_EQ(drift.devices[0].file_cpus, "8-15,24-31");
    EXPECT_EQ(drift.devices[0].node_cpus, "0-7,16-23");
    EXPECT_TRUE(drift.pairings.empty());  // one NIC: nothing to mis-pair

    // The same devices where hwloc has them: no finding.
    EXPECT_FALSE(compare(fixture_text("cli/topo-32em64t-agreeing.xml"), node.value()).drifted());
}

}  // namespace
}  // namespace launchguard::nccl
