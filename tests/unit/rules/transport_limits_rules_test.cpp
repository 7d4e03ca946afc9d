// mem.nofile-low, the non-root memlock message of mem.memlock,
// nccl.debug-verbose and nccl.version-old.
#include <gtest/gtest.h>

#include <string>

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

// --- mem.nofile-low ---------------------------------------------------------

TEST(MemNofileLow, WarnsALargeJobWithTheUsualSoftLimit) {
    auto result =
        run_rule("mem.nofile-low", launch_from_yaml("job: {nodes: 16, gpus: 128}\ncontainer: {nofile: 1024}\n"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.finding().action, Action::warn);
    EXPECT_TRUE(mentions(result.finding().message,
                         "RLIMIT_NOFILE is 1024, below the 65536 profile default asks for "
                         "a 128-GPU job"));
    EXPECT_EQ(result.evidence("minimum"), "65536 (profile default, jobs of 64+ GPUs)");
    EXPECT_TRUE(mentions(manual_steps(result.finding())[0], "--ulimit nofile=65536"));
}

TEST(MemNofileLow, QuietForSmallJobsEnoughOrUnlimited) {
    EXPECT_TRUE(run_rule("mem.nofile-low", launch_from_yaml("job: {gpus: 8}\ncontainer: {nofile: 1024}\n")).quiet());
    EXPECT_TRUE(run_rule("mem.nofile-low", launch_from_yaml("job: {gpus: 64}\ncontainer: {nofile: 65536}\n")).quiet());
    EXPECT_TRUE(
        run_rule("mem.nofile-low", launch_from_yaml("job: {gpus: 512}\ncontainer: {nofile: unlimited}\n")).quiet());
    // The threshold is at the profile's size: 63 GPUs stay quiet, 64 fire.
    EXPECT_TRUE(run_rule("mem.nofile-low", launch_from_yaml("job: {gpus: 63}\ncontainer: {nofile: 1024}\n")).quiet());
    EXPECT_TRUE(run_rule("mem.nofile-low", launch_from_yaml("job: {gpus: 64}\ncontainer: {nofile: 1024}\n")).fired());
}

TEST(MemNofileLow, ProfileKnobs) {
    auto every_job = profile_from_yaml("name: strict\ncontainer: {open_files_min: 4096, open_files_min_job_gpus: 0}\n");
    EXPECT_TRUE(run_rule("mem.nofile-low", launch_from_yaml("container: {nofile: 1024}\n"), every_job).fired());
    EXPECT_TRUE(run_rule("mem.nofile-low", launch_from_yaml("container: {nofile: 4096}\n"), every_job).quiet());
    auto off = profile_from_yaml("name: off\ncontainer: {open_files_min: 0}\n");
    EXPECT_TRUE(
        run_rule("mem.nofile-low", launch_from_yaml("job: {gpus: 512}\ncontainer: {nofile: 16}\n"), off).quiet());
}

TEST(MemNofileLow, UnknownWithoutTheJobSizeOrTheLimit) {
    EXPECT_TRUE(undecided_because(run_rule("mem.nofile-low", launch_from_yaml("container: {nofile: 1024}\n")),
                                  "mem.nofile-low", "GPU count"));
    EXPECT_TRUE(undecided_because(run_rule("mem.nofile-low", launch_from_yaml("job: {gpus: 128}\n")), "mem.nofile-low",
                                  "RLIMIT_NOFILE"));
}

// --- mem.memlock: the non-root trap ---------------------------------------

TEST(MemMemlockNonRoot, NamesTheTrapWithAndWithoutIpcLock) {
    const std::string node = "hwloc_xml: hwloc/32em64t-2n8c2t-pci-normalio.xml\n";
    auto with_cap = run_rule(
        "mem.memlock", launch_from_yaml(node + "container: {memlock: 8MiB, caps: [CAP_IPC_LOCK], root: false}\n"));
    ASSERT_TRUE(with_cap.fired());
    EXPECT_TRUE(mentions(with_cap.finding().message,
                         "the container's IPC_LOCK does not raise it for a non-root "
                         "process: only the runtime's or the node's limit can"));
    EXPECT_FALSE(with_cap.has_op(RemediationOp::Kind::add_capability));
    auto without =
        run_rule("mem.memlock", launch_from_yaml(node + "container: {memlock: 8MiB, caps: [], root: false}\n"));
    ASSERT_TRUE(without.fired());
    EXPECT_TRUE(mentions(without.finding().message, "adding IPC_LOCK does not raise it for a non-root process"));
    EXPECT_FALSE(without.has_op(RemediationOp::Kind::add_capability));
    // Root: the capability is the fix, and the trap is not mentioned.
    auto root = run_rule("mem.memlock", launch_from_yaml(node + "container: {memlock: 8MiB, caps: [], root: true}\n"));
    ASSERT_TRUE(root.fired());
    EXPECT_FALSE(mentions(root.finding().message, "non-root"));
    EXPECT_TRUE(root.has_op(RemediationOp::Kind::add_capability));
}

// --- nccl.debug-verbose -----------------------------------------------------

TEST(NcclDebugVerbose, WarnsAtInfoAndTraceInAnyCase) {
    for (const char* level : {"INFO", "info", "Trace"}) {
        auto result =
            run_rule("nccl.debug-verbose", launch_from_yaml(std::string("env: {NCCL_DEBUG: ") + level + "}\n"));
        ASSERT_TRUE(result.fired()) << level;
        EXPECT_EQ(result.finding().action, Action::warn);
        EXPECT_EQ(result.set_env("NCCL_DEBUG"), "WARN");
    }
}

TEST(NcclDebugVerbose, QuietAtWarnOrUnset) {
    EXPECT_TRUE(run_rule("nccl.debug-verbose", launch_from_yaml("env: {NCCL_DEBUG: WARN}\n")).quiet());
    EXPECT_TRUE(run_rule("nccl.debug-verbose", launch_from_yaml("env: {}\n")).quiet());
    EXPECT_TRUE(run_rule("nccl.debug-verbose", launch_from_yaml("env: {NCCL_DEBUG: VERSION}\n")).quiet());
}

TEST(NcclDebugVerbose, FromAConfFile) {
    auto result = run_rule("nccl.debug-verbose", launch_from_yaml("files: {/etc/nccl.conf: \"NCCL_DEBUG=INFO\\n\"}\n"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("source"), "/etc/nccl.conf:1");
}

// --- nccl.version-old -------------------------------------------------------

const char* kMin227 = "name: recent\nnccl: {min_version: \"2.27\"}\n";

std::string image_with(const std::string& version, const std::string& dir = "/usr/lib/x86_64-linux-gnu") {
    return "files: {" + dir + "/libnccl.so.2." + version + ": elf}\nsymlinks: {" + dir +
           "/libnccl.so.2: libnccl.so.2." + version + "}\n";
}

TEST(NcclVersionOld, WarnsAnOlderImage) {
    auto result = run_rule("nccl.version-old", launch_from_yaml(image_with("21.5")), profile_from_yaml(kMin227));
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message, "NCCL 2.21.5"));
    EXPECT_EQ(result.evidence("nccl_version"), "2.21.5");
    EXPECT_EQ(result.evidence("library"),
              "/usr/lib/x86_64-linux-gnu/libnccl.so.2 -> /usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5");
    EXPECT_EQ(result.evidence("minimum"), "2.27.0 (profile recent)");
}

TEST(NcclVersionOld, FollowsTheLoadersOrder) {
    // LD_LIBRARY_PATH first: the newer copy there wins over the system's old one.
    auto env = launch_from_yaml(
        "env: {LD_LIBRARY_PATH: /opt/nccl/lib}\n"
        "files: {/opt/nccl/lib/libnccl.so.2.28.9: elf, "
        "/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.1: elf}\n"
        "symlinks: {/opt/nccl/lib/libnccl.so.2: libnccl.so.2.28.9, "
        "/usr/lib/x86_64-linux-gnu/libnccl.so.2: libnccl.so.2.18.1}\n");
    EXPECT_TRUE(run_rule("nccl.version-old", env, profile_from_yaml(kMin227)).quiet());
    // An ld.so.conf.d entry comes before the system directories too.
    auto conf = launch_from_yaml(
        "files: {/etc/ld.so.conf.d/nccl.conf: \"/opt/nccl/lib\\n\", "
        "/opt/nccl/lib/libnccl.so.2.19.3: elf}\n"
        "symlinks: {/opt/nccl/lib/libnccl.so.2: libnccl.so.2.19.3}\n");
    EXPECT_TRUE(run_rule("nccl.version-old", conf, profile_from_yaml(kMin227)).fired());
}

TEST(NcclVersionOld, QuietWithoutAMinimumOrWithARecentImage) {
    EXPECT_TRUE(run_rule("nccl.version-old", launch_from_yaml(image_with("21.5"))).quiet());
    EXPECT_TRUE(run_rule("nccl.version-old", launch_from_yaml(image_with("27.3")), profile_from_yaml(kMin227)).quiet());
}

TEST(NcclVersionOld, LooksOnlyInTheNodesArchitecture) {
    // The loader of an x86_64 task never takes a library from an aarch64
    // multiarch directory (nccl::loader_dirs leaves those out).
    auto arm_only = launch_from_yaml(image_with("21.5", "/usr/lib/aarch64-linux-gnu"));
    auto on_x86 = run_rule("nccl.version-old", arm_only,
                           profile_from_yaml("name: recent\nnode: {arch: x86_64}\nnccl: {min_version: \"2.27\"}\n"));
    EXPECT_TRUE(undecided_because(on_x86, "nccl.version-old", "no libnccl.so.2 is on the loader's path"));
    auto on_arm = run_rule("nccl.version-old", arm_only,
                           profile_from_yaml("name: recent\nnode: {arch: aarch64}\nnccl: {min_version: \"2.27\"}\n"));
    EXPECT_TRUE(on_arm.fired());
}

TEST(NcclVersionOld, UnknownWithoutAVersionedName) {
    auto unversioned =
        run_rule("nccl.version-old", launch_from_yaml("files: {/usr/lib/x86_64-linux-gnu/libnccl.so.2: elf}\n"),
                 profile_from_yaml(kMin227));
    EXPECT_TRUE(undecided_because(unversioned, "nccl.version-old", "carries no version in its file name"));
    auto none = run_rule("nccl.version-old", launch_from_yaml("{}"), profile_from_yaml(kMin227));
    EXPECT_TRUE(undecided_because(none, "nccl.version-old", "no libnccl.so.2 is on the loader's path"));
}

}  // namespace
}  // namespace launchguard
