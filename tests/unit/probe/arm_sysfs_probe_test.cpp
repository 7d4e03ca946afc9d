// What the sysfs probe reads on Arm: the Grace trees (grace-gb200-node, a
// bare-metal tray; grace-gb200-vm, a KVM guest with a virtual SMMUv3), and
// small trees written here for the cases they do not cover.
#include <stdlib.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "probe/sysfs_probe.h"

namespace launchguard {
namespace {

namespace fs = std::filesystem;

// A fact's value, or `otherwise` when it is unknown.
template <typename T, typename U>
T known_or(const Fact<T>& fact, U otherwise) {
    return fact.is_known() ? fact.value() : T(otherwise);
}

const std::string kGraceNode = LAUNCHGUARD_FIXTURES "/sysfs/grace-gb200-node";
const std::string kGraceVm = LAUNCHGUARD_FIXTURES "/sysfs/grace-gb200-vm";

// A scratch tree under /tmp, removed at the end of the test.
class ScratchTree {
public:
    ScratchTree() {
        char name[] = "/tmp/lg-arm-sysfs-XXXXXX";
        root_ = ::mkdtemp(name);
    }
    ~ScratchTree() {
        std::error_code ec;
        fs::remove_all(root_, ec);
    }
    ScratchTree(const ScratchTree&) = delete;
    ScratchTree& operator=(const ScratchTree&) = delete;
    void write(const std::string& relative, const std::string& content) const {
        fs::path path = root_ / relative;
        fs::create_directories(path.parent_path());
        std::ofstream(path) << content;
    }
    [[nodiscard]] std::string root() const { return root_.string(); }

private:
    fs::path root_;
};

TEST(ArmSysfsProbe, GraceNodeReadsItsPoliciesIdleStateSmmuAndPageSize) {
    NodeFacts facts = probe_node_facts(kGraceNode);
    ASSERT_TRUE(facts.power.is_known()) << facts.power.reason();
    const CpuPower& power = facts.power.value();
    // The tree has cpufreq/policyN only (no cpuN/cpufreq links): read by policy.
    ASSERT_EQ(power.governor.size(), 4U);
    EXPECT_EQ(power.governor.at(2), "performance");
    EXPECT_EQ(power.scaling_max_khz.at(3), 3456000);
    EXPECT_EQ(power.cpuinfo_max_khz.at(3), 3456000);
    // Grace has one idle state, WFI, and no x86 turbo switches.
    ASSERT_EQ(power.idle_states.at(0).size(), 1U);
    EXPECT_EQ(power.idle_states.at(0)[0].name, "WFI");
    EXPECT_FALSE(power.intel_no_turbo.has_value());
    EXPECT_FALSE(power.cpufreq_boost.has_value());

    ASSERT_TRUE(facts.virtualization.is_known()) << facts.virtualization.reason();
    EXPECT_EQ(facts.virtualization.value(), "none");
    ASSERT_TRUE(facts.iommu_units.is_known()) << facts.iommu_units.reason();
    ASSERT_EQ(facts.iommu_units->size(), 5U);
    EXPECT_EQ(facts.iommu_units->front().name, "smmu3.0x0000000005000000");
    for (const IommuUnit& unit : *facts.iommu_units) EXPECT_EQ(unit.kind, "arm-smmu-v3") << unit.name;
    ASSERT_TRUE(facts.iommu_groups.is_known());
    for (const IommuGroup& group : *facts.iommu_groups) EXPECT_EQ(group.type, "identity") << group.id;

    ASSERT_TRUE(facts.page_size.is_known()) << facts.page_size.reason();
    EXPECT_EQ(facts.page_size.value(), 65536);
    EXPECT_NE(facts.page_size.source().find("hpage_pmd_size"), std::string::npos);
    ASSERT_TRUE(facts.arch.is_known()) << facts.arch.reason();
    EXPECT_EQ(facts.arch.value(), "aarch64");
    ASSERT_TRUE(facts.numa_balancing.is_known());
    EXPECT_FALSE(facts.numa_balancing.value());
}

TEST(ArmSysfsProbe, GraceVmIsAKvmGuestWithAVirtualSmmuAndFourKibPages) {
    NodeFacts facts = probe_node_facts(kGraceVm);
    // No cpufreq or cpuidle in the guest.
    EXPECT_FALSE(facts.power.is_known());
    ASSERT_TRUE(facts.virtualization.is_known()) << facts.virtualization.reason();
    EXPECT_EQ(facts.virtualization.value(), "kvm");
    ASSERT_TRUE(facts.iommu_units.is_known());
    ASSERT_EQ(facts.iommu_units->size(), 1U);
    EXPECT_EQ(facts.iommu_units->front().name, "smmu3.0x0000000009050000");
    EXPECT_EQ(facts.iommu_units->front().kind, "arm-smmu-v3");
    ASSERT_TRUE(facts.iommu_groups.is_known());
    ASSERT_EQ(facts.iommu_groups->size(), 8U);
    EXPECT_EQ(facts.iommu_groups->front().type, "DMA");
    ASSERT_TRUE(facts.page_size.is_known());
    EXPECT_EQ(facts.page_size.value(), 4096);
    EXPECT_EQ(known_or(facts.arch, ""), "aarch64");
    EXPECT_TRUE(known_or(facts.numa_balancing, false));
}

TEST(ArmSysfsProbe, AnArmCpuinfoWithoutDmiLeavesVirtualizationUnknownNotNone) {
    ScratchTree tree;
    tree.write("proc/cpuinfo", "processor\t: 0\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU architecture: 8\n");
    NodeFacts facts = probe_node_facts(tree.root());
    ASSERT_FALSE(facts.virtualization.is_known());
    EXPECT_NE(facts.virtualization.reason().find("arm64 has none"), std::string::npos) << facts.virtualization.reason();
    EXPECT_EQ(known_or(facts.arch, ""), "aarch64");
}

TEST(ArmSysfsProbe, TheDeviceTreeNamesQemuAndXen) {
    ScratchTree qemu;
    qemu.write("sys/firmware/devicetree/base/compatible", std::string("linux,dummy-virt\0", 17));
    EXPECT_EQ(known_or(probe_node_facts(qemu.root()).virtualization, ""), "qemu");
    ScratchTree xen;
    xen.write("sys/firmware/devicetree/base/hypervisor/compatible", std::string("xen,xen-4.17\0xen,xen\0", 21));
    EXPECT_EQ(known_or(probe_node_facts(xen.root()).virtualization, ""), "xen");
}

TEST(ArmSysfsProbe, PageSizeFromThePmdSizeOnlyWhenItMatchesAPageSize) {
    ScratchTree sixteen;
    sixteen.write("sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "33554432\n");
    EXPECT_EQ(known_or(probe_node_facts(sixteen.root()).page_size, 0), 16384);
    ScratchTree odd;
    odd.write("sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "4194304\n");  // 32-bit x86 without PAE
    auto page = probe_node_facts(odd.root()).page_size;
    ASSERT_FALSE(page.is_known());
    EXPECT_NE(page.reason().find("4194304"), std::string::npos) << page.reason();
    ScratchTree none;
    none.write("proc/cmdline", "ro\n");
    EXPECT_NE(probe_node_facts(none.root()).page_size.reason().find("only known on the live node"), std::string::npos);
}

TEST(ArmSysfsProbe, IommuKindsFromTheirNames) {
    ScratchTree tree;
    for (const char* name : {"dmar0", "ivhd1", "smmu.0x0000000040000000", "smmu3.0x0000000009050000", "viommu"}) {
        tree.write(std::string("sys/class/iommu/") + name + "/.keep", "");
    }
    auto units = probe_node_facts(tree.root()).iommu_units;
    ASSERT_TRUE(units.is_known());
    std::vector<std::string> kinds;
    for (const auto& unit : *units) kinds.push_back(unit.kind);
    EXPECT_EQ(kinds, (std::vector<std::string>{"intel-vt-d", "amd-vi", "arm-smmu", "arm-smmu-v3", ""}));
}

TEST(ArmSysfsProbe, PerCpuCpufreqWinsOverItsPolicy) {
    ScratchTree tree;
    tree.write("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n");
    tree.write("sys/devices/system/cpu/cpu1/topology/core_id", "1\n");
    tree.write("sys/devices/system/cpu/cpufreq/policy0/affected_cpus", "0 1\n");
    tree.write("sys/devices/system/cpu/cpufreq/policy0/scaling_governor", "schedutil\n");
    auto power = probe_node_facts(tree.root()).power;
    ASSERT_TRUE(power.is_known()) << power.reason();
    EXPECT_EQ(power->governor.at(0), "performance");
    EXPECT_EQ(power->governor.at(1), "schedutil");
}

}  // namespace
}  // namespace launchguard
