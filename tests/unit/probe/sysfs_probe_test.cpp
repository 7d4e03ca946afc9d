#include "probe/sysfs_probe.h"

#include <gtest/gtest.h>

#include "probe/hwloc_probe.h"
#include "probe/text_file.h"
#include "support/shared_fixtures.h"
#include "unit/probe/temp_tree.h"

namespace launchguard {
namespace {

const std::string kTuned = LAUNCHGUARD_FIXTURES "/sysfs/h100-baremetal";
const std::string kBad = LAUNCHGUARD_FIXTURES "/sysfs/misconfigured-node";
const std::string kVm = LAUNCHGUARD_FIXTURES "/sysfs/azure-vm-degraded";

// A small server-like tree: 2 CPUs x 4 idle states (state1 and state3 of
// CPU 1 disabled), 3 PCI devices with link attributes, one IOMMU group each.
void write_server_tree(const test::TempTree& tree) {
    const char* names[] = {"POLL", "C1", "C1E", "C6"};
    for (int cpu = 0; cpu < 2; ++cpu) {
        const std::string base = "sys/devices/system/cpu/cpu" + std::to_string(cpu);
        tree.write(base + "/cpufreq/scaling_governor", "performance\n");
        for (int k = 0; k < 4; ++k) {
            const std::string state = base + "/cpuidle/state" + std::to_string(k);
            tree.write(state + "/name", std::string(names[k]) + "\n");
            tree.write(state + "/disable", cpu == 1 && (k == 1 || k == 3) ? "1\n" : "0\n");
        }
    }
    for (const char* busid : {"0000:17:00.0", "0000:18:00.0", "0000:19:00.0"}) {
        const std::string dev = std::string("sys/bus/pci/devices/") + busid;
        tree.write(dev + "/current_link_speed", "16.0 GT/s PCIe\n");
        tree.write(dev + "/current_link_width", "8\n");
        tree.write(dev + "/max_link_speed", "16.0 GT/s PCIe\n");
        tree.write(dev + "/max_link_width", "16\n");
        tree.write(std::string("sys/kernel/iommu_groups/") + busid + "/type", "DMA\n");
    }
}

TEST(SysfsProbeTest, TheTaskSetLeavesOutWhatNoTaskRuleReads) {
    test::TempTree tree;
    write_server_tree(tree);
    NodeFacts all = probe_node_facts(tree.root());
    NodeFacts task = probe_node_facts(tree.root(), nullptr, NodeFactSet::task);
    ASSERT_TRUE(all.iommu_groups.is_known());
    EXPECT_EQ(all.iommu_groups->size(), 3U);
    EXPECT_FALSE(task.iommu_groups.is_known());
    ASSERT_TRUE(all.pcie_links.is_known());
    EXPECT_EQ(all.pcie_links->size(), 3U);
    EXPECT_FALSE(task.pcie_links.is_known());
    // The same power facts, but for the two shallow states' switches.
    ASSERT_TRUE(all.power.is_known() && task.power.is_known());
    EXPECT_EQ(all.power->governor, task.power->governor);
    const auto& all_states = all.power->idle_states.at(1);
    const auto& task_states = task.power->idle_states.at(1);
    ASSERT_EQ(all_states.size(), 4U);
    ASSERT_EQ(task_states.size(), 4U);
    for (std::size_t k = 0; k < 4; ++k) EXPECT_EQ(all_states[k].name, task_states[k].name);
    EXPECT_TRUE(all_states[1].disabled);
    EXPECT_FALSE(task_states[1].disabled);
    EXPECT_TRUE(all_states[3].disabled);
    EXPECT_TRUE(task_states[3].disabled);
    EXPECT_FALSE(task.power->idle_states.at(0)[3].disabled);

    // The links of the devices named, and of no other.
    auto links = probe_pcie_links(tree.root(), {"0000:18:00.0", "0000:99:00.0"});
    ASSERT_TRUE(links.is_known());
    ASSERT_EQ(links->size(), 1U);
    EXPECT_EQ(links->at("0000:18:00.0").current.width, 8);
    EXPECT_EQ(links->at("0000:18:00.0").max.width, 16);
    EXPECT_FALSE(probe_pcie_links(tree.path("nowhere"), {"0000:18:00.0"}).is_known());
}

TEST(SysfsProbeTest, TunedBareMetalNode) {
    NodeFacts facts = probe_node_facts(kTuned);
    ASSERT_TRUE(facts.power.is_known()) << facts.power.reason();
    const CpuPower& p = facts.power.value();
    EXPECT_EQ(p.governor.size(), 4U);
    EXPECT_EQ(p.governor.at(3), "performance");
    EXPECT_EQ(p.scaling_max_khz.at(0), 3800000);
    EXPECT_EQ(p.cpuinfo_max_khz.at(0), 3800000);
    ASSERT_EQ(p.idle_states.at(2).size(), 4U);
    EXPECT_EQ(p.idle_states.at(2)[3].name, "C6");
    EXPECT_FALSE(p.idle_states.at(2)[3].disabled);
    EXPECT_EQ(p.intel_no_turbo, std::optional<bool>(false));
    EXPECT_FALSE(p.cpufreq_boost.has_value());

    ASSERT_TRUE(facts.numa_balancing.is_known());
    EXPECT_FALSE(facts.numa_balancing.value());
    ASSERT_TRUE(facts.kernel_cmdline.is_known());
    EXPECT_NE(facts.kernel_cmdline->find("iommu=pt"), std::string::npos);
    ASSERT_TRUE(facts.virtualization.is_known());
    EXPECT_EQ(facts.virtualization.value(), "none");
    ASSERT_TRUE(facts.iommu_groups.is_known());
    ASSERT_EQ(facts.iommu_groups->size(), 2U);
    EXPECT_EQ(facts.iommu_groups->at(0).type, "identity");
    EXPECT_EQ(facts.iommu_groups->at(1).devices, (std::vector<std::string>{"0000:1a:00.0", "0000:1a:00.1"}));
    // A recorded tree cannot say what the page size or architecture is.
    EXPECT_FALSE(facts.page_size.is_known());
    EXPECT_FALSE(facts.arch.is_known());
    ASSERT_TRUE(facts.pcie_links.is_known());
    EXPECT_EQ(facts.pcie_links->at("0000:18:00.0").current.speed_gts, 32.0);
    EXPECT_EQ(facts.pcie_links->at("0000:18:00.0").max.width, 16);
}

TEST(SysfsProbeTest, MisconfiguredNode) {
    NodeFacts facts = probe_node_facts(kBad);
    ASSERT_TRUE(facts.power.is_known());
    const CpuPower& p = facts.power.value();
    EXPECT_EQ(p.governor.at(0), "powersave");
    EXPECT_EQ(p.scaling_max_khz.at(1), 2000000);
    EXPECT_EQ(p.cpuinfo_max_khz.at(1), 3800000);
    EXPECT_EQ(p.idle_states.at(0).size(), 2U);
    EXPECT_EQ(p.intel_no_turbo, std::optional<bool>(true));
    ASSERT_TRUE(facts.numa_balancing.is_known());
    EXPECT_TRUE(facts.numa_balancing.value());
    EXPECT_EQ(facts.virtualization.value(), "none");
    // sysfs is there but no iommu_groups: the IOMMU translates nothing.
    ASSERT_TRUE(facts.iommu_groups.is_known());
    EXPECT_TRUE(facts.iommu_groups->empty());
    EXPECT_FALSE(facts.pcie_links.is_known());
}

TEST(SysfsProbeTest, AzureVmWithTranslatingIommuAndDegradedLink) {
    NodeFacts facts = probe_node_facts(kVm);
    EXPECT_FALSE(facts.power.is_known());
    EXPECT_NE(facts.power.reason().find("cpufreq"), std::string::npos);
    ASSERT_TRUE(facts.virtualization.is_known());
    EXPECT_EQ(facts.virtualization.value(), "microsoft");
    ASSERT_TRUE(facts.iommu_groups.is_known());
    ASSERT_EQ(facts.iommu_groups->size(), 2U);
    EXPECT_EQ(facts.iommu_groups->at(0).type, "DMA-FQ");
    EXPECT_EQ(facts.iommu_groups->at(0).devices, std::vector<std::string>{"0001:00:00.0"});
    EXPECT_EQ(facts.kernel_cmdline->find("iommu.passthrough"), std::string::npos);
    const auto& gpu_link = facts.pcie_links->at("0001:00:00.0");
    EXPECT_EQ(gpu_link.current.width, 8);
    EXPECT_EQ(gpu_link.max.width, 16);
    EXPECT_EQ(gpu_link.current.speed_gts, 16.0);
}

TEST(SysfsProbeTest, MissingRootMakesEverythingUnknown) {
    NodeFacts facts = probe_node_facts("/nonexistent-launchguard-root");
    EXPECT_FALSE(facts.power.is_known());
    EXPECT_FALSE(facts.numa_balancing.is_known());
    EXPECT_FALSE(facts.kernel_cmdline.is_known());
    EXPECT_FALSE(facts.virtualization.is_known());
    EXPECT_FALSE(facts.iommu_groups.is_known());
    EXPECT_FALSE(facts.pcie_links.is_known());
    EXPECT_NE(facts.numa_balancing.reason().find("/nonexistent-launchguard-root/proc/sys/kernel/numa_balancing"),
              std::string::npos);
}

TEST(SysfsProbeTest, LiveRootKnowsPageSizeAndArch) {
    NodeFacts facts = probe_node_facts("/");
    ASSERT_TRUE(facts.page_size.is_known());
    EXPECT_GE(facts.page_size.value(), 4096);
    EXPECT_TRUE(facts.arch.is_known());
}

#if defined(__x86_64__)
// On the live node the hypervisor bit comes from CPUID instead of
// /proc/cpuinfo, and says what cpuinfo's 'hypervisor' flag says. The same
// machine seen as a tree (a root of its own) still reads cpuinfo.
TEST(SysfsProbeTest, TheLiveX86NodeAsksCpuidWhatCpuinfoWouldSay) {
    auto cpuinfo = read_text_file("/proc/cpuinfo");
    ASSERT_TRUE(cpuinfo.ok());
    const bool flagged = cpuinfo->find(" hypervisor") != std::string::npos;
    NodeFacts facts = probe_node_facts("/");
    ASSERT_TRUE(facts.virtualization.is_known()) << facts.virtualization.reason();
    if (flagged) {
        EXPECT_EQ(facts.virtualization.value(), "vm");
        EXPECT_EQ(facts.virtualization.source(), "CPUID leaf 1 'hypervisor' bit");
    } else {
        EXPECT_NE(facts.virtualization.value(), "vm");
        EXPECT_EQ(facts.virtualization.source().find("proc/cpuinfo"), std::string::npos);
    }
}
#endif

TEST(SysfsProbeTest, ParsesSysfsValueFormats) {
    EXPECT_EQ(parse_link_speed("16.0 GT/s PCIe\n"), std::optional<double>(16.0));
    EXPECT_EQ(parse_link_speed("2.5 GT/s"), std::optional<double>(2.5));
    EXPECT_FALSE(parse_link_speed("Unknown").has_value());
    EXPECT_EQ(parse_ib_rate("400 Gb/sec (4X NDR)"), std::optional<double>(400));
    EXPECT_EQ(parse_ib_rate("56 Gb/sec (4X FDR)"), std::optional<double>(56));
    EXPECT_FALSE(parse_ib_rate("fast").has_value());
    EXPECT_EQ(parse_ib_state("4: ACTIVE\n"), "ACTIVE");
    EXPECT_EQ(parse_ib_state("5: LinkUp"), "LinkUp");
}

TEST(SysfsProbeTest, AugmentAddsIbPortsLinksAndOperstate) {
    NodeTopology topo;
    Gpu gpu;
    gpu.index = 0;
    gpu.busid = "0000:18:00.0";
    topo.gpus.push_back(gpu);
    topo.interfaces.push_back(NetInterface{"ib1", true});
    augment_topology_from_sysfs(topo, kTuned);

    ASSERT_EQ(topo.nics.size(), 2U);
    const Nic& up = topo.nics[0];
    EXPECT_EQ(up.hca, "mlx5_0");
    EXPECT_EQ(up.busid, "0000:1a:00.0");
    EXPECT_EQ(up.netdevs, std::vector<std::string>{"ib0"});
    EXPECT_EQ(up.numa_node, 0);
    EXPECT_EQ(up.local_cpus.to_list(), "0-1");
    ASSERT_EQ(up.ports.size(), 1U);
    EXPECT_EQ(up.ports[0].state, "ACTIVE");
    EXPECT_EQ(up.ports[0].phys_state, "LinkUp");
    EXPECT_EQ(up.ports[0].rate_gbps, std::optional<double>(400));
    EXPECT_EQ(up.ports[0].link_layer, "InfiniBand");
    ASSERT_TRUE(up.link.current.has_value());
    EXPECT_EQ(up.link.current->width, 16);
    EXPECT_EQ(topo.nics[1].ports[0].state, "DOWN");
    EXPECT_EQ(topo.nics[1].ports[0].phys_state, "Disabled");
    EXPECT_EQ(topo.active_ib_port_count(), 1U);

    ASSERT_TRUE(topo.gpus[0].link.max.has_value());
    EXPECT_EQ(topo.gpus[0].link.max->speed_gts, 32.0);

    auto ib1 = std::find_if(topo.interfaces.begin(), topo.interfaces.end(),
                            [](const NetInterface& i) { return i.name == "ib1"; });
    ASSERT_NE(ib1, topo.interfaces.end());
    EXPECT_FALSE(ib1->up);
    EXPECT_EQ(topo.interfaces.size(), 4U);  // ib1 updated; eth0, ib0, lo added
    EXPECT_NE(topo.source.find("sysfs under " + kTuned), std::string::npos);
}

// The node facts' link states serve the topology too (one read per probe):
// given them, augment applies them and reads no PCI directory itself.
TEST(SysfsProbeTest, AugmentTakesLinkStatesAlreadyRead) {
    NodeFacts facts = probe_node_facts(kTuned);
    ASSERT_TRUE(facts.pcie_links.is_known());
    auto links = facts.pcie_links.value();
    ASSERT_TRUE(links.count("0000:18:00.0"));
    links["0000:18:00.0"].max.speed_gts = 64.0;  // only in the map given
    NodeTopology topo;
    Gpu gpu;
    gpu.index = 0;
    gpu.busid = "0000:18:00.0";
    topo.gpus.push_back(gpu);
    augment_topology_from_sysfs(topo, kTuned, &links);
    ASSERT_TRUE(topo.gpus[0].link.max.has_value());
    EXPECT_EQ(topo.gpus[0].link.max->speed_gts, 64.0);

    NodeTopology read_itself;
    read_itself.gpus.push_back(gpu);
    augment_topology_from_sysfs(read_itself, kTuned);
    EXPECT_EQ(read_itself.gpus[0].link.max->speed_gts, 32.0);
}

TEST(SysfsProbeTest, AugmentMergesPortsIntoHwlocNics) {
    auto loaded = load_topology_from_xml(testing::shared_fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml"));
    ASSERT_TRUE(loaded.ok());
    NodeTopology topo = *loaded;
    augment_topology_from_sysfs(topo, kTuned);
    // hwloc's mlx5_0 gains the sysfs rate; mlx5_1 exists only in sysfs.
    ASSERT_EQ(topo.nics.size(), 2U);
    EXPECT_EQ(topo.nics[0].busid, "0000:04:00.0");
    EXPECT_EQ(topo.nics[0].ports.size(), 1U);
    EXPECT_EQ(topo.nics[0].ports[0].rate_gbps, std::optional<double>(400));
}

}  // namespace
}  // namespace launchguard
