// virt.* rules against the recorded trees: azure-vm-degraded (every IOMMU
// group DMA-FQ, no topology that matches it), kvm-guest-2n together with the
// hwloc export 32em64t-2n8c2t whose bus ids it matches, and h100-baremetal
// (identity groups, iommu=pt).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/launch_fixture.h"
#include "support/rule_harness.h"
#include "unit/rules/node_rules_test_support.h"

namespace launchguard {
namespace {

using testing::launch_from_yaml;
using testing::manual_steps;
using testing::mentions;
using testing::profile_from_yaml;
using testing::run_rule;
using testing::undecided_because;

constexpr const char* kKvmGuest = "hwloc_xml: hwloc/32em64t-2n8c2t-pci-normalio.xml\nsysfs: sysfs/kvm-guest-2n\n";

// --- virt.iommu-translating -----------------------------------------------

TEST(VirtIommuTranslating, WarnsInAnAzureVmWhereEveryGroupTranslates) {
    auto result = run_rule("virt.iommu-translating", launch_from_yaml("sysfs: sysfs/azure-vm-degraded\n"));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "virt.iommu-translating");
    EXPECT_EQ(finding.action, Action::warn);
    EXPECT_EQ(result.evidence("translated"),
              "devices 0001:00:00.0 in IOMMU group 0 (DMA-FQ); devices 0101:00:00.0 in IOMMU group 1 (DMA-FQ)");
    EXPECT_TRUE(mentions(result.evidence("virtualization"), "microsoft (")) << result.evidence("virtualization");
    EXPECT_TRUE(mentions(result.evidence("kernel_cmdline"), "BOOT_IMAGE=/boot/vmlinuz-5.15.0-1061-azure"));
    EXPECT_TRUE(mentions(finding.message,
                         "in this microsoft guest: the IOMMU translates their DMA (no "
                         "iommu.passthrough=1 on the kernel command line)"));
    // Architecture unknown from a recorded tree: both forms of the fix.
    auto steps = manual_steps(finding);
    ASSERT_EQ(steps.size(), 2U);
    EXPECT_TRUE(mentions(steps[0], "iommu.passthrough=1 iommu.strict=0"));
    EXPECT_TRUE(mentions(steps[1], "iommu=pt"));
}

TEST(VirtIommuTranslating, NamesTheGpusAndNicsFromTheTopology) {
    auto result =
        run_rule("virt.iommu-translating", launch_from_yaml(std::string(kKvmGuest) + "node: {arch: x86_64}\n"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("translated"),
              "GPU 0 (0000:84:00.0) in IOMMU group 12 (DMA-FQ); GPU 1 (0000:03:00.0) in IOMMU group 13 (DMA-FQ); "
              "NIC mlx5_0 (0000:04:00.0) in IOMMU group 15 (DMA-FQ)");
    EXPECT_EQ(result.evidence("arch"), "x86_64");
    auto steps = manual_steps(result.finding());
    ASSERT_EQ(steps.size(), 1U);
    EXPECT_TRUE(mentions(steps[0], "x86 guests: add iommu=pt"));
}

TEST(VirtIommuTranslating, TheMessageSummarisesAndTheEvidenceListsEveryDevice) {
    auto result =
        run_rule("virt.iommu-translating", launch_from_yaml(std::string(kKvmGuest) + "node: {arch: x86_64}\n"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.finding().message.rfind("2 GPUs and 1 NIC in this kvm guest: ", 0), 0U)
        << result.finding().message;
    EXPECT_FALSE(mentions(result.finding().message, "0000:84:00.0")) << result.finding().message;
    EXPECT_TRUE(mentions(result.evidence("translated"), "GPU 0 (0000:84:00.0) in IOMMU group 12"));
}

TEST(VirtIommuTranslating, BlocksOnGraceProfiles) {
    auto ctx = launch_from_yaml(std::string(kKvmGuest) + "node: {arch: aarch64}\n");
    auto grace = profile_from_yaml("name: grace-vm\nnode: {grace: true, virtual_machine: true}\n");
    auto result = run_rule("virt.iommu-translating", ctx, grace);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.finding().action, Action::block);
    EXPECT_EQ(result.evidence("profile"), "grace-vm requires IOMMU passthrough");
    auto steps = manual_steps(result.finding());
    ASSERT_EQ(steps.size(), 1U);
    EXPECT_TRUE(mentions(steps[0], "arm_smmu_v3.disable_msipolling=1"));

    auto required = profile_from_yaml("name: vm\nvirtualization: {require_iommu_passthrough: true}\n");
    EXPECT_EQ(run_rule("virt.iommu-translating", ctx, required).finding().action, Action::block);
}

TEST(VirtIommuTranslating, QuietOnBareMetal) {
    EXPECT_TRUE(run_rule("virt.iommu-translating", launch_from_yaml("sysfs: sysfs/h100-baremetal\n")).quiet());
}

TEST(VirtIommuTranslating, QuietInAVmWhoseGroupsAreIdentity) {
    auto ctx = launch_from_yaml("sysfs: sysfs/azure-vm-degraded\nnode: {cmdline: 'ro iommu.passthrough=1'}\n");
    for (auto& group : ctx.node.iommu_groups.value()) group.type = "identity";
    EXPECT_TRUE(run_rule("virt.iommu-translating", ctx).quiet());
}

TEST(VirtIommuTranslating, QuietInAVmWithoutAnIommu) {
    auto ctx = launch_from_yaml("sysfs: sysfs/azure-vm-degraded\n");
    ctx.node.iommu_groups = Fact<std::vector<IommuGroup>>::known({}, "/sys/kernel/iommu_groups absent: IOMMU disabled");
    EXPECT_TRUE(run_rule("virt.iommu-translating", ctx).quiet());
}

TEST(VirtIommuTranslating, QuietWhenOnlyOtherDevicesTranslate) {
    // GPU 2 (group 14) is identity; the SATA controller's group 2 is DMA but is neither GPU nor NIC.
    auto ctx = launch_from_yaml(kKvmGuest);
    for (auto& group : ctx.node.iommu_groups.value()) {
        if (group.id != "2") group.type = "identity";
    }
    EXPECT_TRUE(run_rule("virt.iommu-translating", ctx).quiet());
}

TEST(VirtIommuTranslating, ReportsAPerGroupOverrideDespitePassthroughOnTheCmdline) {
    auto ctx = launch_from_yaml("sysfs: sysfs/azure-vm-degraded\nnode: {cmdline: 'ro iommu.passthrough=1'}\n");
    auto result = run_rule("virt.iommu-translating", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message, "although the kernel command line has iommu.passthrough=1"));
    auto steps = manual_steps(result.finding());
    ASSERT_EQ(steps.size(), 1U);
    EXPECT_TRUE(mentions(steps[0], "/sys/kernel/iommu_groups/<N>/type"));
}

TEST(VirtIommuTranslating, PassthroughZeroIsNotPassthrough) {
    auto ctx = launch_from_yaml("sysfs: sysfs/azure-vm-degraded\nnode: {cmdline: 'ro iommu.passthrough=0'}\n");
    auto result = run_rule("virt.iommu-translating", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message, "no iommu.passthrough=1 on the kernel command line"));
}

TEST(VirtIommuTranslating, UnknownWhenGroupsAreMixedAndTheTopologyIsUnknown) {
    auto result = run_rule("virt.iommu-translating", launch_from_yaml("sysfs: sysfs/kvm-guest-2n\n"));
    EXPECT_TRUE(undecided_because(result, "virt.iommu-translating", "only some IOMMU groups translate"));
}

TEST(VirtIommuTranslating, UnknownWhenIommuGroupsWereNotRead) {
    auto result = run_rule("virt.iommu-translating", launch_from_yaml("{}"));
    EXPECT_TRUE(undecided_because(result, "virt.iommu-translating",
                                  "cannot tell whether the IOMMU translates GPU and NIC DMA"));
}

TEST(VirtIommuTranslating, UnknownVirtualizationIsDecidedByAVmProfile) {
    auto ctx = launch_from_yaml("sysfs: sysfs/azure-vm-degraded\n");
    ctx.node.virtualization = Fact<std::string>::unknown("no DMI, no cpuinfo");
    auto result = run_rule("virt.iommu-translating", ctx);
    EXPECT_TRUE(undecided_because(result, "virt.iommu-translating",
                                  "cannot tell whether this node is a VM because no DMI, no cpuinfo"));

    auto vm = profile_from_yaml("name: ndv5\nnode: {virtual_machine: true}\n");
    auto decided = run_rule("virt.iommu-translating", ctx, vm);
    ASSERT_TRUE(decided.fired());
    EXPECT_TRUE(mentions(decided.finding().message, "in this VM (profile ndv5)"));
}

// --- virt.iommu-strict ----------------------------------------------------

TEST(VirtIommuStrict, WarnsForIommuStrictOne) {
    auto result = run_rule("virt.iommu-strict", launch_from_yaml("sysfs: sysfs/kvm-guest-2n\n"));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "virt.iommu-strict");
    EXPECT_EQ(finding.action, Action::warn);
    EXPECT_EQ(result.evidence("parameter"), "iommu.strict=1");
    EXPECT_TRUE(mentions(result.evidence("source"), "kvm-guest-2n/proc/cmdline"));
    ASSERT_EQ(finding.remediation.size(), 1U);
    EXPECT_TRUE(mentions(finding.remediation[0].text, "remove iommu.strict=1"));
}

TEST(VirtIommuStrict, RecognisesTheVendorSpellings) {
    auto intel = launch_from_yaml("node: {cmdline: 'ro intel_iommu=on,strict'}\n");
    EXPECT_EQ(run_rule("virt.iommu-strict", intel).evidence("parameter"), "intel_iommu=on,strict");
    auto amd = launch_from_yaml("node: {cmdline: 'ro amd_iommu=fullflush'}\n");
    EXPECT_EQ(run_rule("virt.iommu-strict", amd).evidence("parameter"), "amd_iommu=fullflush");
    auto yes = launch_from_yaml("node: {cmdline: 'iommu.strict=y'}\n");
    EXPECT_EQ(run_rule("virt.iommu-strict", yes).evidence("parameter"), "iommu.strict=y");
}

TEST(VirtIommuStrict, TheLastParameterWins) {
    EXPECT_TRUE(
        run_rule("virt.iommu-strict", launch_from_yaml("node: {cmdline: 'iommu.strict=1 iommu.strict=0'}\n")).quiet());
    EXPECT_TRUE(
        run_rule("virt.iommu-strict", launch_from_yaml("node: {cmdline: 'iommu.strict=0 iommu.strict=1'}\n")).fired());
}

TEST(VirtIommuStrict, QuietForLazyOrUnsetStrictness) {
    EXPECT_TRUE(run_rule("virt.iommu-strict", launch_from_yaml("node: {cmdline: 'ro iommu.strict=0'}\n")).quiet());
    EXPECT_TRUE(run_rule("virt.iommu-strict", launch_from_yaml("sysfs: sysfs/h100-baremetal\n")).quiet());
}

TEST(VirtIommuStrict, QuietWhenNoGroupTranslates) {
    // h100-baremetal's groups are identity: strictness has nothing to apply to.
    auto ctx = launch_from_yaml("sysfs: sysfs/h100-baremetal\nnode: {cmdline: 'ro iommu=pt iommu.strict=1'}\n");
    EXPECT_TRUE(run_rule("virt.iommu-strict", ctx).quiet());
}

TEST(VirtIommuStrict, UnknownWithoutTheKernelCommandLine) {
    auto result = run_rule("virt.iommu-strict", launch_from_yaml("{}"));
    EXPECT_TRUE(undecided_because(result, "virt.iommu-strict", "whether IOMMU invalidation is strict"));
}

// --- virt.page-size -------------------------------------------------------

TEST(VirtPageSize, WarnsWhenAGraceProfileGetsFourKibPages) {
    auto grace = profile_from_yaml("name: grace\nnode: {page_size: 64KiB}\n");
    auto result = run_rule("virt.page-size", launch_from_yaml("node: {page_size: 4KiB, arch: aarch64}\n"), grace);
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "virt.page-size");
    EXPECT_EQ(finding.action, Action::warn);
    EXPECT_EQ(result.evidence("page_size"), "4 KiB (test fixture)");
    EXPECT_EQ(result.evidence("expected"), "64 KiB (profile grace)");
    EXPECT_EQ(result.evidence("arch"), "aarch64");
    ASSERT_EQ(finding.remediation.size(), 1U);
    EXPECT_TRUE(mentions(finding.remediation[0].text, "64 KiB-page arm64 kernel"));
}

TEST(VirtPageSize, QuietWhenTheSizesMatchOrTheProfileIsSilent) {
    auto x86 = profile_from_yaml("name: x86\nnode: {page_size: 4KiB}\n");
    EXPECT_TRUE(run_rule("virt.page-size", launch_from_yaml("node: {page_size: 4096}\n"), x86).quiet());
    EXPECT_TRUE(run_rule("virt.page-size", launch_from_yaml("node: {page_size: 64KiB}\n")).quiet());
}

TEST(VirtPageSize, UnknownFromARecordedTree) {
    auto x86 = profile_from_yaml("name: x86\nnode: {page_size: 4KiB}\n");
    auto result = run_rule("virt.page-size", launch_from_yaml("sysfs: sysfs/h100-baremetal\n"), x86);
    EXPECT_TRUE(undecided_because(result, "virt.page-size", "only known on the live node"));
}

}  // namespace
}  // namespace launchguard
