// power.* and numa.balancing-on against the recorded sysfs trees:
// h100-baremetal (well tuned), misconfigured-node (powersave, 2 idle states,
// no_turbo=1, capped max, numa_balancing=1), azure-vm-degraded (no cpufreq or
// cpuidle) and kvm-guest-2n (cpufreq without cpuidle in a KVM guest).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/launch_fixture.h"
#include "support/rule_harness.h"
#include "unit/rules/node_rules_test_support.h"

namespace launchguard {
namespace {

using testing::launch_from_yaml;
using testing::mentions;
using testing::profile_from_yaml;
using testing::run_rule;
using testing::undecided_because;

std::string only_manual_step(const Finding& finding) {
    EXPECT_EQ(finding.remediation.size(), 1U);
    if (finding.remediation.empty()) return "";
    EXPECT_EQ(finding.remediation.front().kind, RemediationOp::Kind::manual);
    return finding.remediation.front().text;
}

LaunchContext node(const std::string& tree, const std::string& extra = "") {
    return launch_from_yaml("sysfs: sysfs/" + tree + "\n" + extra);
}

// --- power.governor -------------------------------------------------------

TEST(PowerGovernor, WarnsForPowersaveOnEveryCpuWhenTheMaskIsUnknown) {
    auto result = run_rule("power.governor", node("misconfigured-node"));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "power.governor");
    EXPECT_EQ(finding.action, Action::warn);
    EXPECT_EQ(result.evidence("scaling_governor"), "powersave (CPUs 0-3)");
    EXPECT_EQ(result.evidence("expected"), "performance (profile default)");
    EXPECT_TRUE(mentions(result.evidence("cpus_checked"), "0-3 (every CPU: task CPU mask unknown"));
    EXPECT_TRUE(mentions(result.evidence("source"), "misconfigured-node/sys/devices/system/cpu"));
    EXPECT_TRUE(mentions(finding.message, "cpufreq governor is 'powersave' on CPUs 0-3, not 'performance'"));
    EXPECT_TRUE(mentions(only_manual_step(finding), "cpupower frequency-set -g performance"));
}

TEST(PowerGovernor, ChecksOnlyTheTasksCpus) {
    auto result = run_rule("power.governor", node("misconfigured-node", "cpus: 1-2\n"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("scaling_governor"), "powersave (CPUs 1-2)");
    EXPECT_EQ(result.evidence("cpus_checked"), "1-2 (the task's CPU mask)");
}

TEST(PowerGovernor, GroupsCpusByGovernor) {
    auto ctx = node("h100-baremetal");
    ctx.node.power.value().governor[2] = "ondemand";
    auto result = run_rule("power.governor", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("scaling_governor"), "ondemand (CPUs 2)");
}

TEST(PowerGovernor, QuietOnATunedNode) { EXPECT_TRUE(run_rule("power.governor", node("h100-baremetal")).quiet()); }

TEST(PowerGovernor, QuietWhenTheTasksCpusAreFineAndOthersAreNot) {
    auto ctx = node("h100-baremetal", "cpus: 0-1\n");
    ctx.node.power.value().governor[3] = "powersave";
    EXPECT_TRUE(run_rule("power.governor", ctx).quiet());
}

TEST(PowerGovernor, FollowsTheProfilesGovernor) {
    auto powersave = profile_from_yaml("name: eco\ncpu: {governor: powersave}\n");
    EXPECT_TRUE(run_rule("power.governor", node("misconfigured-node"), powersave).quiet());
    auto result = run_rule("power.governor", node("h100-baremetal"), powersave);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("expected"), "powersave (profile eco)");
}

TEST(PowerGovernor, UnknownInAVmWithoutCpufreq) {
    auto result = run_rule("power.governor", node("azure-vm-degraded"));
    EXPECT_TRUE(undecided_because(result, "power.governor", "no cpufreq, cpuidle or turbo settings"));
}

TEST(PowerGovernor, UnknownWhenTheTasksCpusReportNoGovernor) {
    auto result = run_rule("power.governor", node("misconfigured-node", "cpus: 8-9\n"));
    EXPECT_TRUE(undecided_because(result, "power.governor", "only CPUs 0-3 expose one"));
}

// --- power.cstates --------------------------------------------------------

TEST(PowerCstates, WarnsWhenOnlyTwoIdleStatesAreExposed) {
    auto result = run_rule("power.cstates", node("misconfigured-node", "cpus: 0\n"));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "power.cstates");
    EXPECT_EQ(finding.action, Action::warn);
    EXPECT_EQ(result.evidence("idle_states"), "2 (CPUs 0-3)");  // every CPU, not only the task's
    EXPECT_EQ(result.evidence("state_names"), "POLL, C1");
    EXPECT_EQ(result.evidence("min_idle_states"), "3 (profile default)");
    EXPECT_EQ(result.evidence("cpus_checked"), "0-3 (every CPU of the node)");
    EXPECT_TRUE(mentions(finding.message, "CPUs 0-3 expose 2 idle states (POLL, C1), the profile expects at least 3"));
    EXPECT_TRUE(mentions(only_manual_step(finding), "BIOS"));
}

TEST(PowerCstates, NamesKernelParametersThatCapIdleStates) {
    auto ctx =
        node("misconfigured-node", "node: {cmdline: 'ro quiet intel_idle.max_cstate=1 processor.max_cstate=1'}\n");
    auto result = run_rule("power.cstates", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("kernel_cmdline_limits"), "intel_idle.max_cstate=1 processor.max_cstate=1");
    ASSERT_EQ(result.finding().remediation.size(), 2U);
    EXPECT_TRUE(
        mentions(result.finding().remediation[1].text, "remove intel_idle.max_cstate=1 processor.max_cstate=1"));
}

TEST(PowerCstates, QuietWhenTheProfileExpectsFewerStates) {
    auto grace = profile_from_yaml("name: grace\ncpu: {min_idle_states: 2}\n");
    EXPECT_TRUE(run_rule("power.cstates", node("misconfigured-node"), grace).quiet());
}

TEST(PowerCstates, QuietOnATunedNode) { EXPECT_TRUE(run_rule("power.cstates", node("h100-baremetal")).quiet()); }

TEST(PowerCstates, WarnsWhenADeepStateIsDisabled) {
    auto ctx = node("h100-baremetal");
    for (auto& [cpu, states] : ctx.node.power.value().idle_states) states[3].disabled = true;
    auto result = run_rule("power.cstates", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("disabled"), "state3 (C6) (CPUs 0-3)");
    EXPECT_TRUE(mentions(result.finding().message, "deep CPU idle state disabled: state3 (C6) on CPUs 0-3"));
    EXPECT_TRUE(mentions(only_manual_step(result.finding()), "cpupower idle-set -E"));
}

TEST(PowerCstates, QuietWhenOnlyAShallowStateIsDisabled) {
    auto ctx = node("h100-baremetal");
    for (auto& [cpu, states] : ctx.node.power.value().idle_states) states[1].disabled = true;
    EXPECT_TRUE(run_rule("power.cstates", ctx).quiet());
}

TEST(PowerCstates, CountsABareMetalCpuWithoutCpuidleAsZeroStates) {
    auto ctx = node("h100-baremetal");
    ctx.node.power.value().idle_states.clear();
    auto result = run_rule("power.cstates", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("idle_states"), "0 (CPUs 0-3)");
}

TEST(PowerCstates, UnknownInAGuestWithoutCpuidle) {
    auto result = run_rule("power.cstates", node("kvm-guest-2n"));
    EXPECT_TRUE(undecided_because(result, "power.cstates", "kvm guest without cpuidle states"));
}

TEST(PowerCstates, UnknownWithoutPowerFacts) {
    auto result = run_rule("power.cstates", node("azure-vm-degraded"));
    EXPECT_TRUE(undecided_because(result, "power.cstates", "no cpufreq, cpuidle or turbo settings"));
}

// --- power.turbo-off ------------------------------------------------------

TEST(PowerTurboOff, WarnsForNoTurboAndForACappedMaximum) {
    auto result =
        run_rule("power.turbo-off", node("misconfigured-node", "cpus: 0-1\nenv: {SLURM_CPU_FREQ_REQ: '2000000'}\n"));
    ASSERT_EQ(result.findings.size(), 2U);
    const Finding& no_turbo = result.findings[0];
    EXPECT_EQ(no_turbo.rule, "power.turbo-off");
    EXPECT_EQ(no_turbo.action, Action::warn);
    ASSERT_GE(no_turbo.evidence.size(), 1U);
    EXPECT_EQ(no_turbo.evidence[0], (std::pair<std::string, std::string>{"intel_pstate/no_turbo", "1"}));
    EXPECT_TRUE(mentions(only_manual_step(no_turbo), "echo 0 > /sys/devices/system/cpu/intel_pstate/no_turbo"));

    const Finding& capped = result.findings[1];
    EXPECT_EQ(capped.message,
              "scaling_max_freq caps CPUs 0-1 at 2 GHz, below their 3.8 GHz maximum (cpuinfo_max_freq)");
    Evidence expected_prefix{{"scaling_max_freq", "2000000 kHz"},
                             {"cpuinfo_max_freq", "3800000 kHz"},
                             {"cpus_checked", "0-1 (the task's CPU mask)"}};
    ASSERT_GE(capped.evidence.size(), 5U);
    EXPECT_EQ(Evidence(capped.evidence.begin(), capped.evidence.begin() + 3), expected_prefix);
    EXPECT_EQ(capped.evidence[4], (std::pair<std::string, std::string>{"SLURM_CPU_FREQ_REQ", "2000000"}));
    EXPECT_TRUE(mentions(only_manual_step(capped), "cpupower frequency-set -u 3800000kHz"));
}

TEST(PowerTurboOff, WarnsWhenCpufreqBoostIsOff) {
    auto ctx = node("h100-baremetal");
    ctx.node.power.value().intel_no_turbo.reset();
    ctx.node.power.value().cpufreq_boost = false;
    auto result = run_rule("power.turbo-off", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("cpufreq/boost"), "0");
    EXPECT_TRUE(mentions(only_manual_step(result.finding()), "echo 1 > /sys/devices/system/cpu/cpufreq/boost"));
}

TEST(PowerTurboOff, QuietOnATunedNode) { EXPECT_TRUE(run_rule("power.turbo-off", node("h100-baremetal")).quiet()); }

TEST(PowerTurboOff, QuietWhenACapIsOnlyOnCpusOutsideTheMask) {
    auto ctx = node("h100-baremetal", "cpus: 0-1\n");
    ctx.node.power.value().scaling_max_khz[3] = 2000000;
    EXPECT_TRUE(run_rule("power.turbo-off", ctx).quiet());
}

TEST(PowerTurboOff, UnknownWithoutPowerFacts) {
    auto result = run_rule("power.turbo-off", node("azure-vm-degraded"));
    EXPECT_TRUE(undecided_because(result, "power.turbo-off", "cannot tell whether turbo is available"));
}

TEST(PowerTurboOff, UnknownWhenNoTurboSettingIsExposed) {
    auto ctx = node("h100-baremetal");
    ctx.node.power.value().intel_no_turbo.reset();
    ctx.node.power.value().cpuinfo_max_khz.clear();
    auto result = run_rule("power.turbo-off", ctx);
    EXPECT_TRUE(undecided_because(result, "power.turbo-off", "no intel_pstate/no_turbo, no cpufreq/boost"));
}

// --- numa.balancing-on ----------------------------------------------------

TEST(NumaBalancing, WarnsWhenTheKernelBalances) {
    auto result = run_rule("numa.balancing-on", node("misconfigured-node"));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "numa.balancing-on");
    EXPECT_EQ(finding.action, Action::warn);
    EXPECT_EQ(result.evidence("kernel.numa_balancing"), "enabled");
    EXPECT_TRUE(mentions(result.evidence("source"), "misconfigured-node/proc/sys/kernel/numa_balancing"));
    EXPECT_TRUE(mentions(only_manual_step(finding), "sysctl -w kernel.numa_balancing=0"));
}

TEST(NumaBalancing, QuietWhenOff) { EXPECT_TRUE(run_rule("numa.balancing-on", node("h100-baremetal")).quiet()); }

TEST(NumaBalancing, QuietWhenTheProfileAllowsIt) {
    auto allowed = profile_from_yaml("name: tiering\ncpu: {numa_balancing_allowed: true}\n");
    EXPECT_TRUE(run_rule("numa.balancing-on", node("misconfigured-node"), allowed).quiet());
    // The profile decides without the fact.
    EXPECT_TRUE(run_rule("numa.balancing-on", launch_from_yaml("{}"), allowed).quiet());
}

TEST(NumaBalancing, UnknownWhenTheSettingWasNotRead) {
    auto result = run_rule("numa.balancing-on", launch_from_yaml("{}"));
    EXPECT_TRUE(undecided_because(result, "numa.balancing-on", "whether automatic NUMA balancing is on"));
}

}  // namespace
}  // namespace launchguard
