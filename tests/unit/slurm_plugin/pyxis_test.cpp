#include "pyxis.h"

#include <gtest/gtest.h>

#include "container_placement.h"
#include "decision_log.h"
#include "support/memory_file_view.h"

namespace launchguard::slurm {
namespace {

TEST(PyxisOptions, ReadsWhatSlurmPassesToTheRemoteSide) {
    Environment env{{"_SLURM_SPANK_OPTION_pyxis_container_image", "nvcr.io#nvidia/pytorch:24.05-py3"},
                    {"_SLURM_SPANK_OPTION_pyxis_container_mounts", "/scratch:/scratch,/data:/data:ro"},
                    {"PATH", "/usr/bin"}};
    PyxisOptions options = pyxis_options(env);
    ASSERT_TRUE(options.any());
    EXPECT_EQ(options.image, "nvcr.io#nvidia/pytorch:24.05-py3");
    EXPECT_FALSE(options.name);
    EXPECT_EQ(options.mounts, (std::vector<std::string>{"/scratch:/scratch", "/data:/data:ro"}));
}

TEST(PyxisOptions, FallsBackToPyxisEnvironmentDefaults) {
    PyxisOptions options = pyxis_options({{"PYXIS_CONTAINER_NAME", "train"}, {"PYXIS_CONTAINER_MOUNTS", "/a"}});
    EXPECT_EQ(options.name, "train");
    EXPECT_EQ(options.mounts, (std::vector<std::string>{"/a"}));
}

TEST(PyxisOptions, NoneWithoutContainerOptions) {
    EXPECT_FALSE(pyxis_options({{"SLURM_JOB_ID", "7"}, {"_SLURM_SPANK_OPTION_pyxis_container_image", ""}}).any());
}

TEST(PyxisFix, AMissingHostFileIsAMountAnExportAndTheSiteAlternative) {
    std::string fix =
        pyxis_fix({RemediationOp::mount_file("/opt/microsoft/ndv5-topo.xml", "/opt/microsoft/ndv5-topo.xml"),
                   RemediationOp::set_env("NCCL_TOPO_FILE", "/opt/microsoft/ndv5-topo.xml")});
    EXPECT_EQ(fix,
              "srun --container-mounts=/opt/microsoft/ndv5-topo.xml:/opt/microsoft/ndv5-topo.xml:ro with export "
              "NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml and pass --container-env=NCCL_TOPO_FILE, or ask the site "
              "to install the launchguard enroot hook");
}

TEST(PyxisFix, VariablesAloneNeedNoHook) {
    std::string fix =
        pyxis_fix({RemediationOp::set_env("NCCL_IB_HCA", "=mlx5_0:1"), RemediationOp::set_env("NCCL_DEBUG", "WARN")});
    EXPECT_EQ(fix,
              "export NCCL_IB_HCA==mlx5_0:1; export NCCL_DEBUG=WARN and pass --container-env=NCCL_IB_HCA,NCCL_DEBUG");
    EXPECT_EQ(pyxis_fix({RemediationOp::set_env("NCCL_SOCKET_IFNAME", "eth0 ib0")}),
              "export NCCL_SOCKET_IFNAME='eth0 ib0' and pass --container-env=NCCL_SOCKET_IFNAME");
}

TEST(PyxisFix, OtherOperationsReadAsEverywhere) {
    EXPECT_EQ(pyxis_fix({RemediationOp::unset_env("NCCL_IB_DISABLE")}), "unset NCCL_IB_DISABLE");
    EXPECT_EQ(pyxis_fix({}), "");
}

TEST(UserMessage, WritesFixesAsPyxisOptionsInAPyxisContainer) {
    Report report;
    report.profile = "default";
    report.mode = Mode::enforce;
    report.decision = Decision::block;
    Finding finding;
    finding.rule = "topo.not-propagated";
    finding.action = Action::block;
    finding.message = "host topology file /opt/t.xml does not reach the task in the container";
    finding.remediation = {RemediationOp::mount_file("/opt/t.xml", "/opt/t.xml"),
                           RemediationOp::set_env("NCCL_TOPO_FILE", "/opt/t.xml")};
    report.findings.push_back(finding);
    EXPECT_EQ(user_message(report, Runtime::pyxis),
              "BLOCK topo.not-propagated: host topology file /opt/t.xml does not reach the task in the container -> "
              "fix: srun --container-mounts=/opt/t.xml:/opt/t.xml:ro with export NCCL_TOPO_FILE=/opt/t.xml and pass "
              "--container-env=NCCL_TOPO_FILE, or ask the site to install the launchguard enroot hook\n"
              "profile default, mode enforce: launch blocked (see `launchguard explain <rule>`)\n");
    EXPECT_NE(user_message(report, Runtime::bare)
                  .find("-> fix: mount /opt/t.xml at /opt/t.xml (read-only); set "
                        "NCCL_TOPO_FILE=/opt/t.xml"),
              std::string::npos);
}

// ------------------------------------------------------------ place_task

HostSide host_side() {
    HostSide side;
    side.env = {{"NCCL_DEBUG", "INFO"}};
    side.files = std::make_shared<testing::MemoryFileView>("captured host");
    return side;
}

TEST(PlaceTask, ATaskThatLeftItsNamespaceIsInAContainerWithTheHostSide) {
    HostSide side = host_side();
    Placement placement = place_task(MountNamespace{1, 100}, MountNamespace{1, 200}, std::nullopt, &side,
                                     {{"_SLURM_SPANK_OPTION_pyxis_container_image", "img.sqsh"}});
    EXPECT_EQ(placement.runtime, Runtime::pyxis);
    ASSERT_TRUE(placement.host);
    ASSERT_TRUE(placement.host->env);
    EXPECT_EQ(placement.host->env.value().at("NCCL_DEBUG"), "INFO");
    EXPECT_EQ(placement.host->files->describe(), "captured host");
    EXPECT_TRUE(placement.warning.empty());
}

TEST(PlaceTask, AnotherPluginsNamespaceIsAContainerOfUnknownKind) {
    HostSide side = host_side();
    Placement placement = place_task(MountNamespace{1, 100}, MountNamespace{1, 200}, std::nullopt, &side, {});
    EXPECT_EQ(placement.runtime, Runtime::unknown);
    EXPECT_TRUE(placement.host);
}

TEST(PlaceTask, ATaskInItsOwnNamespaceIsOnTheHostAndGetsNoSecondHostView) {
    HostSide side = host_side();
    Placement placement = place_task(MountNamespace{1, 100}, MountNamespace{1, 100}, std::nullopt, &side, {});
    EXPECT_EQ(placement.runtime, Runtime::bare);
    EXPECT_FALSE(placement.host);
    EXPECT_TRUE(placement.warning.empty());
}

TEST(PlaceTask, PyxisOptionsOnTheHostMeanLaunchguardRunsBeforePyxis) {
    Placement placement = place_task(MountNamespace{1, 100}, MountNamespace{1, 100}, std::nullopt, nullptr,
                                     {{"_SLURM_SPANK_OPTION_pyxis_container_image", "img.sqsh"}});
    EXPECT_EQ(placement.runtime, Runtime::bare);
    EXPECT_NE(placement.warning.find("list launchguard after pyxis in plugstack.conf"), std::string::npos);
}

TEST(PlaceTask, NothingToCompareLeavesTheRuntimeToDetection) {
    HostSide side = host_side();
    Placement placement = place_task(std::nullopt, MountNamespace{1, 100}, std::nullopt, &side, {});
    EXPECT_FALSE(placement.runtime);
    EXPECT_FALSE(placement.host);
}

TEST(PlaceTask, WithoutACapturedHostSideThereIsNoHostView) {
    Placement placement = place_task(MountNamespace{1, 100}, MountNamespace{1, 200}, std::nullopt, nullptr, {});
    EXPECT_EQ(placement.runtime, Runtime::unknown);
    EXPECT_FALSE(placement.host);
}

TEST(PlaceTask, AnEnrootRootNamedByPyxisIsAPyxisContainer) {
    // srun passes pyxis's options in the launch request, not the job env:
    // the container's root directory is what says pyxis.
    HostSide side = host_side();
    Placement placement =
        place_task(MountNamespace{1, 100}, MountNamespace{1, 200}, std::string("pyxis_42.0"), &side, {});
    EXPECT_EQ(placement.runtime, Runtime::pyxis);
    placement = place_task(MountNamespace{1, 100}, MountNamespace{1, 200}, std::string("rootfs"), &side, {});
    EXPECT_EQ(placement.runtime, Runtime::unknown);
}

TEST(RootMountDirectory, NamesTheDirectoryEnrootBoundAsRoot) {
    // Inside an enroot container: the rootfs, bound onto itself, is "/".
    const char* container =
        "2841 2840 0:27 /var/lib/enroot/data/user-1000/pyxis_42.0 / rw,nosuid,nodev - xfs /dev/sda1 rw\n"
        "2842 2841 0:5 / /proc rw,nosuid - proc proc rw\n";
    EXPECT_EQ(root_mount_directory(container), "pyxis_42.0");
    // ENROOT_DATA_PATH on a filesystem of its own, trailing slash.
    EXPECT_EQ(root_mount_directory("10 9 0:40 /pyxis_7_train/ / rw - ext4 /dev/x rw\n"), "pyxis_7_train");
    // On the host, and a tmpfs root: the root of its filesystem.
    EXPECT_FALSE(root_mount_directory("22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/root rw\n"));
    // The last "/" mount is on top (a host with a stacked root).
    EXPECT_EQ(root_mount_directory("1 0 8:1 / / rw - ext4 a rw\n2 1 0:9 /data/pyxis_1.0 / rw - ext4 b rw\n"),
              "pyxis_1.0");
    EXPECT_FALSE(root_mount_directory(""));
    EXPECT_FALSE(root_mount_directory("garbage\n1 2 3\n"));
}

TEST(MountNamespaceOfThisProcess, IsReadableAndStable) {
    auto first = current_mount_namespace();
    ASSERT_TRUE(first);
    EXPECT_EQ(first, current_mount_namespace());
}

}  // namespace
}  // namespace launchguard::slurm
