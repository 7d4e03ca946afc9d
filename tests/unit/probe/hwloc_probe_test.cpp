#include "probe/hwloc_probe.h"

#include <gtest/gtest.h>

#include "probe/process_probe.h"
#include "probe/topology_cache.h"
#include "support/fork_count.h"
#include "support/shared_fixtures.h"
#include "unit/probe/temp_tree.h"
#include "util/child_process.h"

namespace launchguard {
namespace {

// Functions, not constants: a test without the public fixtures skips where it asks.
std::string dgx2_xml() { return testing::shared_fixture_path("hwloc/nvidiaDGX2.xml"); }
std::string pci_normal_xml() { return testing::shared_fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml"); }

TEST(HwlocProbeTest, Dgx2HasSixteenV100sOnTwoNumaNodes) {
    auto topo = load_topology_from_xml(dgx2_xml());
    ASSERT_TRUE(topo.ok()) << topo.error().to_string();
    EXPECT_EQ(topo->source, "hwloc XML " + dgx2_xml());
    ASSERT_EQ(topo->numa_nodes.size(), 2U);
    EXPECT_EQ(topo->numa_nodes[0].os_index, 0);
    EXPECT_EQ(topo->numa_nodes[0].cpus.to_list(), "0-1");
    EXPECT_EQ(topo->numa_nodes[1].cpus.to_list(), "24-25");
    EXPECT_EQ(topo->all_cpus.to_list(), "0-1,24-25");

    ASSERT_EQ(topo->gpus.size(), 16U);
    const std::vector<std::string> busids = {"0000:34:00.0", "0000:36:00.0", "0000:39:00.0", "0000:3b:00.0",
                                             "0000:57:00.0", "0000:59:00.0", "0000:5c:00.0", "0000:5e:00.0",
                                             "0000:b7:00.0", "0000:b9:00.0", "0000:bc:00.0", "0000:be:00.0",
                                             "0000:e0:00.0", "0000:e2:00.0", "0000:e5:00.0", "0000:e7:00.0"};
    for (int i = 0; i < 16; ++i) {
        const Gpu& g = topo->gpus[static_cast<std::size_t>(i)];
        EXPECT_EQ(g.index, i);
        EXPECT_EQ(g.busid, busids[static_cast<std::size_t>(i)]);
        EXPECT_EQ(g.name, "Tesla V100-SXM3-32GB-H");
        EXPECT_EQ(g.numa_node, i < 8 ? 0 : 1) << g.busid;
        EXPECT_EQ(g.local_cpus.to_list(), i < 8 ? "0-1" : "24-25");
        ASSERT_TRUE(g.link.hwloc_gbps.has_value());
        EXPECT_NEAR(*g.link.hwloc_gbps, 15.75, 0.01);
    }
    EXPECT_EQ(topo->gpus[0].uuid, "GPU-d3977428-7a30-086b-2e20-5c1eeed647c6");
    // NVSwitches are PCI bridges of class 0x0680, not GPUs; no RDMA NICs on this export.
    EXPECT_TRUE(topo->nics.empty());
    EXPECT_EQ(topo->gpu_by_busid("0000:3B:00.0"), &topo->gpus[3]);
    EXPECT_EQ(topo->gpu_by_uuid("GPU-d3977428-7a30-086b-2e20-5c1eeed647c6"), &topo->gpus[0]);
}

TEST(HwlocProbeTest, PciNormalIoHasGpusAndAnActiveMlx5Port) {
    auto topo = load_topology_from_xml(pci_normal_xml());
    ASSERT_TRUE(topo.ok()) << topo.error().to_string();
    ASSERT_EQ(topo->numa_nodes.size(), 2U);
    EXPECT_EQ(topo->numa_nodes[0].cpus.to_list(), "0-7,16-23");
    EXPECT_EQ(topo->numa_nodes[1].cpus.to_list(), "8-15,24-31");

    // cuda0 keeps ordinal 0; the NVIDIA devices without an OS device follow in
    // bus order. The OpenCL-only AMD GPU at 0000:84:00.1 is no GPU NCCL drives.
    ASSERT_EQ(topo->gpus.size(), 3U);
    EXPECT_EQ(topo->gpus[0].busid, "0000:84:00.0");
    EXPECT_EQ(topo->gpus[0].name, "Tesla K40m");
    EXPECT_EQ(topo->gpus[1].busid, "0000:03:00.0");
    EXPECT_EQ(topo->gpus[1].index, 1);
    EXPECT_EQ(topo->gpus[1].numa_node, 0);
    EXPECT_EQ(topo->gpus[1].local_cpus.to_list(), "0-7,16-23");
    EXPECT_EQ(topo->gpus[2].busid, "0000:83:00.0");
    EXPECT_EQ(topo->gpu_by_busid("0000:84:00.1"), nullptr);
    for (std::size_t i : {0U, 2U}) {
        EXPECT_EQ(topo->gpus[i].numa_node, 1);
        EXPECT_EQ(topo->gpus[i].local_cpus.to_list(), "8-15,24-31");
    }
    for (const auto& g : topo->gpus) EXPECT_FALSE(g.link.hwloc_gbps.has_value());  // the export records speed 0

    ASSERT_EQ(topo->nics.size(), 1U);
    const Nic& nic = topo->nics[0];
    EXPECT_EQ(nic.hca, "mlx5_0");
    EXPECT_EQ(nic.busid, "0000:04:00.0");
    EXPECT_EQ(nic.netdevs, std::vector<std::string>{"ib0"});
    EXPECT_EQ(nic.numa_node, 1);
    ASSERT_EQ(nic.ports.size(), 1U);
    EXPECT_EQ(nic.ports[0].number, 1);
    EXPECT_EQ(nic.ports[0].state, "ACTIVE");
    EXPECT_EQ(topo->active_ib_port_count(), 1U);

    std::vector<std::string> names;
    for (const auto& i : topo->interfaces) names.push_back(i.name);
    EXPECT_EQ(names, (std::vector<std::string>{"eth0", "eth1", "ib0"}));
}

// The CLI and the enroot hook import a user's XML in a child first, so that
// a libhwloc crash on it is an error and not theirs.
TEST(HwlocProbeTest, ASingleThreadedProcessImportsXmlInAChildFirst) {
    if (!forked_child_may_run_library_code()) GTEST_SKIP() << "an earlier test in this process started a thread";
    const int before = test::forks_so_far();
    ASSERT_GE(before, 0);
    ASSERT_TRUE(load_topology_from_xml(pci_normal_xml()).ok());
    EXPECT_EQ(test::forks_so_far(), before + 1);
}

// slurmstepd: a child forked while another thread held libhwloc's lock
// waited on it for good, and so did the step.
TEST(HwlocProbeTest, AMultiThreadedProcessImportsXmlWithoutForking) {
    test::start_and_join_a_thread();
    const int before = test::forks_so_far();
    ASSERT_GE(before, 0);
    auto topo = load_topology_from_xml(pci_normal_xml());
    ASSERT_TRUE(topo.ok()) << topo.error().message;
    EXPECT_EQ(topo->gpus.size(), 3U);
    EXPECT_EQ(test::forks_so_far(), before);
}

TEST(HwlocProbeTest, MissingFileIsAnErrorNamingIt) {
    auto topo = load_topology_from_xml("/nonexistent/topo.xml");
    ASSERT_FALSE(topo.ok());
    EXPECT_EQ(topo.error().file, "/nonexistent/topo.xml");
}

TEST(HwlocProbeTest, MalformedXmlIsAnErrorNotACrash) {
    test::TempTree tree;
    tree.write("truncated.xml",
               "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n  <object type=\"Machine\" os_index=\"0\"");
    tree.write("nccl.xml", "<system version=\"1\"><cpu numaid=\"0\"/></system>\n");
    for (const char* name : {"truncated.xml", "nccl.xml"}) {
        auto topo = load_topology_from_xml(tree.path(name));
        ASSERT_FALSE(topo.ok()) << name;
        EXPECT_EQ(topo.error().file, tree.path(name));
        EXPECT_NE(topo.error().message.find("hwloc"), std::string::npos);
    }
}

TEST(HwlocProbeTest, LiveDiscoveryReturnsAResult) {
    // Only that it does not fail or crash on whatever machine runs the tests:
    // nothing about this host is asserted.
    auto topo = discover_topology();
    if (topo.ok()) {
        EXPECT_FALSE(topo->all_cpus.empty());
        EXPECT_EQ(topo->source, "hwloc live discovery");
    }
}

// The live discovery the rules read skips what they do not use (CPU caches,
// config space past the first 64 bytes); the full export keeps everything.
// Both give the same topology on whatever machine runs the tests, less the
// link bandwidth hwloc reads from config space or sysfs (no rule reads it).
TEST(HwlocProbeTest, LiveDiscoveryMatchesTheFullExportReadBack) {
    auto live = discover_topology();
    auto xml = export_live_topology_xml();
    if (!live.ok() || !xml.ok()) GTEST_SKIP() << "no live discovery on this machine";
    test::TempTree tree;
    tree.write("live.xml", *xml);
    auto exported = load_topology_from_xml(tree.path("live.xml"));
    ASSERT_TRUE(exported.ok()) << exported.error().to_string();
    const auto comparable = [](NodeTopology topo) {
        topo.source.clear();
        for (auto& gpu : topo.gpus) gpu.link.hwloc_gbps.reset();
        for (auto& nic : topo.nics) nic.link.hwloc_gbps.reset();
        return topology_to_json(topo);
    };
    EXPECT_EQ(comparable(*live), comparable(*exported));
}

TEST(HwlocProbeTest, LiveDiscoveryLeavesTheCapabilitiesAsTheyWere) {
    // It lowers CAP_SYS_ADMIN while hwloc reads config space (as root) and
    // raises it again.
    auto before = current_capabilities();
    ASSERT_TRUE(before.ok()) << before.error().to_string();
    (void)discover_topology();
    auto after = current_capabilities();
    ASSERT_TRUE(after.ok()) << after.error().to_string();
    EXPECT_EQ(*before, *after);
}

}  // namespace
}  // namespace launchguard
