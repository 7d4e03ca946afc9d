// cpu.* rules against the real hwloc exports: 32em64t-2n8c2t (NUMA node 0 =
// CPUs 0-7,16-23 with GPU 1; node 1 = CPUs 8-15,24-31 with GPUs 0, 2, 3 and
// mlx5_0) and nvidiaDGX2 (GPUs 0-7 near CPUs 0-1, GPUs 8-15 near CPUs 24-25).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/profile_loader.h"
#include "rules/rule.h"
#include "support/launch_fixture.h"
#include "support/rule_harness.h"
#include "unit/rules/node_rules_test_support.h"

namespace launchguard {
namespace {

using testing::kDgx2;
using testing::kTwoNode;
using testing::launch_from_yaml;
using testing::manual_steps;
using testing::mentions;
using testing::profile_from_yaml;
using testing::run_rule;
using testing::undecided_because;

// --- cpu.affinity-off-gpu -------------------------------------------------

TEST(CpuAffinityOffGpu, BlocksWhenTheMaskIsOnTheOtherNumaNode) {
    auto result = run_rule("cpu.affinity-off-gpu", launch_from_yaml(std::string(kTwoNode) + "gpus: [0]\ncpus: 0-7\n"));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "cpu.affinity-off-gpu");
    EXPECT_EQ(finding.action, Action::block);
    EXPECT_EQ(finding.severity, Severity::error);
    EXPECT_EQ(result.evidence("cpu_mask"), "0-7 (test fixture)");
    EXPECT_EQ(result.evidence("gpus"), "GPU 0 (0000:84:00.0)");
    EXPECT_EQ(result.evidence("gpu_numa_nodes"), "1");
    EXPECT_EQ(result.evidence("gpu_local_cpus"), "8-15,24-31");
    EXPECT_TRUE(mentions(result.evidence("gpus_source"), "--gpus=0"));
    EXPECT_EQ(result.evidence("NCCL_IGNORE_CPU_AFFINITY"), "unset (NCCL intersects the task mask with the GPU's)");
    EXPECT_TRUE(mentions(finding.message, "CPU mask 0-7 shares no CPU with GPU 0 (0000:84:00.0) on NUMA node 1"));
    auto steps = manual_steps(finding);
    ASSERT_EQ(steps.size(), 2U);
    EXPECT_TRUE(mentions(steps[0], "--gpu-bind=closest --cpu-bind=ldoms"));
    EXPECT_TRUE(mentions(steps[0], "on NUMA node 1 (CPUs 8-15,24-31)"));
    EXPECT_TRUE(mentions(steps[1], "numactl --cpunodebind=1 --membind=1"));
}

TEST(CpuAffinityOffGpu, BlocksOnTheDgx2WhenAGpuOfTheSecondSocketGetsFirstSocketCpus) {
    auto result = run_rule("cpu.affinity-off-gpu", launch_from_yaml(std::string(kDgx2) + "gpus: [8]\ncpus: 0-1\n"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("gpus"), "GPU 8 (0000:b7:00.0)");
    EXPECT_EQ(result.evidence("gpu_local_cpus"), "24-25");
    EXPECT_TRUE(mentions(result.evidence("topology"), "nvidiaDGX2.xml"));
}

TEST(CpuAffinityOffGpu, ResolvesTheGpuFromSlurmStepGpus) {
    auto result = run_rule("cpu.affinity-off-gpu",
                           launch_from_yaml(std::string(kTwoNode) + "env: {SLURM_STEP_GPUS: '1'}\ncpus: 8-15\n"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("gpus"), "GPU 1 (0000:03:00.0)");
    EXPECT_EQ(result.evidence("gpu_local_cpus"), "0-7,16-23");
    EXPECT_EQ(result.evidence("gpus_source"), "SLURM_STEP_GPUS=1");
}

TEST(CpuAffinityOffGpu, QuietWhenTheMaskIsOnTheGpusNode) {
    EXPECT_TRUE(
        run_rule("cpu.affinity-off-gpu", launch_from_yaml(std::string(kTwoNode) + "gpus: [0]\ncpus: 8-9\n")).quiet());
}

TEST(CpuAffinityOffGpu, QuietWhenOneCpuOfTheMaskIsLocal) {
    // Near miss: one local CPU makes NCCL's intersection non-empty (affinity-partial's case).
    EXPECT_TRUE(run_rule("cpu.affinity-off-gpu", launch_from_yaml(std::string(kTwoNode) + "gpus: [0]\ncpus: 0-7,24\n"))
                    .quiet());
}

TEST(CpuAffinityOffGpu, QuietWhenNcclIgnoresTheCpuAffinity) {
    auto ctx = launch_from_yaml(std::string(kTwoNode) + "gpus: [0]\ncpus: 0-7\nenv: {NCCL_IGNORE_CPU_AFFINITY: '1'}\n");
    EXPECT_TRUE(run_rule("cpu.affinity-off-gpu", ctx).quiet());
}

TEST(CpuAffinityOffGpu, QuietWhenAzureStyleNcclConfIgnoresTheCpuAffinity) {
    auto ctx = launch_from_yaml(std::string(kTwoNode) +
                                "gpus: [0]\ncpus: 0-7\nfiles: {/etc/nccl.conf: \"NCCL_IGNORE_CPU_AFFINITY=1\\n\"}\n");
    EXPECT_TRUE(run_rule("cpu.affinity-off-gpu", ctx).quiet());
}

TEST(CpuAffinityOffGpu, ShowsAnExplicitZeroWithItsSource) {
    auto ctx = launch_from_yaml(std::string(kTwoNode) +
                                "gpus: [0]\ncpus: 0-7\nfiles: {/etc/nccl.conf: \"NCCL_IGNORE_CPU_AFFINITY=0\\n\"}\n");
    auto result = run_rule("cpu.affinity-off-gpu", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("NCCL_IGNORE_CPU_AFFINITY"), "0");
    EXPECT_EQ(result.evidence("source"), "/etc/nccl.conf:1");
}

TEST(CpuAffinityOffGpu, QuietWithoutGpus) {
    auto ctx = launch_from_yaml(std::string(kTwoNode) + "env: {CUDA_VISIBLE_DEVICES: ''}\ncpus: 0-7\n");
    EXPECT_TRUE(run_rule("cpu.affinity-off-gpu", ctx).quiet());
}

TEST(CpuAffinityOffGpu, UnknownWhenTheCpuMaskIsUnknown) {
    auto result = run_rule("cpu.affinity-off-gpu", launch_from_yaml(std::string(kTwoNode) + "gpus: [0]\n"));
    EXPECT_TRUE(
        undecided_because(result, "cpu.affinity-off-gpu", "CPU mask is unknown: no CPU mask in the test fixture"));
}

TEST(CpuAffinityOffGpu, UnknownWhenTheTopologyAndSoTheGpusAreUnknown) {
    auto result = run_rule("cpu.affinity-off-gpu", launch_from_yaml("gpus: [0]\ncpus: 0-7\n"));
    EXPECT_TRUE(undecided_because(result, "cpu.affinity-off-gpu", "the task's GPUs are unknown"));
}

TEST(CpuAffinityOffGpu, UnknownWhenTheGpuHasNoCpuLocality) {
    auto ctx = launch_from_yaml(std::string(kTwoNode) + "gpus: [0]\ncpus: 0-7\n");
    ctx.gpus.value().front().local_cpus = CpuSet{};
    ctx.gpus.value().front().numa_node = -1;
    auto result = run_rule("cpu.affinity-off-gpu", ctx);
    EXPECT_TRUE(undecided_because(result, "cpu.affinity-off-gpu", "records no CPUs local to GPU 0 (0000:84:00.0)"));
}

TEST(CpuAffinityOffGpu, UnknownWhenOnlySomeOfSeveralGpusAreRemote) {
    // The task sees GPU 0 (node 1) and GPU 1 (node 0): which one it drives decides.
    auto result =
        run_rule("cpu.affinity-off-gpu", launch_from_yaml(std::string(kTwoNode) + "gpus: [0, 1]\ncpus: 0-7\n"));
    EXPECT_TRUE(undecided_because(result, "cpu.affinity-off-gpu",
                                  "is local to GPU 1 (0000:03:00.0) but has no CPU near GPU 0"));
}

TEST(CpuAffinityOffGpu, NamesEveryGpuWhenAllAreRemote) {
    auto result =
        run_rule("cpu.affinity-off-gpu", launch_from_yaml(std::string(kTwoNode) + "gpus: [0, 2]\ncpus: 0-3\n"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("gpus"), "GPU 0 (0000:84:00.0), GPU 2 (0000:83:00.0)");
    EXPECT_EQ(result.evidence("gpu_numa_nodes"), "1");
    auto steps = manual_steps(result.finding());
    ASSERT_EQ(steps.size(), 2U);
    EXPECT_TRUE(mentions(steps[1], "taskset -c 8-15,24-31"));
}

// --- cpu.affinity-partial -------------------------------------------------

TEST(CpuAffinityPartial, WarnsForAnUnboundTaskSpanningTheOtherSocket) {
    auto result = run_rule("cpu.affinity-partial", launch_from_yaml(std::string(kTwoNode) + "gpus: [0]\ncpus: 0-31\n"));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "cpu.affinity-partial");
    EXPECT_EQ(finding.action, Action::warn);
    EXPECT_EQ(result.evidence("local_overlap"), "8-15,24-31 (16 of 32 CPUs, 50%)");
    EXPECT_EQ(result.evidence("remote_numa_nodes"), "0 (CPUs 0-7,16-23)");
    EXPECT_EQ(result.evidence("min_affinity_overlap"), "0.5 (profile default)");
    EXPECT_TRUE(mentions(finding.message, "16 of its 32 CPUs are on NUMA node 0, where none of its GPUs is"));
    EXPECT_TRUE(mentions(manual_steps(finding).front(), "--cpu-bind=ldoms"));
}

TEST(CpuAffinityPartial, WarnsWhenASingleLocalCpuIsAllThatOverlaps) {
    auto result =
        run_rule("cpu.affinity-partial", launch_from_yaml(std::string(kTwoNode) + "gpus: [0]\ncpus: 0-7,24\n"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("local_overlap"), "24 (1 of 9 CPUs, 11%)");
    EXPECT_EQ(result.evidence("remote_numa_nodes"), "0 (CPUs 0-7)");
}

TEST(CpuAffinityPartial, WarnsOnASmallOverlapWithinOneNumaNode) {
    // A GPU whose locality is narrower than its NUMA node (sub-NUMA clustering).
    auto ctx = launch_from_yaml(std::string(kTwoNode) + "gpus: [0]\ncpus: 8-15\n");
    ctx.gpus.value().front().local_cpus = *CpuSet::parse_list("8-9");
    auto result = run_rule("cpu.affinity-partial", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("local_overlap"), "8-9 (2 of 8 CPUs, 25%)");
    EXPECT_EQ(result.evidence("remote_numa_nodes"), "");
    EXPECT_TRUE(mentions(result.finding().message, "only 25% of its CPUs are near its GPUs"));
}

TEST(CpuAffinityPartial, ProfileThresholdDecidesASmallOverlap) {
    auto ctx = launch_from_yaml(std::string(kTwoNode) + "gpus: [0]\ncpus: 8-15\n");
    ctx.gpus.value().front().local_cpus = *CpuSet::parse_list("8-9");
    auto lenient = profile_from_yaml("name: lenient\ncpu: {min_affinity_overlap: 0.25}\n");
    EXPECT_TRUE(run_rule("cpu.affinity-partial", ctx, lenient).quiet());
    auto strict = profile_from_yaml("name: strict\ncpu: {min_affinity_overlap: 0.3}\n");
    auto result = run_rule("cpu.affinity-partial", ctx, strict);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("min_affinity_overlap"), "0.3 (profile strict)");
}

TEST(CpuAffinityPartial, QuietWhenTheMaskIsTheGpusNumaNode) {
    EXPECT_TRUE(
        run_rule("cpu.affinity-partial", launch_from_yaml(std::string(kTwoNode) + "gpus: [0]\ncpus: 8-15,24-31\n"))
            .quiet());
}

TEST(CpuAffinityPartial, QuietWhenTheTaskSeesGpusOnEveryNode) {
    // No GPU restriction: every GPU is visible, so both NUMA nodes hold one of them.
    EXPECT_TRUE(run_rule("cpu.affinity-partial", launch_from_yaml(std::string(kTwoNode) + "cpus: 0-31\n")).quiet());
}

TEST(CpuAffinityPartial, QuietWhenNothingOverlapsBecauseThatIsOffGpu) {
    EXPECT_TRUE(
        run_rule("cpu.affinity-partial", launch_from_yaml(std::string(kTwoNode) + "gpus: [0]\ncpus: 0-7\n")).quiet());
}

TEST(CpuAffinityPartial, QuietWhenNcclIgnoresTheCpuAffinity) {
    auto ctx =
        launch_from_yaml(std::string(kTwoNode) + "gpus: [0]\ncpus: 0-31\nenv: {NCCL_IGNORE_CPU_AFFINITY: '1'}\n");
    EXPECT_TRUE(run_rule("cpu.affinity-partial", ctx).quiet());
}

TEST(CpuAffinityPartial, UnknownWhenTheCpuMaskIsUnknown) {
    auto result = run_rule("cpu.affinity-partial", launch_from_yaml(std::string(kTwoNode) + "gpus: [0]\n"));
    EXPECT_TRUE(undecided_because(result, "cpu.affinity-partial", "CPU mask is unknown"));
}

// --- cpu.bind-by-id -------------------------------------------------------

testing::RuleResult bind_with(const std::string& env_yaml) {
    return run_rule("cpu.bind-by-id",
                    launch_from_yaml(std::string(kTwoNode) + "gpus: [0]\ncpus: 0-1\nenv: " + env_yaml + "\n"));
}

TEST(CpuBindById, WarnsForMapCpu) {
    auto result =
        bind_with("{SLURM_CPU_BIND: 'quiet,map_cpu:0,1', SLURM_CPU_BIND_TYPE: 'map_cpu:', SLURM_CPU_BIND_LIST: '0,1'}");
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "cpu.bind-by-id");
    EXPECT_EQ(finding.action, Action::warn);
    EXPECT_EQ(result.evidence("SLURM_CPU_BIND"), "quiet,map_cpu:0,1");
    EXPECT_EQ(result.evidence("binding"), "map_cpu:0,1");
    EXPECT_EQ(result.evidence("cpu_mask"), "0-1 (test fixture)");
    EXPECT_EQ(result.evidence("gpu_local_cpus"), "8-15,24-31");
    EXPECT_TRUE(mentions(finding.message, "map_cpu pins local task N to the N-th listed CPU id"));
    EXPECT_TRUE(mentions(manual_steps(finding).front(), "--gpu-bind=closest --cpu-bind=ldoms"));
}

TEST(CpuBindById, WarnsForRankBinding) {
    auto result = bind_with("{SLURM_CPU_BIND: 'verbose,rank'}");
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("binding"), "rank");
}

TEST(CpuBindById, QuietForPerTaskCpuMasksBecauseSlurmWritesThemForItsOwnBindings) {
    // Observed on Slurm 22.05.8 (tests/integration/slurm): the default binding
    // and --cpu-bind=cores reach the task as "quiet,mask_cpu:0x1,0x2", and
    // --cpu-bind=ldoms/sockets as "quiet,mask_cpu:0x3,0x3", with no unit in
    // front; a user's explicit mask_cpu list looks the same, so masks are
    // never taken as binding by id.
    EXPECT_TRUE(bind_with("{SLURM_CPU_BIND: 'quiet,mask_cpu:0x1,0x2'}").quiet());
    EXPECT_TRUE(bind_with("{SLURM_CPU_BIND: 'quiet,mask_cpu:0x3,0xC'}").quiet());
}

TEST(CpuBindById, ReadsTypeAndListWhenOnlyThoseAreSet) {
    auto result = bind_with("{SLURM_CPU_BIND_TYPE: 'map_cpu:', SLURM_CPU_BIND_LIST: '4,5'}");
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("SLURM_CPU_BIND_TYPE"), "map_cpu:");
    EXPECT_EQ(result.evidence("binding"), "map_cpu:4,5");
}

TEST(CpuBindById, QuietForMasksSlurmGeneratedFromATopologyUnit) {
    // slurmd turns --cpu-bind=ldoms/cores into per-task masks and keeps the unit in front.
    EXPECT_TRUE(bind_with("{SLURM_CPU_BIND: 'quiet,ldoms,mask_cpu:0xff00ff00,0x00ff00ff'}").quiet());
    EXPECT_TRUE(bind_with("{SLURM_CPU_BIND: 'quiet,cores,mask_cpu:0x1,0x2'}").quiet());
}

TEST(CpuBindById, QuietForASingleAllocationMask) {
    // What a task sees with automatic binding off (recorded from a real job).
    EXPECT_TRUE(
        bind_with("{SLURM_CPU_BIND: 'quiet,mask_cpu:0xC000500000000000', SLURM_CPU_BIND_TYPE: 'mask_cpu:'}").quiet());
}

TEST(CpuBindById, QuietForLocalityDomainBindings) {
    EXPECT_TRUE(bind_with("{SLURM_CPU_BIND: 'quiet,map_ldom:1,0'}").quiet());
    EXPECT_TRUE(bind_with("{SLURM_CPU_BIND: 'quiet,rank_ldom'}").quiet());
    EXPECT_TRUE(bind_with("{SLURM_CPU_BIND: 'quiet,none'}").quiet());
}

TEST(CpuBindById, QuietOutsideSlurmBinding) { EXPECT_TRUE(bind_with("{SLURM_JOB_ID: '991'}").quiet()); }

TEST(CpuBindById, UnknownWhenTheEnvironmentIsUnknown) {
    auto ctx = launch_from_yaml("cpus: 0-1\n");
    ctx.env = Fact<Environment>::unknown("cannot read /proc/4242/environ");
    auto result = run_rule("cpu.bind-by-id", ctx);
    EXPECT_TRUE(undecided_because(result, "cpu.bind-by-id", "cannot read /proc/4242/environ"));
}

// --- cpu.k8s-not-pinnable -------------------------------------------------

TEST(CpuK8sNotPinnable, IsAKubernetesOnlyRule) {
    const Rule* rule = find_rule("cpu.k8s-not-pinnable");
    ASSERT_NE(rule, nullptr);
    EXPECT_EQ(rule->info().scopes, static_cast<unsigned>(kScopeKubernetes));
    EXPECT_EQ(rule->info().default_action, Action::warn);
}

TEST(CpuK8sNotPinnable, SaysItNeedsThePodSpec) {
    auto result = run_rule("cpu.k8s-not-pinnable", launch_from_yaml("runtime: kubernetes\n"));
    EXPECT_TRUE(undecided_because(result, "cpu.k8s-not-pinnable", "needs the Pod spec"));
}

TEST(CpuK8sNotPinnable, NeverReportsInLiveOrCliEvaluations) {
    auto ctx = launch_from_yaml(std::string(kTwoNode) + "gpus: [0]\ncpus: 0-31\n");
    EvaluationOptions options;
    options.scopes = kScopeLive | kScopeCli | kScopeNode;
    options.applicable = all_remediation_kinds();
    options.only_rules = {"cpu.k8s-not-pinnable"};
    Report report = evaluate(ctx, default_profile(), options);
    EXPECT_EQ(report.rules_evaluated, 0);
    EXPECT_TRUE(report.findings.empty());
    EXPECT_TRUE(report.unknowns.empty());

    options.scopes = kScopeKubernetes;
    report = evaluate(ctx, default_profile(), options);
    EXPECT_EQ(report.rules_evaluated, 1);
    ASSERT_EQ(report.unknowns.size(), 1U);
    EXPECT_EQ(report.unknowns.front().rule, "cpu.k8s-not-pinnable");
}

}  // namespace
}  // namespace launchguard
