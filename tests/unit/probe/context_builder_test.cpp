#include "probe/context_builder.h"

#include <gtest/gtest.h>

#include <limits>

#include "probe/rooted_file_view.h"
#include "support/shared_fixtures.h"
#include "unit/probe/temp_tree.h"

namespace launchguard {
namespace {

const std::string kFixtures = LAUNCHGUARD_FIXTURES;

// Options that never read the live machine's environment or topology.
ProbeOptions replay_options() {
    ProbeOptions o;
    o.root = kFixtures + "/sysfs/h100-baremetal";
    o.proc_root = kFixtures + "/sysfs/h100-baremetal/proc";
    o.sysfs_root = kFixtures + "/sysfs/h100-baremetal";
    o.hwloc_xml = testing::shared_fixture_path("hwloc/nvidiaDGX2.xml");
    o.use_current_process_env = false;
    return o;
}

TEST(ContextBuilderProbeTest, ReplaysARecordedTask) {
    ProbeOptions o = replay_options();
    o.pid = 4242;
    auto ctx = build_context(o);
    ASSERT_TRUE(ctx.ok()) << ctx.error().to_string();
    ASSERT_TRUE(ctx->env.is_known());
    EXPECT_EQ(ctx->env->at("NCCL_IB_HCA"), "mlx5_0");
    ASSERT_NE(ctx->files, nullptr);
    EXPECT_EQ(ctx->files->stat("/proc/cmdline").kind, FileKind::regular);
    ASSERT_TRUE(ctx->cpu_mask.is_known());
    EXPECT_EQ(ctx->cpu_mask->to_list(), "0-1");
    ASSERT_TRUE(ctx->topology.is_known());
    EXPECT_EQ(ctx->topology->gpus.size(), 16U);
    ASSERT_TRUE(ctx->gpus.is_known()) << ctx->gpus.reason();
    ASSERT_EQ(ctx->gpus->size(), 1U);
    EXPECT_EQ(ctx->gpus->at(0).busid, "0000:34:00.0");
    ASSERT_TRUE(ctx->node.power.is_known());
    EXPECT_EQ(ctx->node.power->governor.at(0), "performance");
    ASSERT_TRUE(ctx->interfaces.is_known());
    EXPECT_EQ(ctx->job.nodes.value(), 64);
    EXPECT_EQ(ctx->job.tasks.value(), 512);
    EXPECT_EQ(ctx->job.total_gpus.value(), 512);  // h100:8 per node x 64 nodes
    ASSERT_TRUE(ctx->container.capabilities.is_known());
    EXPECT_EQ(ctx->container.capabilities.value(), std::vector<std::string>{"CAP_IPC_LOCK"});
    EXPECT_EQ(ctx->runtime, Runtime::bare);
    EXPECT_FALSE(ctx->host.has_value());
}

// A caller that read the status file already hands the text on: the
// mask, capabilities and uid come from that text, not from the
// recorded file (which says 0-1 and CAP_IPC_LOCK).
TEST(ContextBuilderProbeTest, AStatusTheCallerReadIsTheOneTheContextUses) {
    ProbeOptions o = replay_options();
    o.pid = 4242;
    o.pid_status = ProcessStatus{"/proc/4242/status (read by the caller)",
                                 std::string("Uid:\t0\t0\t0\t0\nCapEff:\t0000000000000000\nCpus_allowed_list:\t5\n")};
    auto ctx = build_context(o);
    ASSERT_TRUE(ctx.ok()) << ctx.error().to_string();
    ASSERT_TRUE(ctx->cpu_mask.is_known()) << ctx->cpu_mask.reason();
    EXPECT_EQ(ctx->cpu_mask->to_list(), "5");
    EXPECT_EQ(ctx->cpu_mask.source(), "/proc/4242/status (read by the caller) Cpus_allowed_list");
    ASSERT_TRUE(ctx->container.capabilities.is_known());
    EXPECT_TRUE(ctx->container.capabilities.value().empty());
    ASSERT_TRUE(ctx->container.runs_as_root.is_known());
    EXPECT_TRUE(ctx->container.runs_as_root.value());
}

// The Slurm plugin reads the node once per step and hands it to each task.
TEST(ContextBuilderProbeTest, ANodeSnapshotIsWhatTheContextSeesOfTheNode) {
    ProbeOptions o = replay_options();
    o.pid = 4242;
    auto snapshot = probe_node_snapshot(o);
    ASSERT_TRUE(snapshot.ok()) << snapshot.error().to_string();
    auto direct = build_context(o);
    ASSERT_TRUE(direct.ok());
    EXPECT_EQ(snapshot->topology->gpus.size(), direct->topology->gpus.size());
    EXPECT_EQ(snapshot->topology.source(), direct->topology.source());
    ASSERT_TRUE(snapshot->node.power.is_known());
    EXPECT_EQ(snapshot->node.power->governor, direct->node.power->governor);

    // Given a snapshot, the context takes the node from it and reads neither
    // the topology nor sysfs (both point nowhere here).
    snapshot->node.power.value().governor.at(0) = "powersave";
    ProbeOptions with_snapshot = o;
    with_snapshot.hwloc_xml = "/nonexistent/topology.xml";
    with_snapshot.sysfs_root = "/nonexistent";
    with_snapshot.node_snapshot = *snapshot;
    auto ctx = build_context(with_snapshot);
    ASSERT_TRUE(ctx.ok()) << ctx.error().to_string();
    EXPECT_EQ(ctx->topology->gpus.size(), 16U);
    EXPECT_EQ(ctx->node.power->governor.at(0), "powersave");
    ASSERT_TRUE(ctx->gpus.is_known()) << ctx->gpus.reason();
    EXPECT_EQ(ctx->gpus->at(0).busid, "0000:34:00.0");

    ProbeOptions bad = o;
    bad.hwloc_xml = "/nonexistent/topology.xml";
    EXPECT_FALSE(probe_node_snapshot(bad).ok());
}

// A snapshot of the live root carries the interfaces, used only by a task in
// the same mount and network namespaces.
TEST(ContextBuilderProbeTest, ASnapshotsInterfacesServeOnlyTheNamespacesTheyWereReadIn) {
    ProbeOptions o = replay_options();
    o.root = "/";
    auto snapshot = probe_node_snapshot(o);
    ASSERT_TRUE(snapshot.ok()) << snapshot.error().to_string();
    ASSERT_TRUE(snapshot->read_in_namespaces.has_value());
    snapshot->interfaces = Fact<std::vector<NetInterface>>::known({NetInterface{.name = "snap0"}}, "snapshot");
    ProbeOptions task = o;
    task.node_snapshot = *snapshot;
    auto same = build_context(task);
    ASSERT_TRUE(same.ok());
    ASSERT_TRUE(same->interfaces.is_known());
    EXPECT_EQ(same->interfaces->at(0).name, "snap0");

    snapshot->read_in_namespaces = "mnt:0:1 net:0:2 ";  // another namespace
    task.node_snapshot = *snapshot;
    auto other = build_context(task);
    ASSERT_TRUE(other.ok());
    EXPECT_TRUE(!other->interfaces.is_known() || other->interfaces->empty() ||
                other->interfaces->at(0).name != "snap0");

    // A fixture root never takes them.
    ProbeOptions fixture = replay_options();
    auto fixture_snapshot = probe_node_snapshot(fixture);
    ASSERT_TRUE(fixture_snapshot.ok());
    EXPECT_FALSE(fixture_snapshot->read_in_namespaces.has_value());
}

// The interfaces come from the same read that laid sysfs over the topology:
// the same names and states a read of sys/class/net of that root gives.
TEST(ContextBuilderProbeTest, InterfacesAreWhatTheNodesSysfsLists) {
    for (bool live : {false, true}) {
        ProbeOptions o = replay_options();
        if (live) {
            o.root = "/";
            o.sysfs_root.reset();
            o.hwloc_xml.reset();
            o.live_topology = false;
            o.proc_root = "/proc";
        }
        auto ctx = build_context(o);
        ASSERT_TRUE(ctx.ok()) << ctx.error().to_string();
        const std::vector<NetInterface> listed = read_net_interfaces(o.sysfs_root.value_or("/"));
        if (listed.empty()) continue;
        ASSERT_TRUE(ctx->interfaces.is_known()) << live;
        ASSERT_EQ(ctx->interfaces->size(), listed.size()) << live;
        for (std::size_t i = 0; i < listed.size(); ++i) {
            EXPECT_EQ(ctx->interfaces->at(i).name, listed[i].name);
            EXPECT_EQ(ctx->interfaces->at(i).up, listed[i].up);
        }
    }
}

TEST(ContextBuilderProbeTest, FlagsOverrideAndHostViewIsBuilt) {
    test::TempTree tree;
    tree.write("task.env", "NVIDIA_VISIBLE_DEVICES=all\nENROOT_ROOTFS=/var/lib/enroot/x\n");
    tree.write("host.env", "NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml\n");
    ProbeOptions o = replay_options();
    o.env_file = tree.path("task.env");
    o.host_env_file = tree.path("host.env");
    o.host_root = tree.root();
    o.cpus = "24-25";
    o.gpus = "8";
    o.job_nodes = 2;
    o.job_gpus = 16;
    auto ctx = build_context(o);
    ASSERT_TRUE(ctx.ok()) << ctx.error().to_string();
    EXPECT_EQ(ctx->cpu_mask.source(), "--cpus 24-25");
    EXPECT_EQ(ctx->gpus->at(0).numa_node, 1);
    EXPECT_EQ(ctx->job.nodes.value(), 2);
    EXPECT_EQ(ctx->job.total_gpus.value(), 16);
    EXPECT_FALSE(ctx->job.tasks.is_known());
    EXPECT_EQ(ctx->runtime, Runtime::enroot);
    ASSERT_TRUE(ctx->host.has_value());
    EXPECT_EQ(ctx->host->env->at("NCCL_TOPO_FILE"), "/opt/microsoft/ndv5-topo.xml");
    EXPECT_EQ(ctx->host->files->stat("/host.env").kind, FileKind::regular);
}

TEST(ContextBuilderProbeTest, BadInputsAreErrorsNamingTheFlagOrFile) {
    ProbeOptions o = replay_options();
    o.cpus = "0-3,x";
    auto bad_cpus = build_context(o);
    ASSERT_FALSE(bad_cpus.ok());
    EXPECT_EQ(bad_cpus.error().field, "--cpus");

    o = replay_options();
    o.env_file = "/nonexistent/job.env";
    auto bad_env = build_context(o);
    ASSERT_FALSE(bad_env.ok());
    EXPECT_EQ(bad_env.error().file, "/nonexistent/job.env");

    o = replay_options();
    o.hwloc_xml = kFixtures + "/sysfs/h100-baremetal/proc/cmdline";
    auto bad_xml = build_context(o);
    ASSERT_FALSE(bad_xml.ok());
    EXPECT_EQ(bad_xml.error().field, "--hwloc-xml");
}

TEST(ContextBuilderProbeTest, UnavailableFactsAreUnknownNotErrors) {
    ProbeOptions o = replay_options();
    o.hwloc_xml.reset();
    o.live_topology = false;
    o.cpus = "0";
    auto ctx = build_context(o);
    ASSERT_TRUE(ctx.ok()) << ctx.error().to_string();
    EXPECT_FALSE(ctx->env.is_known());
    EXPECT_FALSE(ctx->topology.is_known());
    EXPECT_FALSE(ctx->gpus.is_known());
    EXPECT_FALSE(ctx->job.nodes.is_known());
    EXPECT_FALSE(ctx->container.shm_bytes.is_known());
}

TEST(ContextBuilderProbeTest, RuntimeDetection) {
    const RootedFileView none("/nonexistent-root");
    EXPECT_EQ(detect_runtime({{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}}, none), Runtime::kubernetes);
    EXPECT_EQ(detect_runtime({{"ENROOT_ROOTFS", "/x"}}, none), Runtime::enroot);
    EXPECT_EQ(detect_runtime({{"ENROOT_ROOTFS", "/x"}, {"SLURM_JOB_ID", "7"}}, none), Runtime::pyxis);
    EXPECT_EQ(detect_runtime({}, none), Runtime::bare);
    test::TempTree podman;
    podman.write("run/.containerenv", "");
    EXPECT_EQ(detect_runtime({}, RootedFileView(podman.root())), Runtime::unknown);
    test::TempTree docker;
    docker.write(".dockerenv", "");
    EXPECT_EQ(detect_runtime({}, RootedFileView(docker.root())), Runtime::unknown);
    // A marker that is not a regular file is not the engine's.
    test::TempTree directory_marker;
    directory_marker.write("run/.containerenv/x", "");
    EXPECT_EQ(detect_runtime({}, RootedFileView(directory_marker.root())), Runtime::bare);
    EXPECT_EQ(to_string(Runtime::pyxis), "pyxis");
}

TEST(ContextBuilderProbeTest, JobShapeFromSlurm) {
    JobShape a = job_shape_from({{"SLURM_NNODES", "4"}, {"SLURM_GPUS", "32"}}, std::nullopt, std::nullopt);
    EXPECT_EQ(a.nodes.value(), 4);
    EXPECT_EQ(a.total_gpus.value(), 32);
    JobShape b =
        job_shape_from({{"SLURM_JOB_NUM_NODES", "3"}, {"SLURM_JOB_GPUS", "0,1,2,3"}}, std::nullopt, std::nullopt);
    EXPECT_EQ(b.total_gpus.value(), 12);
    EXPECT_NE(b.total_gpus.source().find("identical nodes"), std::string::npos);
    JobShape c = job_shape_from({{"SLURM_JOB_GPUS", "0,1"}}, std::nullopt, std::nullopt);
    EXPECT_FALSE(c.total_gpus.is_known());
}

TEST(JobShape, TheTotalGpuCountSaturatesInsteadOfWrapping) {
    // 65536 x 65536 wrapped to 0 in an int, which kept net.qps-low silent.
    JobShape shape =
        job_shape_from({{"SLURM_NNODES", "65536"}, {"SLURM_GPUS_PER_NODE", "65536"}}, std::nullopt, std::nullopt);
    ASSERT_TRUE(shape.total_gpus.is_known());
    EXPECT_EQ(shape.total_gpus.value(), std::numeric_limits<int>::max());
}

}  // namespace
}  // namespace launchguard
