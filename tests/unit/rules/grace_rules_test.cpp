// The power, virtualization and NUMA rules on Arm, against the Grace trees
// with the shipped gb200-nvl72 profile: grace-gb200-node (a tuned bare-metal
// tray: no finding, and nothing x86-only left undecided) and grace-gb200-vm
// (a KVM guest with a translating virtual SMMUv3, a 4 KiB kernel and NUMA
// balancing on: the findings of field case 1).
#include <gtest/gtest.h>

#include <string>

#include "engine/profile_loader.h"
#include "support/launch_fixture.h"
#include "support/rule_harness.h"
#include "unit/rules/node_rules_test_support.h"

namespace launchguard {
namespace {

using testing::evidence_of;
using testing::launch_from_yaml;
using testing::manual_steps;
using testing::mentions;
using testing::profile_from_yaml;
using testing::run_rule;
using testing::undecided_because;

const Profile& gb200() {
    static const Profile profile = *load_profile("gb200-nvl72");
    return profile;
}

LaunchContext tree(const std::string& name, const std::string& extra = "") {
    return launch_from_yaml("sysfs: sysfs/" + name + "\n" + extra);
}

TEST(GraceNode, NoPowerVirtualizationOrNumaFindingOnATunedTray) {
    const LaunchContext ctx = tree("grace-gb200-node");
    for (const char* rule : {"power.governor", "power.cstates", "power.turbo-off", "numa.balancing-on",
                             "virt.iommu-translating", "virt.iommu-strict", "virt.page-size"}) {
        auto result = run_rule(rule, ctx, gb200());
        EXPECT_TRUE(result.quiet()) << rule << ": " << result.findings.size() << " finding(s), "
                                    << (result.unknowns.empty() ? "" : result.unknowns.front().reason);
    }
}

TEST(GraceNode, OneIdleStateIsNotTooFewOnArm) {
    // The profile asks x86 nodes for 3; Grace has WFI only.
    auto three = profile_from_yaml("name: three\ncpu: {min_idle_states: 3}\n");
    EXPECT_TRUE(run_rule("power.cstates", tree("grace-gb200-node"), three).quiet());
    // The same tree claimed to be x86 by the test: the count applies and fires.
    auto x86 = run_rule("power.cstates", tree("grace-gb200-node", "node: {arch: x86_64}\n"), three);
    ASSERT_TRUE(x86.fired());
    EXPECT_TRUE(mentions(x86.finding().message, "expose 1 idle state (WFI)")) << x86.finding().message;
}

TEST(GraceNode, ADisabledDeepStateStillFiresOnArm) {
    auto result = run_rule("power.cstates", tree("grace-gb200-node"), gb200());
    EXPECT_TRUE(result.quiet());
    // Arm CPUs with deeper PSCI states (not Grace) can have one disabled.
    auto ctx = tree("grace-gb200-node");
    auto& states = ctx.node.power.value().idle_states;
    for (auto& [cpu, list] : states) {
        list.push_back({"cpu-sleep", false});
        list.push_back({"cluster-sleep", true});
    }
    auto disabled = run_rule("power.cstates", ctx, gb200());
    ASSERT_TRUE(disabled.fired());
    EXPECT_TRUE(mentions(disabled.finding().message, "state2 (cluster-sleep)")) << disabled.finding().message;
}

TEST(GraceNode, AGovernorOtherThanPerformanceFires) {
    auto ctx = tree("grace-gb200-node");
    ctx.node.power.value().governor[1] = "schedutil";
    auto result = run_rule("power.governor", ctx, gb200());
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("scaling_governor"), "schedutil (CPUs 1)");
}

TEST(GraceNode, TurboOnArmAsksOnlyAboutACap) {
    auto ctx = tree("grace-gb200-node");
    ctx.node.power.value().scaling_max_khz.clear();
    auto result = run_rule("power.turbo-off", ctx, gb200());
    EXPECT_TRUE(undecided_because(result, "power.turbo-off", "whether the CPU clock is capped"));
    EXPECT_FALSE(mentions(result.unknowns.front().reason, "intel_pstate")) << result.unknowns.front().reason;
}

TEST(GraceNode, IntelStrictOnAnArmCommandLineIsIgnored) {
    auto ctx = tree("grace-gb200-vm");
    ctx.node.kernel_cmdline = Fact<std::string>::known("ro intel_iommu=on,strict", "test");
    EXPECT_TRUE(run_rule("virt.iommu-strict", ctx, gb200()).quiet());
    ctx.node.kernel_cmdline = Fact<std::string>::known("ro iommu.strict=1", "test");
    EXPECT_TRUE(run_rule("virt.iommu-strict", ctx, gb200()).fired());
}

TEST(GraceVm, TheVirtualSmmuTranslatesAndTheFindingBlocks) {
    auto result = run_rule("virt.iommu-translating", tree("grace-gb200-vm"), gb200());
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.action, Action::block);
    EXPECT_TRUE(mentions(finding.message, "in this kvm guest")) << finding.message;
    EXPECT_EQ(result.evidence("iommu_units"), "smmu3.0x0000000009050000 (arm-smmu-v3)");
    EXPECT_EQ(result.evidence("arch"), "aarch64");
    // Arm from the tree itself: only the Arm fix.
    auto steps = manual_steps(finding);
    ASSERT_EQ(steps.size(), 1U);
    EXPECT_TRUE(mentions(steps[0], "iommu.passthrough=1 iommu.strict=0"));
}

TEST(GraceVm, TheArmFixWithoutAnArchitectureComesFromTheSmmu) {
    auto ctx = tree("grace-gb200-vm");
    ctx.node.arch = Fact<std::string>::unknown("test");
    auto result = run_rule("virt.iommu-translating", ctx, profile_from_yaml("name: plain\n"));
    ASSERT_TRUE(result.fired());
    auto steps = manual_steps(result.finding());
    ASSERT_EQ(steps.size(), 1U);
    EXPECT_TRUE(mentions(steps[0], "Arm guests")) << steps[0];
}

TEST(GraceVm, FourKibPagesAgainstTheGraceProfile) {
    auto result = run_rule("virt.page-size", tree("grace-gb200-vm"), gb200());
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.evidence("page_size"), "4 KiB (")) << result.evidence("page_size");
    EXPECT_TRUE(mentions(result.evidence("page_size"), "hpage_pmd_size")) << result.evidence("page_size");
    EXPECT_EQ(result.evidence("expected"), "64 KiB (profile gb200-nvl72)");
}

TEST(GraceVm, NumaBalancingFires) {
    auto result = run_rule("numa.balancing-on", tree("grace-gb200-vm"), gb200());
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("kernel.numa_balancing"), "enabled");
}

TEST(GraceVm, PowerIsUnknownInTheGuestNotAFinding) {
    for (const char* rule : {"power.governor", "power.cstates", "power.turbo-off"}) {
        auto result = run_rule(rule, tree("grace-gb200-vm"), gb200());
        EXPECT_TRUE(result.findings.empty()) << rule;
    }
    EXPECT_TRUE(run_rule("virt.iommu-strict", tree("grace-gb200-vm"), gb200()).quiet());
}

}  // namespace
}  // namespace launchguard
