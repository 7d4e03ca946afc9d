// net.gdr-unavailable, net.verbs-missing, net.imex-channel-missing: does
// NCCL get the transport the node was built for? Node facts come from
// sysfs trees written here (peer-memory markers, driver version); container
// roots are in-memory views with and without libibverbs, its mlx5 provider,
// the uverbs devices, IMEX channels and a versioned libnccl.so.2.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "context/memo_file_view.h"
#include "probe/rooted_file_view.h"
#include "probe/sysfs_probe.h"
#include "support/launch_fixture.h"
#include "support/rule_harness.h"
#include "unit/probe/temp_tree.h"
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

// --- net.gdr-unavailable --------------------------------------------------

const char* kGdrProfile = "name: gdr\nnode: {gpudirect_rdma: true}\n";

LaunchContext node_with(const test::TempTree& tree) {
    LaunchContext ctx = launch_from_yaml("{}");
    ctx.node = probe_node_facts(tree.root());
    return ctx;
}

TEST(NetGdrUnavailable, BlocksWithoutPeerMemoryOnTheProprietaryDriver) {
    test::TempTree tree;
    tree.mkdir("sys/kernel/mm/memory_peers");
    tree.mkdir("sys/module/mlx5_core");
    tree.write("proc/driver/nvidia/version",
               "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\n");
    tree.write("proc/sys/kernel/osrelease", "5.15.0-113-generic\n");
    auto result = run_rule("net.gdr-unavailable", node_with(tree), profile_from_yaml(kGdrProfile));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.action, Action::block);
    EXPECT_TRUE(mentions(finding.message, "no peer-memory module is registered"));
    EXPECT_TRUE(mentions(result.evidence("dmabuf"), "proprietary NVIDIA kernel module"));
    EXPECT_EQ(result.evidence("nvidia_peermem_module"), "not loaded");
    EXPECT_TRUE(mentions(result.evidence("peer_memory"), "/sys/module/nvidia_peermem/version"));
    ASSERT_EQ(manual_steps(finding).size(), 1U);
    EXPECT_TRUE(mentions(manual_steps(finding)[0], "modprobe nvidia_peermem"));
}

TEST(NetGdrUnavailable, BlocksOnAKernelWithoutDmabufRdma) {
    test::TempTree tree;
    tree.mkdir("sys/module");
    tree.write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15\n");
    tree.write("proc/sys/kernel/osrelease", "5.4.0-150-generic\n");
    auto result = run_rule("net.gdr-unavailable", node_with(tree), profile_from_yaml(kGdrProfile));
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.evidence("dmabuf"), "Linux 5.4.0-150-generic predates"));
}

TEST(NetGdrUnavailable, DmabufSwitchedOffInTheTaskCounts) {
    test::TempTree tree;
    tree.mkdir("sys/module");
    LaunchContext ctx = node_with(tree);
    ctx.env = Fact<Environment>::known({{"NCCL_DMABUF_ENABLE", "0"}}, "test");
    auto result = run_rule("net.gdr-unavailable", ctx, profile_from_yaml(kGdrProfile));
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.evidence("dmabuf"), "NCCL_DMABUF_ENABLE=0"));
}

TEST(NetGdrUnavailable, UnknownNotMissingWhenDmabufMayWork) {
    test::TempTree tree;
    tree.mkdir("sys/module");
    tree.write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.86.10\n");
    tree.write("proc/sys/kernel/osrelease", "6.8.0-1021-nvidia-64k\n");
    auto result = run_rule("net.gdr-unavailable", node_with(tree), profile_from_yaml(kGdrProfile));
    EXPECT_TRUE(undecided_because(result, "net.gdr-unavailable", "driver query"));
}

TEST(NetGdrUnavailable, QuietWithAnyOfNcclsPeerMemoryMarkers) {
    for (const char* marker : {"sys/kernel/mm/memory_peers/nv_mem/version",
                               "sys/kernel/mm/memory_peers/nv_mem_nc/version", "sys/module/nvidia_peermem/version"}) {
        test::TempTree tree;
        tree.write(marker, "1\n");
        tree.write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01\n");
        EXPECT_TRUE(run_rule("net.gdr-unavailable", node_with(tree), profile_from_yaml(kGdrProfile)).quiet()) << marker;
    }
}

TEST(NetGdrUnavailable, QuietWhenTheProfileDoesNotNeedGdr) {
    test::TempTree tree;
    tree.mkdir("sys/module");
    tree.write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01\n");
    EXPECT_TRUE(run_rule("net.gdr-unavailable", node_with(tree)).quiet());
}

TEST(NetGdrUnavailable, UnknownWithoutNodeFacts) {
    auto result = run_rule("net.gdr-unavailable", launch_from_yaml("{}"), profile_from_yaml(kGdrProfile));
    EXPECT_TRUE(undecided_because(result, "net.gdr-unavailable", "GPUDirect RDMA"));
}

// --- net.verbs-missing ----------------------------------------------------

// 32em64t: mlx5_0 port 1 ACTIVE; hwloc names no driver, so the provider
// follows the device name (mlx5) and any uverbs device will do.
const std::string kIbNode = "hwloc_xml: hwloc/32em64t-2n8c2t-pci-normalio.xml\njob: {nodes: 4, gpus: 32}\n";
const std::string kVerbs =
    "files:\n"
    "  /usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.50.0: elf\n"
    "  /usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so: elf\n"
    "symlinks: {/usr/lib/x86_64-linux-gnu/libibverbs.so.1: libibverbs.so.1.14.50.0}\n";
const std::string kDevices = "devices: [/dev/infiniband/uverbs0, /dev/infiniband/rdma_cm]\n";

TEST(NetVerbsMissing, QuietWithVerbsProviderAndDevices) {
    EXPECT_TRUE(run_rule("net.verbs-missing", launch_from_yaml(kIbNode + kVerbs + kDevices)).quiet());
}

TEST(NetVerbsMissing, BlocksAnImageWithoutLibibverbs) {
    auto result = run_rule("net.verbs-missing", launch_from_yaml(kIbNode + kDevices));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.action, Action::block);
    EXPECT_TRUE(mentions(finding.message, "no libibverbs.so.1 on the library path"));
    EXPECT_TRUE(mentions(finding.message, "falls back to TCP sockets"));
    EXPECT_TRUE(mentions(result.evidence("searched"), "/usr/lib/x86_64-linux-gnu"));
    EXPECT_TRUE(mentions(manual_steps(finding)[0], "ibverbs-providers"));
}

TEST(NetVerbsMissing, BlocksAnImageWithoutTheHcasProvider) {
    auto result = run_rule("net.verbs-missing",
                           launch_from_yaml(kIbNode + kDevices +
                                            "files:\n"
                                            "  /usr/lib/x86_64-linux-gnu/libibverbs.so.1: elf\n"
                                            "  /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so: elf\n"));
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message, "no libmlx5-rdmav*.so verbs provider"));
    EXPECT_EQ(result.evidence("libibverbs"), "/usr/lib/x86_64-linux-gnu/libibverbs.so.1");
}

TEST(NetVerbsMissing, BlocksAContainerWithoutUverbsDevices) {
    auto result = run_rule("net.verbs-missing", launch_from_yaml(kIbNode + kVerbs + "directories: [/dev]\n"));
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message, "no /dev/infiniband/uverbs*"));
    EXPECT_TRUE(mentions(manual_steps(result.finding()).back(), "--device=/dev/infiniband"));
}

TEST(NetVerbsMissing, NamesTheUverbsDeviceOfEachHcaWhenSysfsDoes) {
    LaunchContext ctx = launch_from_yaml(kIbNode + kVerbs + "devices: [/dev/infiniband/uverbs0]\n");
    auto& nic = ctx.topology.value().nics.front();
    nic.driver = "mlx5_core";
    nic.uverbs = {"uverbs1"};
    auto result = run_rule("net.verbs-missing", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message, "no /dev/infiniband/uverbs1 (mlx5_0)"));
    EXPECT_EQ(result.evidence("hcas"), "mlx5_0 (mlx5_core) uverbs1");
}

TEST(NetVerbsMissing, NcclIbverbsLibIsLookedUpFirst) {
    auto result =
        run_rule("net.verbs-missing", launch_from_yaml(kIbNode + kDevices +
                                                       "env: {NCCL_IBVERBS_LIB: /opt/mofed/lib/libibverbs.so.1}\n"
                                                       "files:\n"
                                                       "  /opt/mofed/lib/libibverbs.so.1: elf\n"
                                                       "  /opt/mofed/lib/libibverbs/libmlx5-rdmav34.so: elf\n"));
    EXPECT_TRUE(result.quiet());
}

TEST(NetVerbsMissing, QuietForSingleNodeJobsAndWhenIbIsOffOrAnotherNetIsChosen) {
    const std::string bare = "hwloc_xml: hwloc/32em64t-2n8c2t-pci-normalio.xml\n";
    EXPECT_TRUE(run_rule("net.verbs-missing", launch_from_yaml(bare + "job: {nodes: 1}\n")).quiet());
    EXPECT_TRUE(run_rule("net.verbs-missing", launch_from_yaml(kIbNode + "env: {NCCL_IB_DISABLE: '1'}\n")).quiet());
    EXPECT_TRUE(run_rule("net.verbs-missing", launch_from_yaml(kIbNode + "env: {NCCL_NET: Socket}\n")).quiet());
    // NCCL_NET=IB is the guard: the container still needs verbs.
    EXPECT_TRUE(run_rule("net.verbs-missing", launch_from_yaml(kIbNode + "env: {NCCL_NET: ib}\n")).fired());
    // A node without RDMA.
    EXPECT_TRUE(
        run_rule("net.verbs-missing", launch_from_yaml("hwloc_xml: hwloc/nvidiaDGX2.xml\njob: {nodes: 4}\n")).quiet());
}

TEST(NetVerbsMissing, UnknownWhenTheViewCannotTell) {
    auto result =
        run_rule("net.verbs-missing", launch_from_yaml(kIbNode + kDevices +
                                                       "unknown_files: [/usr/lib/x86_64-linux-gnu/libibverbs.so, "
                                                       "/usr/lib/x86_64-linux-gnu/libibverbs.so.1]\n"));
    EXPECT_TRUE(undecided_because(result, "net.verbs-missing", "cannot say whether"));
    auto no_nodes =
        run_rule("net.verbs-missing", launch_from_yaml("hwloc_xml: hwloc/32em64t-2n8c2t-pci-normalio.xml\n"));
    EXPECT_TRUE(undecided_because(no_nodes, "net.verbs-missing", "node count"));
}

// A real container root with libibverbs but none of the mlx5 provider in
// /lib/libibverbs and /other/libibverbs, 100 other providers in each, and a
// uverbs device; the check's view of it bounded as the engine bounds it, or
// tighter.
struct VerbsRoot {
    test::TempTree tree;
    RootedFileView rooted{tree.path("root")};

    VerbsRoot() {
        tree.write("root/lib/libibverbs.so.1", "elf");
        tree.write("root/dev/infiniband/uverbs0", "");
        for (int i = 0; i < 100; ++i) {
            tree.write("root/lib/libibverbs/libp" + std::to_string(i) + "-rdmav34.so", "");
            tree.write("root/other/libibverbs/libq" + std::to_string(i) + "-rdmav34.so", "");
        }
    }
    [[nodiscard]] testing::RuleResult check(const std::string& library_path, std::size_t max_listed) const {
        LaunchContext ctx = launch_from_yaml(kIbNode + "env: {LD_LIBRARY_PATH: \"" + library_path + "\"}\n");
        ctx.files = std::make_shared<MemoFileView>(rooted, kMaxLookupsPerCheck, max_listed);
        return run_rule("net.verbs-missing", ctx);
    }
};

TEST(NetVerbsMissing, OnARealRootAMissingProviderBlocks) {
    const VerbsRoot root;
    auto result = root.check("/lib:/other", kMaxListedPerCheck);
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message, "no libmlx5-rdmav*.so verbs provider"));
}

TEST(NetVerbsMissing, AProviderFolderPastTheListingBoundIsUnknownNotMissing) {
    // Room for /lib/libibverbs, not for /other/libibverbs as well.
    const VerbsRoot root;
    auto result = root.check("/lib:/other", 150);
    EXPECT_TRUE(undecided_because(result, "net.verbs-missing",
                                  "/other/libibverbs (not looked at: launchguard's bound of 150 directory entries"))
        << (result.fired() ? result.findings.front().message : "");
}

TEST(NetVerbsMissing, ProvidersPastTheLibraryDirectoryBoundAreUnknownNotMissing) {
    const VerbsRoot root;
    std::string path = "/lib";
    for (int i = 0; i < 300; ++i) path += ":/d" + std::to_string(i);
    auto result = root.check(path, kMaxListedPerCheck);
    EXPECT_TRUE(undecided_because(result, "net.verbs-missing", "of 256 library directories per check was reached"));
}

// --- net.imex-channel-missing --------------------------------------------

const char* kNvl72 = "name: nvl72\nnode: {mnnvl: true, grace: true}\n";
const std::string kNccl(const std::string& version) {
    return "files: {/usr/lib/aarch64-linux-gnu/libnccl.so.2." + version +
           ": elf}\nsymlinks: {/usr/lib/aarch64-linux-gnu/libnccl.so.2: libnccl.so.2." + version + "}\n";
}

TEST(NetImexChannelMissing, FatalFromNccl227) {
    auto result = run_rule("net.imex-channel-missing",
                           launch_from_yaml("job: {nodes: 18}\ndirectories: [/dev]\n" + kNccl("27.3")),
                           profile_from_yaml(kNvl72));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.action, Action::block);
    EXPECT_TRUE(mentions(finding.message, "NCCL 2.27.3 fails communicator init"));
    EXPECT_TRUE(mentions(finding.message, "Check the IMEX channel configuration"));
    EXPECT_TRUE(mentions(result.evidence("nccl_version"), "2.27.3 (/usr/lib/aarch64-linux-gnu/libnccl.so.2 -> "));
    EXPECT_TRUE(mentions(manual_steps(finding)[0], "NVIDIA_IMEX_CHANNELS=0"));
}

TEST(NetImexChannelMissing, AChannelFolderTheCheckCouldNotListIsUnknownNotEmpty) {
    test::TempTree tree;
    tree.write("root/dev/nvidia-caps-imex-channels/channel0", "");
    const RootedFileView rooted(tree.path("root"));
    auto check = [&](std::size_t max_listed) {
        LaunchContext ctx = launch_from_yaml("job: {nodes: 18}\n");
        ctx.files = std::make_shared<MemoFileView>(rooted, kMaxLookupsPerCheck, max_listed);
        return run_rule("net.imex-channel-missing", ctx, profile_from_yaml(kNvl72));
    };
    EXPECT_TRUE(check(kMaxListedPerCheck).quiet());
    // No listing left in the check (the library path took it): not "no channel".
    EXPECT_TRUE(undecided_because(check(0), "net.imex-channel-missing", "not looked at: launchguard's bound"));
}

TEST(NetImexChannelMissing, SilentFallbackBefore227) {
    auto result = run_rule("net.imex-channel-missing", launch_from_yaml("job: {nodes: 2}\n" + kNccl("25.1")),
                           profile_from_yaml(kNvl72));
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message, "NCCL 2.25.1 silently skips multi-node NVLink"));
}

TEST(NetImexChannelMissing, UnknownVersionNamesBothBehaviours) {
    auto result =
        run_rule("net.imex-channel-missing", launch_from_yaml("job: {nodes: 2}\n"), profile_from_yaml(kNvl72));
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message, "2.27.3 and later fail"));
    EXPECT_TRUE(mentions(result.evidence("nccl_version"), "unknown: no libnccl.so.2"));
}

TEST(NetImexChannelMissing, ObsoleteForAnNcclWithoutMnnvlSaysSo) {
    auto result = run_rule("net.imex-channel-missing", launch_from_yaml("job: {nodes: 2}\n" + kNccl("19.3")),
                           profile_from_yaml(kNvl72));
    EXPECT_TRUE(undecided_because(result, "net.imex-channel-missing", "does not apply: NCCL 2.19.3"));
}

TEST(NetImexChannelMissing, QuietWithAChannelOrWhenNotWanted) {
    const std::string channel = "devices: [/dev/nvidia-caps-imex-channels/channel0]\n";
    EXPECT_TRUE(
        run_rule("net.imex-channel-missing", launch_from_yaml("job: {nodes: 2}\n" + channel), profile_from_yaml(kNvl72))
            .quiet());
    EXPECT_TRUE(run_rule("net.imex-channel-missing",
                         launch_from_yaml("job: {nodes: 2}\nenv: {NCCL_MNNVL_ENABLE: '0'}\n"),
                         profile_from_yaml(kNvl72))
                    .quiet());
    EXPECT_TRUE(
        run_rule("net.imex-channel-missing", launch_from_yaml("job: {nodes: 1}\n"), profile_from_yaml(kNvl72)).quiet());
    EXPECT_TRUE(run_rule("net.imex-channel-missing", launch_from_yaml("job: {nodes: 2}\n")).quiet());
    // NCCL_MNNVL_ENABLE=1 checks MNNVL even for one node.
    EXPECT_TRUE(run_rule("net.imex-channel-missing",
                         launch_from_yaml("job: {nodes: 1}\nenv: {NCCL_MNNVL_ENABLE: '1'}\n"),
                         profile_from_yaml(kNvl72))
                    .fired());
}

// --- net.gdr-level-low and the image's NCCL --------------------------------

TEST(NetGdrLevelLowByVersion, PxbOnGraceIsTheDefaultBeforeNccl227) {
    const char* grace = "name: grace\nnode: {grace: true}\n";
    EXPECT_TRUE(run_rule("net.gdr-level-low", launch_from_yaml("env: {NCCL_NET_GDR_LEVEL: PXB}\n" + kNccl("26.2")),
                         profile_from_yaml(grace))
                    .quiet());
    EXPECT_TRUE(run_rule("net.gdr-level-low", launch_from_yaml("env: {NCCL_NET_GDR_LEVEL: PXB}\n" + kNccl("27.3")),
                         profile_from_yaml(grace))
                    .fired());
}

}  // namespace
}  // namespace launchguard
