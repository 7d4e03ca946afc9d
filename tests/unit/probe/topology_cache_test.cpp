#include "probe/topology_cache.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <filesystem>

#include "probe/hwloc_probe.h"
#include "probe/sysfs_probe.h"
#include "support/launch_fixture.h"

namespace launchguard {
namespace {

NodeTopology recorded_node() {
    auto topo = load_topology_from_xml(testing::fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml"));
    EXPECT_TRUE(topo.ok());
    augment_topology_from_sysfs(topo.value(), testing::fixture_path("sysfs/h100-baremetal"));
    return topo.value();
}

TEST(TopologyCache, RoundTripKeepsEveryFactRulesRead) {
    NodeTopology original = recorded_node();
    auto restored = topology_from_json(topology_to_json(original), "cache.json");
    ASSERT_TRUE(restored.ok()) << restored.error().to_string();
    EXPECT_EQ(restored->all_cpus, original.all_cpus);
    ASSERT_EQ(restored->numa_nodes.size(), original.numa_nodes.size());
    EXPECT_EQ(restored->numa_nodes[1].cpus, original.numa_nodes[1].cpus);
    ASSERT_EQ(restored->gpus.size(), original.gpus.size());
    for (std::size_t i = 0; i < original.gpus.size(); ++i) {
        EXPECT_EQ(restored->gpus[i].busid, original.gpus[i].busid);
        EXPECT_EQ(restored->gpus[i].index, original.gpus[i].index);
        EXPECT_EQ(restored->gpus[i].numa_node, original.gpus[i].numa_node);
        EXPECT_EQ(restored->gpus[i].local_cpus, original.gpus[i].local_cpus);
        EXPECT_EQ(restored->gpus[i].link.hwloc_gbps, original.gpus[i].link.hwloc_gbps);
        EXPECT_EQ(restored->gpus[i].pci_bridges, original.gpus[i].pci_bridges);
    }
    EXPECT_FALSE(original.gpus.front().pci_bridges.empty());  // the round trip has something to keep
    ASSERT_EQ(restored->nics.size(), original.nics.size());
    const Nic& nic = restored->nics.front();
    EXPECT_EQ(nic.hca, original.nics.front().hca);
    EXPECT_EQ(nic.pci_bridges, original.nics.front().pci_bridges);
    ASSERT_EQ(nic.ports.size(), original.nics.front().ports.size());
    EXPECT_EQ(nic.ports[0].state, original.nics.front().ports[0].state);
    EXPECT_EQ(nic.ports[0].rate_gbps, original.nics.front().ports[0].rate_gbps);
    ASSERT_TRUE(nic.link.current.has_value() == original.nics.front().link.current.has_value());
    EXPECT_EQ(restored->interfaces.size(), original.interfaces.size());
    EXPECT_NE(restored->source.find("topology cache cache.json"), std::string::npos);
}

TEST(TopologyCache, ReadsCachesWrittenBeforePciBridgesWereRecorded) {
    std::string text = topology_to_json(recorded_node());
    for (auto at = text.find("\"pci_bridges\":"); at != std::string::npos; at = text.find("\"pci_bridges\":")) {
        text.erase(at, text.find(']', at) + 2 - at);  // the key, its list and the comma after it
    }
    auto restored = topology_from_json(text, "old-cache.json");
    ASSERT_TRUE(restored.ok()) << restored.error().to_string() << "\n" << text;
    EXPECT_TRUE(restored->gpus.front().pci_bridges.empty());
}

TEST(TopologyCache, RejectsOtherFilesWithTheirName) {
    auto garbage = topology_from_json("{\"version\": 1}", "/run/launchguard/topology.json");
    ASSERT_FALSE(garbage.ok());
    EXPECT_EQ(garbage.error().file, "/run/launchguard/topology.json");
    EXPECT_FALSE(topology_from_json("not json", "x").ok());
    EXPECT_NE(topology_from_json("{\"version\": 99}", "x").error().message.find("version"), std::string::npos);
}

TEST(TopologyCache, SavedAtomicallyWorldReadableAndFresh) {
    char tmpl[] = "/tmp/lg-cache-XXXXXX";
    std::filesystem::path dir = ::mkdtemp(tmpl);
    std::string path = (dir / "sub/topology.json").string();
    EXPECT_FALSE(topology_cache_is_fresh(path, 3600));
    ASSERT_TRUE(save_topology_cache(recorded_node(), path).ok());
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644U);
    EXPECT_TRUE(topology_cache_is_fresh(path, 3600));
    EXPECT_FALSE(topology_cache_is_fresh(path, -1));  // older than a negative age
    auto loaded = load_topology_cache(path);
    ASSERT_TRUE(loaded.ok());
    EXPECT_EQ(loaded->gpus.size(), recorded_node().gpus.size());
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace launchguard
