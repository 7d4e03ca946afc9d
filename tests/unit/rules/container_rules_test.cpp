// shm.small and mem.memlock. RDMA use comes from the topology (mlx5_0 port 1
// ACTIVE in hwloc/32em64t-2n8c2t; no NIC in nvidiaDGX2) or from the profile.
#include <gtest/gtest.h>

#include <string>

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

constexpr const char* kWithIb = "hwloc_xml: hwloc/32em64t-2n8c2t-pci-normalio.xml\n";

// --- shm.small ------------------------------------------------------------

TEST(ShmSmall, PatchesDockersDefaultSixtyFourMib) {
    auto result = run_rule("shm.small", launch_from_yaml("runtime: enroot\ncontainer: {shm: 64MiB}\n"));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "shm.small");
    EXPECT_EQ(finding.action, Action::patch);
    EXPECT_EQ(result.evidence("shm_size"), "64 MiB (test fixture)");
    EXPECT_EQ(result.evidence("minimum"), "1 GiB (profile default)");
    EXPECT_EQ(result.evidence("runtime"), "enroot");
    EXPECT_TRUE(mentions(finding.message, "/dev/shm is 64 MiB, below the 1 GiB minimum of profile default"));
    ASSERT_EQ(finding.remediation.size(), 1U);
    EXPECT_EQ(finding.remediation[0].kind, RemediationOp::Kind::shm_size);
    EXPECT_EQ(finding.remediation[0].bytes, 1ULL << 30);
}

TEST(ShmSmall, UsesTheProfilesMinimum) {
    auto big = profile_from_yaml("name: big-shm\ncontainer: {shm_min: 4GiB}\n");
    auto result = run_rule("shm.small", launch_from_yaml("container: {shm: 2GiB}\n"), big);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.finding().remediation.at(0).bytes, 4ULL << 30);
    EXPECT_EQ(result.evidence("minimum"), "4 GiB (profile big-shm)");
}

TEST(ShmSmall, QuietAtOrAboveTheMinimum) {
    EXPECT_TRUE(run_rule("shm.small", launch_from_yaml("container: {shm: 1GiB}\n")).quiet());
    EXPECT_TRUE(run_rule("shm.small", launch_from_yaml("container: {shm: 32GiB}\n")).quiet());
}

TEST(ShmSmall, QuietWhenTheProfileAsksForNothing) {
    auto none = profile_from_yaml("name: no-shm\ncontainer: {shm_min: 0}\n");
    EXPECT_TRUE(run_rule("shm.small", launch_from_yaml("{}"), none).quiet());
}

TEST(ShmSmall, UnknownWhenTheSizeIsUnknown) {
    auto result = run_rule("shm.small", launch_from_yaml("{}"));
    EXPECT_TRUE(undecided_because(result, "shm.small", "size is unknown"));
}

// The image's NCCL (a versioned libnccl.so.2 in the system directory) and the
// node's driver line, for the cuMem host cases.
std::string shm_launch(const std::string& nccl, const std::string& driver, const std::string& env = "") {
    std::string yaml = "container: {shm: 64MiB}\n";
    if (!nccl.empty()) {
        yaml += "files: {/usr/lib/x86_64-linux-gnu/libnccl.so.2." + nccl +
                ": elf}\nsymlinks: {/usr/lib/x86_64-linux-gnu/libnccl.so.2: libnccl.so.2." + nccl + "}\n";
    }
    if (!driver.empty()) {
        yaml += "node: {nvidia_driver: \"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  " + driver +
                "  Release Build  (dvs-builder@U16)  Thu Oct 10 12:29:05 UTC 2024\"}\n";
    }
    if (!env.empty()) yaml += "env: {" + env + "}\n";
    return yaml;
}

TEST(ShmSmall, DoesNotApplyWhereNcclKeepsItsBuffersInCuMemHostMemory) {
    // NCCL 2.24 and later on a CUDA 12.6 (R560) driver or newer.
    auto result = run_rule("shm.small", launch_from_yaml(shm_launch("24.3", "565.57.01")));
    EXPECT_FALSE(result.fired());
    EXPECT_TRUE(undecided_because(result, "shm.small", "does not apply: NCCL 2.24.3 with driver 565"));
    EXPECT_TRUE(undecided_because(result, "shm.small", "cuMem host memory"));
    // NCCL 2.23 only when asked for with NCCL_CUMEM_HOST_ENABLE=1.
    auto asked = run_rule("shm.small", launch_from_yaml(shm_launch("23.4", "", "NCCL_CUMEM_HOST_ENABLE: \"1\"")));
    EXPECT_FALSE(asked.fired());
    EXPECT_TRUE(undecided_because(asked, "shm.small", "does not apply: NCCL_CUMEM_HOST_ENABLE=1"));
}

TEST(ShmSmall, StillFiresWhereNcclUsesDevShm) {
    // Older NCCL: its shared-memory transport always uses /dev/shm.
    auto old_nccl = run_rule("shm.small", launch_from_yaml(shm_launch("21.5", "565.57.01")));
    ASSERT_TRUE(old_nccl.fired());
    EXPECT_TRUE(mentions(old_nccl.evidence("nccl_version"), "NCCL 2.21.5"));
    // A driver older than CUDA 12.6 keeps NCCL's default off.
    EXPECT_TRUE(run_rule("shm.small", launch_from_yaml(shm_launch("24.3", "550.90.07"))).fired());
    // The variables that turn it off.
    EXPECT_TRUE(
        run_rule("shm.small", launch_from_yaml(shm_launch("27.3", "570.86.15", "NCCL_CUMEM_HOST_ENABLE: \"0\"")))
            .fired());
    EXPECT_TRUE(
        run_rule("shm.small", launch_from_yaml(shm_launch("27.3", "570.86.15", "NCCL_CUMEM_ENABLE: \"0\""))).fired());
    // 2.23 has the variable but leaves it off.
    EXPECT_TRUE(run_rule("shm.small", launch_from_yaml(shm_launch("23.4", "570.86.15"))).fired());
    // An unknown driver or an image without a versioned NCCL: as before.
    EXPECT_TRUE(run_rule("shm.small", launch_from_yaml(shm_launch("27.3", ""))).fired());
    auto no_nccl = run_rule("shm.small", launch_from_yaml(shm_launch("", "570.86.15")));
    ASSERT_TRUE(no_nccl.fired());
    EXPECT_TRUE(mentions(no_nccl.evidence("nccl_version"), "unknown (no libnccl.so.2"));
}

// --- mem.memlock ----------------------------------------------------------

TEST(MemLock, WarnsForALimitedRootContainerOnAnIbNode) {
    auto ctx = launch_from_yaml(std::string(kWithIb) + "container: {memlock: 64KiB, root: true, caps: []}\n");
    auto result = run_rule("mem.memlock", ctx);
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "mem.memlock");
    EXPECT_EQ(finding.action, Action::warn);
    EXPECT_EQ(result.evidence("memlock"), "64 KiB (test fixture)");
    EXPECT_EQ(result.evidence("rdma"), "1 ACTIVE IB/RoCE port (mlx5_0:1)");
    EXPECT_EQ(result.evidence("capabilities"), "none");
    EXPECT_EQ(result.evidence("runs_as_root"), "yes");
    ASSERT_EQ(finding.remediation.size(), 2U);
    EXPECT_EQ(finding.remediation[0].kind, RemediationOp::Kind::add_capability);
    EXPECT_EQ(finding.remediation[0].name, "IPC_LOCK");
    EXPECT_EQ(finding.remediation[1].kind, RemediationOp::Kind::manual);
    EXPECT_TRUE(mentions(finding.remediation[1].text, "--ulimit memlock=-1"));
    EXPECT_TRUE(mentions(finding.remediation[1].text, "PropagateResourceLimitsExcept=MEMLOCK"));
}

TEST(MemLock, IpcLockDoesNotHelpANonRootContainer) {
    auto ctx =
        launch_from_yaml(std::string(kWithIb) + "container: {memlock: 8MiB, root: false, caps: [CAP_IPC_LOCK]}\n");
    auto result = run_rule("mem.memlock", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message, "IPC_LOCK does not raise it for a non-root process"));
    EXPECT_FALSE(result.has_op(RemediationOp::Kind::add_capability));
    EXPECT_TRUE(result.has_op(RemediationOp::Kind::manual));
}

TEST(MemLock, QuietForARootContainerWithIpcLock) {
    auto ctx =
        launch_from_yaml(std::string(kWithIb) + "container: {memlock: 64KiB, root: true, caps: [CAP_IPC_LOCK]}\n");
    EXPECT_TRUE(run_rule("mem.memlock", ctx).quiet());
}

TEST(MemLock, QuietWhenUnlimited) {
    EXPECT_TRUE(
        run_rule("mem.memlock", launch_from_yaml(std::string(kWithIb) + "container: {memlock: unlimited}\n")).quiet());
}

TEST(MemLock, QuietWhenNcclIbIsDisabled) {
    auto ctx = launch_from_yaml(std::string(kWithIb) + "env: {NCCL_IB_DISABLE: '1'}\ncontainer: {memlock: 64KiB}\n");
    EXPECT_TRUE(run_rule("mem.memlock", ctx).quiet());
}

TEST(MemLock, QuietOnANodeWithoutActiveRdmaPorts) {
    auto ctx = launch_from_yaml("hwloc_xml: hwloc/nvidiaDGX2.xml\ncontainer: {memlock: 64KiB}\n");
    EXPECT_TRUE(run_rule("mem.memlock", ctx).quiet());
}

TEST(MemLock, QuietWhenTheProfileDoesNotRequireUnlimited) {
    auto relaxed = profile_from_yaml("name: relaxed\ncontainer: {memlock_unlimited: false}\n");
    EXPECT_TRUE(
        run_rule("mem.memlock", launch_from_yaml(std::string(kWithIb) + "container: {memlock: 64KiB}\n"), relaxed)
            .quiet());
}

TEST(MemLock, TakesRdmaFromTheProfileWhenTheNodeIsNotVisible) {
    // A Kubernetes-like view: the container is known, the node is not.
    auto rdma = profile_from_yaml("name: ib-nodes\nnode: {rdma_nics: 8}\n");
    auto result = run_rule("mem.memlock", launch_from_yaml("container: {memlock: 8MiB}\n"), rdma);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("rdma"), "profile ib-nodes expects 8 RDMA NICs");
    EXPECT_TRUE(result.has_op(RemediationOp::Kind::add_capability));
}

TEST(MemLock, UnknownWhenRdmaUseCannotBeTold) {
    auto result = run_rule("mem.memlock", launch_from_yaml("container: {memlock: 8MiB}\n"));
    EXPECT_TRUE(undecided_because(result, "mem.memlock", "registers memory for RDMA"));
}

TEST(MemLock, UnknownWhenTheLimitIsUnknown) {
    auto result = run_rule("mem.memlock", launch_from_yaml(kWithIb));
    EXPECT_TRUE(undecided_because(result, "mem.memlock", "RLIMIT_MEMLOCK is unknown"));
}

}  // namespace
}  // namespace launchguard
