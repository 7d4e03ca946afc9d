// topo.* rules against real topology files (Azure ndv4/ndv5, AWS p4d, an
// RCCL model, hwloc exports) seen through in-memory container and host views.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "context/captured_file_view.h"
#include "engine/profile_loader.h"
#include "nccl/host_topology.h"
#include "rules/families.h"
#include "support/azure_fixtures.h"
#include "support/launch_fixture.h"
#include "support/memory_file_view.h"
#include "support/rule_harness.h"
#include "support/text.h"

namespace launchguard {
namespace {

using testing::add_azure_topology;
using testing::azure_ndv5_conf;
using testing::azure_ndv5_root;
using testing::fixture_text;
using testing::kNdv5File;
using testing::kNdv5Link;
using testing::launch_from_yaml;
using testing::MemoryFileView;
using testing::mentions;
using testing::profile_from_yaml;
using testing::replace_all;
using testing::run_rule;
using testing::use_host;
using testing::use_view;
using Kind = RemediationOp::Kind;

constexpr const char* kDefaultTopo = "/var/run/nvidia-topologyd/virtualTopology.xml";

Profile azure_profile() {
    return profile_from_yaml(
        "name: azure-ndv5-test\n"
        "node: {virtual_machine: true}\n"
        "topology: {required: true, host_path: /opt/microsoft/ndv5-topo.xml, container_path: "
        "/opt/microsoft/ndv5-topo.xml}\n");
}

const RemediationOp* find_op(const Finding& finding, Kind kind) {
    for (const auto& op : finding.remediation) {
        if (op.kind == kind) return &op;
    }
    return nullptr;
}

void expect_mount_and_point(const Finding& finding, const std::string& host, const std::string& container) {
    ASSERT_EQ(finding.remediation.size(), 2U);
    EXPECT_EQ(finding.remediation[0].kind, Kind::mount_file);
    EXPECT_EQ(finding.remediation[0].host_path, host);
    EXPECT_EQ(finding.remediation[0].container_path, container);
    EXPECT_TRUE(finding.remediation[0].readonly);
    EXPECT_EQ(finding.remediation[1].kind, Kind::set_env);
    EXPECT_EQ(finding.remediation[1].name, "NCCL_TOPO_FILE");
    EXPECT_EQ(finding.remediation[1].value, container);
}

std::string manual_text(const Finding& finding) {
    const RemediationOp* op = find_op(finding, Kind::manual);
    return op == nullptr ? "" : op->text;
}

LaunchContext unknown_env_launch() {
    auto ctx = launch_from_yaml("runtime: pyxis\n");
    ctx.env = Fact<Environment>::unknown("no /proc/4242/environ");
    return ctx;
}

// A topology file for the 32em64t hwloc machine (NVIDIA GPUs 0000:03:00.0,
// 0000:83:00.0, 0000:84:00.0; mlx5_0 on 0000:04:00.0), written in
// the shape of Azure's real ndv5 file: one <cpu> per NUMA node holding a fake
// bridge ffff:ff:0N.0 with the GPU (class 0x030200) and NIC (0x020700) leaves.
std::string topology_for_32em64t(const std::string& nic_busid = "0000:04:00.0") {
    const std::string bridge =
        R"(class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16" vendor="0x0000" device="0x0000" )"
        R"(subsystem_vendor="0x0000" subsystem_device="0x0000">)";
    const std::string leaf = R"(" link_speed="16.0 GT/s PCIe" link_width="16"/>)";
    const std::string cpu = R"(arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="15">)";
    return "<system version=\"1\">\n"
           "  <cpu numaid=\"0\" affinity=\"0000ffff\" " +
           cpu +
           "\n"
           "    <pci busid=\"ffff:ff:01.0\" " +
           bridge +
           "\n"
           "      <pci busid=\"0000:03:00.0\" class=\"0x030200" +
           leaf +
           "\n"
           "      <pci busid=\"" +
           nic_busid + "\" class=\"0x020700" + leaf +
           "\n"
           "    </pci>\n"
           "  </cpu>\n"
           "  <cpu numaid=\"1\" affinity=\"ffff0000\" " +
           cpu +
           "\n"
           "    <pci busid=\"ffff:ff:02.0\" " +
           bridge +
           "\n"
           "      <pci busid=\"0000:83:00.0\" class=\"0x030200" +
           leaf +
           "\n"
           "      <pci busid=\"0000:84:00.0\" class=\"0x030200" +
           leaf +
           "\n"
           "    </pci>\n"
           "  </cpu>\n"
           "</system>\n";
}

// ======================================================== topo.file-missing

TEST(TopoFileMissing, FiresWhenTheEnvironmentNamesAMissingFile) {
    auto result = run_rule("topo.file-missing", launch_from_yaml("env: {NCCL_TOPO_FILE: /opt/topo.xml}\n"));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "topo.file-missing");
    EXPECT_EQ(finding.action, Action::block);
    EXPECT_EQ(finding.severity, Severity::error);
    EXPECT_EQ(finding.message,
              "NCCL_TOPO_FILE=/opt/topo.xml is missing on this node: NCCL silently auto-detects the topology "
              "(logged only at INFO since 2.27.3)");
    EXPECT_EQ(result.evidence("NCCL_TOPO_FILE"), "/opt/topo.xml");
    EXPECT_EQ(result.evidence("source"), "environment");
    EXPECT_EQ(result.evidence("found"), "missing");
    EXPECT_EQ(result.evidence("container_view"), "test container view");
    // The default profile names no host path: a human has to find the file.
    ASSERT_EQ(finding.remediation.size(), 1U);
    EXPECT_EQ(finding.remediation[0].kind, Kind::manual);
    EXPECT_TRUE(mentions(finding.remediation[0].text, "readable in the container at /opt/topo.xml"));
}

TEST(TopoFileMissing, FiresOnAzuresDanglingSymlinkFromNcclConf) {
    // Case 4 as the Azure image sets it up: /etc/nccl.conf from ndv5.sh, and
    // only /opt/microsoft/ndv5 mounted, so topo.xml points at nothing.
    auto ctx = launch_from_yaml("runtime: pyxis\n");
    MemoryFileView view("enroot rootfs pyxis_42");
    view.add_file("/etc/nccl.conf", azure_ndv5_conf()).add_symlink(kNdv5Link, kNdv5File);
    use_view(ctx, view);

    auto result = run_rule("topo.file-missing", ctx, azure_profile());
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.message,
              "NCCL_TOPO_FILE=/opt/microsoft/ndv5/topo.xml (from /etc/nccl.conf:2) is a dangling symlink to "
              "/opt/microsoft/ndv5-topo.xml in the container: NCCL silently auto-detects the topology (logged only "
              "at INFO since 2.27.3)");
    EXPECT_EQ(result.evidence("source"), "/etc/nccl.conf:2");
    EXPECT_EQ(result.evidence("found"), "dangling symlink");
    EXPECT_EQ(result.evidence("resolved_path"), kNdv5File);
    EXPECT_EQ(result.evidence("container_view"), "enroot rootfs pyxis_42");
    // The profile knows where the node keeps the real file.
    expect_mount_and_point(finding, kNdv5File, kNdv5File);
}

TEST(TopoFileMissing, DanglingSymlinkWithoutProfilePathSaysToMountTheTarget) {
    auto ctx = launch_from_yaml("env: {NCCL_TOPO_FILE: /opt/microsoft/ndv5/topo.xml}\n");
    MemoryFileView view;
    view.add_symlink(kNdv5Link, "../ndv5-topo.xml");
    use_view(ctx, view);
    auto result = run_rule("topo.file-missing", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("resolved_path"), kNdv5File);
    EXPECT_EQ(manual_text(result.finding()),
              "/opt/microsoft/ndv5/topo.xml is a symlink to /opt/microsoft/ndv5-topo.xml, which the container lacks: "
              "mount the target file itself and point NCCL_TOPO_FILE at it");
}

TEST(TopoFileMissing, FiresOnADirectoryAnEmptyFileAndAnUnreadableFile) {
    auto directory = run_rule("topo.file-missing", launch_from_yaml("env: {NCCL_TOPO_FILE: /opt/topo}\n"
                                                                    "directories: [/opt/topo]\n"));
    ASSERT_TRUE(directory.fired());
    EXPECT_EQ(directory.evidence("found"), "directory");
    EXPECT_TRUE(mentions(directory.finding().message, "is a directory (NCCL opens it and reads nothing)"));

    auto empty = run_rule("topo.file-missing", launch_from_yaml("env: {NCCL_TOPO_FILE: /opt/topo.xml}\n"
                                                                "files: {/opt/topo.xml: ''}\n"));
    ASSERT_TRUE(empty.fired());
    EXPECT_EQ(empty.evidence("found"), "empty file");
    EXPECT_TRUE(mentions(empty.finding().message, "is an empty file on this node"));

    auto unreadable = run_rule("topo.file-missing", launch_from_yaml("env: {NCCL_TOPO_FILE: /root/topo.xml}\n"
                                                                     "unreadable: [/root/topo.xml]\n"));
    ASSERT_TRUE(unreadable.fired());
    EXPECT_EQ(unreadable.evidence("found"), "unreadable");
    EXPECT_EQ(unreadable.evidence("detail"), "permission denied");
    EXPECT_TRUE(mentions(unreadable.finding().message, "is unreadable by the task (permission denied)"));
}

TEST(TopoFileMissing, QuietOnAnEmptyValueWhichConfLintAndTopoRequiredJudge) {
    // NCCL warns that it cannot open '' and auto-detects, as when the
    // variable is unset: not a missing file. conf.lint warns; a profile that
    // requires a file still blocks through topo.required.
    auto ctx = launch_from_yaml("env: {NCCL_TOPO_FILE: ''}\n");
    MemoryFileView view;
    view.add_file(kDefaultTopo, fixture_text("nccl-topo/ndv5-topo.xml"));
    use_view(ctx, view);
    EXPECT_TRUE(run_rule("topo.file-missing", ctx).quiet());

    auto lint = run_rule("conf.lint", ctx);
    ASSERT_TRUE(lint.fired());
    EXPECT_EQ(lint.finding().action, Action::warn);
    EXPECT_TRUE(mentions(lint.finding().message, "NCCL_TOPO_FILE is set but empty"));
    EXPECT_TRUE(mentions(lint.finding().message, "give NCCL_TOPO_FILE a path, or remove it"));

    auto required = run_rule("topo.required", ctx, azure_profile());
    ASSERT_TRUE(required.fired());
    EXPECT_EQ(required.finding().action, Action::block);
}

TEST(TopoFileMissing, QuietForInProcessPathsOfNetPlugins) {
    // aws-ofi-nccl writes its topology into a memfd: nothing on disk to find.
    EXPECT_TRUE(run_rule("topo.file-missing", launch_from_yaml("env: {NCCL_TOPO_FILE: /proc/self/fd/3}\n")).quiet());
    EXPECT_TRUE(run_rule("topo.file-missing", launch_from_yaml("env: {NCCL_TOPO_FILE: /dev/fd/12}\n")).quiet());
    EXPECT_TRUE(run_rule("topo.file-missing", launch_from_yaml("env: {NCCL_TOPO_FILE: /proc/4242/fd/7}\n")).quiet());
}

TEST(TopoFileMissing, NearMissProcPathsAreStillChecked) {
    // Not a file descriptor: /proc/self/fdinfo/3 is a text file about the fd.
    auto result = run_rule("topo.file-missing", launch_from_yaml("env: {NCCL_TOPO_FILE: /proc/self/fdinfo/3}\n"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("found"), "missing");
}

TEST(TopoFileMissing, QuietWhenTheSymlinkResolvesInsideTheContainer) {
    auto ctx = launch_from_yaml("runtime: pyxis\n");
    MemoryFileView view = azure_ndv5_root();
    use_view(ctx, view);
    EXPECT_TRUE(run_rule("topo.file-missing", ctx, azure_profile()).quiet());
}

TEST(TopoFileMissing, QuietWhenUnsetEvenWithoutTheDefaultFile) {
    // A missing default path is normal; topo.required decides if one is needed.
    EXPECT_TRUE(run_rule("topo.file-missing", launch_from_yaml("env: {CUDA_VISIBLE_DEVICES: '0'}\n")).quiet());
    EXPECT_TRUE(run_rule("topo.file-missing", launch_from_yaml("{}"), azure_profile()).quiet());
}

TEST(TopoFileMissing, EnvironmentBeatsABrokenConfFile) {
    auto ctx = launch_from_yaml("env: {NCCL_TOPO_FILE: /opt/microsoft/ndv5-topo.xml}\n");
    MemoryFileView view;
    view.add_file("/etc/nccl.conf", azure_ndv5_conf()).add_file(kNdv5File, fixture_text("nccl-topo/ndv5-topo.xml"));
    use_view(ctx, view);
    EXPECT_TRUE(run_rule("topo.file-missing", ctx).quiet());
}

TEST(TopoFileMissing, UnknownWhenTheEnvironmentIsUnknown) {
    auto result = run_rule("topo.file-missing", unknown_env_launch());
    ASSERT_TRUE(result.undecided());
    EXPECT_EQ(result.unknowns.front().rule, "topo.file-missing");
    EXPECT_EQ(result.unknowns.front().reason,
              "cannot tell whether NCCL_TOPO_FILE names a readable file because the task's environment is unknown "
              "(no /proc/4242/environ)");
}

TEST(TopoFileMissing, UnknownWhenTheViewCannotTell) {
    // A Kubernetes view: the path may or may not be in the image.
    auto result = run_rule("topo.file-missing", launch_from_yaml("runtime: kubernetes\n"
                                                                 "env: {NCCL_TOPO_FILE: /opt/topo.xml}\n"
                                                                 "unknown_files: [/opt/topo.xml]\n"));
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(result.unknowns.front().reason,
                         "cannot tell whether NCCL_TOPO_FILE=/opt/topo.xml is a "
                         "readable file in the container"));
    EXPECT_TRUE(mentions(result.unknowns.front().reason, "cannot tell"));
}

TEST(TopoFileMissing, UnknownForARelativePath) {
    auto result = run_rule("topo.file-missing", launch_from_yaml("env: {NCCL_TOPO_FILE: topo.xml}\n"));
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(result.unknowns.front().reason, "relative to the task's working directory"));
}

// ======================================================== topo.not-propagated

TEST(TopoNotPropagated, FiresWhenTheHostNcclConfDoesNotReachAPyxisContainer) {
    // Field case 4: the VM has Azure's conf and file; the container has neither.
    auto ctx = launch_from_yaml("runtime: pyxis\n");
    MemoryFileView host = azure_ndv5_root("host /");
    use_host(ctx, host);

    auto result = run_rule("topo.not-propagated", ctx);
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "topo.not-propagated");
    EXPECT_EQ(finding.action, Action::block);
    EXPECT_EQ(finding.message,
              "host topology file /opt/microsoft/ndv5/topo.xml (host /etc/nccl.conf:2) does not reach the task in the "
              "container: the task has NCCL_TOPO_FILE unset and no /var/run/nvidia-topologyd/virtualTopology.xml "
              "(enroot mounts a "
              "tmpfs over /var/run, hiding /var/run/nvidia-topologyd, and does not mount /etc/nccl.conf); NCCL "
              "silently auto-detects the topology (logged only at INFO since 2.27.3)");
    EXPECT_EQ(result.evidence("host_file"), kNdv5Link);
    EXPECT_EQ(result.evidence("host_source"), "host /etc/nccl.conf:2");
    EXPECT_EQ(result.evidence("host_resolved_path"), kNdv5File);
    EXPECT_EQ(result.evidence("host_view"), "host /");
    EXPECT_EQ(result.evidence("NCCL_TOPO_FILE"), "unset");
    EXPECT_EQ(result.evidence("found"), "missing");
    EXPECT_EQ(result.evidence("runtime"), "pyxis");
    // Mount the real file (not the link) where the host's conf points.
    expect_mount_and_point(finding, kNdv5File, kNdv5Link);
}

TEST(TopoNotPropagated, MountsAtTheProfilesContainerPathWhenTheHostFileIsTheProfiles) {
    auto ctx = launch_from_yaml("runtime: enroot\n");
    MemoryFileView host = azure_ndv5_root();
    use_host(ctx, host);
    auto result = run_rule("topo.not-propagated", ctx, azure_profile());
    ASSERT_TRUE(result.fired());
    expect_mount_and_point(result.finding(), kNdv5File, kNdv5File);
}

TEST(TopoNotPropagated, FiresWhenEnrootsTmpfsHidesTheDefaultPath) {
    auto ctx = launch_from_yaml("runtime: enroot\n");
    MemoryFileView host;
    host.add_file(kDefaultTopo, fixture_text("nccl-topo/ndv4-topo.xml"));
    use_host(ctx, host);
    auto result = run_rule("topo.not-propagated", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("host_file"), kDefaultTopo);
    EXPECT_EQ(result.evidence("host_source"), "host default path (nvidia-topologyd)");
    EXPECT_TRUE(mentions(result.evidence("runtime_note"), "tmpfs over /var/run"));
    expect_mount_and_point(result.finding(), kDefaultTopo, kDefaultTopo);
}

TEST(TopoNotPropagated, FiresWhenTheHostVariableArrivesWithoutTheFile) {
    // pyxis passes the exported variable through, but nothing mounts the file.
    auto ctx = launch_from_yaml("runtime: pyxis\nenv: {NCCL_TOPO_FILE: /shared/topo/p4d.xml}\n");
    MemoryFileView host;
    host.add_file("/shared/topo/p4d.xml", fixture_text("nccl-topo/p4d-24xl-topo.xml"));
    use_host(ctx, host, {{"NCCL_TOPO_FILE", "/shared/topo/p4d.xml"}});
    auto result = run_rule("topo.not-propagated", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("host_source"), "host environment");
    EXPECT_EQ(result.evidence("NCCL_TOPO_FILE"), "/shared/topo/p4d.xml");
    EXPECT_EQ(result.evidence("source"), "environment");
    EXPECT_TRUE(mentions(result.finding().message, "the task's NCCL_TOPO_FILE=/shared/topo/p4d.xml is missing"));
    expect_mount_and_point(result.finding(), "/shared/topo/p4d.xml", "/shared/topo/p4d.xml");
}

TEST(TopoNotPropagated, FiresWhenTheTaskUsesAFileForOtherDevices) {
    auto ctx = launch_from_yaml("runtime: pyxis\nenv: {NCCL_TOPO_FILE: /opt/image/topo.xml}\n");
    MemoryFileView task;
    task.add_file("/opt/image/topo.xml", fixture_text("nccl-topo/ndv4-topo.xml"));
    use_view(ctx, task);
    MemoryFileView host = azure_ndv5_root();
    use_host(ctx, host);
    auto result = run_rule("topo.not-propagated", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message,
                         "the task's NCCL_TOPO_FILE=/opt/image/topo.xml lists different "
                         "devices"));
    EXPECT_EQ(result.evidence("found"), "regular file");
}

TEST(TopoNotPropagated, PointingAtTheMountedFileIsTheWholeFixWhenTheContainerHasIt) {
    // The user mounted the host's file (--container-mounts) but the variable
    // lives only in the host's /etc/nccl.conf: setting it is enough, and a
    // front end that can only set variables (the Slurm plugin) can patch it.
    auto ctx = launch_from_yaml("runtime: pyxis\n");
    MemoryFileView task;
    task.add_file(kNdv5Link, fixture_text("nccl-topo/ndv5-topo.xml"));
    use_view(ctx, task);
    use_host(ctx, azure_ndv5_root());
    auto result = run_rule("topo.not-propagated", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message, "the task has NCCL_TOPO_FILE unset"));
    ASSERT_EQ(result.finding().remediation.size(), 1U);
    EXPECT_EQ(result.set_env("NCCL_TOPO_FILE"), kNdv5Link);
    EXPECT_EQ(result.evidence("container_has_host_file"), kNdv5Link);
    EXPECT_TRUE(result.finding().fix_or_block);
}

TEST(TopoNotPropagated, AFileOfOtherDevicesAtTheTargetIsNoFix) {
    // Something at the mount target that is not the host's file: mount over it.
    auto ctx = launch_from_yaml("runtime: pyxis\n");
    MemoryFileView task;
    task.add_file(kNdv5Link, fixture_text("nccl-topo/ndv4-topo.xml"));
    use_view(ctx, task);
    use_host(ctx, azure_ndv5_root());
    auto result = run_rule("topo.not-propagated", ctx);
    ASSERT_TRUE(result.fired());
    expect_mount_and_point(result.finding(), kNdv5File, kNdv5Link);
    EXPECT_EQ(result.evidence("container_has_host_file"), "");
}

TEST(TopoNotPropagated, NamesTheImageAndMountsTheLauncherWasGiven) {
    auto ctx = launch_from_yaml("runtime: pyxis\n");
    ctx.container.image = Fact<std::string>::known("nvcr.io#nvidia/pytorch:24.05-py3", "--container-image");
    ctx.container.requested_mounts = {"/scratch:/scratch", "/data:/data:ro"};
    use_host(ctx, azure_ndv5_root());
    auto result = run_rule("topo.not-propagated", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("container_image"), "nvcr.io#nvidia/pytorch:24.05-py3");
    EXPECT_EQ(result.evidence("container_mounts"), "/scratch:/scratch, /data:/data:ro");
    EXPECT_TRUE(result.finding().fix_or_block);
}

TEST(TopoNotPropagated, AHostViewCapturedBeforeTheContainerGivesTheLiveVerdicts) {
    // The Slurm plugin asks the host's questions in user_init and answers the
    // rules from the record in task_init, when the host is out of reach.
    struct Case {
        const char* name;
        MemoryFileView host;
        Environment host_env;
        const char* task_yaml;
        MemoryFileView task;
    };
    MemoryFileView default_path_host;
    default_path_host.add_file(kDefaultTopo, fixture_text("nccl-topo/ndv4-topo.xml"));
    MemoryFileView env_host;
    env_host.add_file("/shared/topo/p4d.xml", fixture_text("nccl-topo/p4d-24xl-topo.xml"));
    MemoryFileView task_with_copy;
    task_with_copy.add_file(kNdv5File, fixture_text("nccl-topo/ndv5-topo.xml"));
    MemoryFileView task_with_other;
    task_with_other.add_file(kNdv5Link, fixture_text("nccl-topo/ndv4-topo.xml"));
    MemoryFileView conf_only_host;
    conf_only_host.add_file("/etc/nccl.conf", "NCCL_SOCKET_IFNAME=eth0\n");
    std::vector<Case> cases = {
        {"azure conf, empty container", azure_ndv5_root(), {}, "runtime: pyxis\n", MemoryFileView()},
        {"default path", default_path_host, {}, "runtime: pyxis\n", MemoryFileView()},
        {"host env",
         env_host,
         {{"NCCL_TOPO_FILE", "/shared/topo/p4d.xml"}},
         "runtime: pyxis\nenv: {NCCL_TOPO_FILE: /shared/topo/p4d.xml}\n",
         MemoryFileView()},
        {"same copy",
         azure_ndv5_root(),
         {},
         "runtime: pyxis\nenv: {NCCL_TOPO_FILE: /opt/microsoft/ndv5-topo.xml}\n",
         task_with_copy},
        {"other devices", azure_ndv5_root(), {}, "runtime: pyxis\n", task_with_other},
        {"no host file", conf_only_host, {}, "runtime: pyxis\n", MemoryFileView()},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        for (const Profile& profile : {*load_profile("default"), azure_profile()}) {
            auto live = launch_from_yaml(c.task_yaml);
            use_view(live, c.task);
            use_host(live, c.host, c.host_env);

            auto captured_files =
                std::make_shared<CapturedFileView>(std::make_shared<MemoryFileView>(c.host), "captured host");
            nccl::ask_host_questions(c.host_env, *captured_files, profile.topology.host_path);
            captured_files->release();
            auto captured = launch_from_yaml(c.task_yaml);
            use_view(captured, c.task);
            captured.host = HostView{Fact<Environment>::known(c.host_env, "captured"), captured_files};

            for (const char* rule : {"topo.not-propagated", "conf.host-not-visible"}) {
                SCOPED_TRACE(rule);
                auto want = run_rule(rule, live, profile);
                auto got = run_rule(rule, captured, profile);
                EXPECT_EQ(got.fired(), want.fired());
                EXPECT_EQ(got.undecided(), want.undecided());
                if (want.fired() && got.fired()) {
                    EXPECT_EQ(got.finding().message, want.finding().message);
                    EXPECT_EQ(got.finding().remediation.size(), want.finding().remediation.size());
                }
            }
        }
    }
}

TEST(TopoNotPropagated, QuietWhenTheTaskHasACopyOfTheSameFile) {
    auto ctx = launch_from_yaml("runtime: pyxis\nenv: {NCCL_TOPO_FILE: /opt/microsoft/ndv5-topo.xml}\n");
    MemoryFileView task;
    task.add_file(kNdv5File, fixture_text("nccl-topo/ndv5-topo.xml"));
    use_view(ctx, task);
    MemoryFileView host = azure_ndv5_root();
    use_host(ctx, host);
    EXPECT_TRUE(run_rule("topo.not-propagated", ctx).quiet());
}

TEST(TopoNotPropagated, QuietWhenTheCopyOnlyDiffersInLineEndings) {
    auto ctx = launch_from_yaml("runtime: kubernetes\nenv: {NCCL_TOPO_FILE: /etc/topo/topo.xml}\n");
    MemoryFileView task;
    task.add_file("/etc/topo/topo.xml", replace_all(fixture_text("nccl-topo/ndv5-topo.xml"), "\n", "\r\n"));
    use_view(ctx, task);
    MemoryFileView host;
    add_azure_topology(host);
    use_host(ctx, host, {{"NCCL_TOPO_FILE", kNdv5Link}});
    EXPECT_TRUE(run_rule("topo.not-propagated", ctx).quiet());
}

TEST(TopoNotPropagated, QuietWhenTheHostHasNoTopologyFile) {
    auto ctx = launch_from_yaml("runtime: enroot\n");
    MemoryFileView host;
    host.add_file("/etc/nccl.conf", "NCCL_SOCKET_IFNAME=eth0\n");
    use_host(ctx, host);
    EXPECT_TRUE(run_rule("topo.not-propagated", ctx).quiet());
}

TEST(TopoNotPropagated, QuietWhenTheHostsFileIsBrokenOnTheHostToo) {
    // The host's conf names a dangling link: not a propagation problem.
    auto ctx = launch_from_yaml("runtime: enroot\n");
    MemoryFileView host;
    host.add_file("/etc/nccl.conf", azure_ndv5_conf()).add_symlink(kNdv5Link, kNdv5File);
    use_host(ctx, host);
    EXPECT_TRUE(run_rule("topo.not-propagated", ctx).quiet());
}

TEST(TopoNotPropagated, QuietForAnInProcessTopologyInTheTask) {
    auto ctx = launch_from_yaml("runtime: pyxis\nenv: {NCCL_TOPO_FILE: /proc/self/fd/9}\n");
    MemoryFileView host;
    host.add_file(kDefaultTopo, fixture_text("nccl-topo/p4d-24xl-topo.xml"));
    use_host(ctx, host);
    EXPECT_TRUE(run_rule("topo.not-propagated", ctx).quiet());
}

TEST(TopoNotPropagated, UnknownWhenTheHostEnvironmentIsUnknownAndItsFilesShowNothing) {
    auto ctx = launch_from_yaml("runtime: enroot\n");
    HostView host;
    host.env = Fact<Environment>::unknown("no --host-env-file");
    host.files = std::make_shared<MemoryFileView>();
    ctx.host = std::move(host);
    auto result = run_rule("topo.not-propagated", ctx);
    ASSERT_TRUE(result.undecided());
    EXPECT_EQ(result.unknowns.front().reason,
              "cannot tell whether the host sets NCCL_TOPO_FILE because the host environment is unknown (no "
              "--host-env-file)");
}

TEST(TopoNotPropagated, WithoutAHostViewTheProfileIsTheHostsClaim) {
    auto result = run_rule("topo.not-propagated", launch_from_yaml("runtime: pyxis\n"), azure_profile());
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.finding().message,
              "profile azure-ndv5-test puts this node's topology file at /opt/microsoft/ndv5-topo.xml, but it does "
              "not reach the pyxis task: the task has NCCL_TOPO_FILE unset (enroot mounts a tmpfs over /var/run, "
              "hiding /var/run/nvidia-topologyd, and does not mount /etc/nccl.conf); NCCL silently auto-detects the "
              "topology (logged only at INFO since 2.27.3)");
    EXPECT_EQ(result.evidence("profile_host_path"), kNdv5File);
    EXPECT_EQ(result.evidence("container_path_found"), "missing");
    expect_mount_and_point(result.finding(), kNdv5File, kNdv5File);
}

TEST(TopoNotPropagated, WithoutAHostViewAMountedFileOnlyNeedsTheVariable) {
    auto ctx = launch_from_yaml("runtime: kubernetes\n");
    MemoryFileView task("pod volumes");
    task.add_file(kNdv5File, fixture_text("nccl-topo/ndv5-topo.xml"));
    use_view(ctx, task);
    auto result = run_rule("topo.not-propagated", ctx, azure_profile());
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message, "although /opt/microsoft/ndv5-topo.xml is mounted"));
    EXPECT_EQ(result.evidence("container_path_found"), "regular file");
    ASSERT_EQ(result.finding().remediation.size(), 1U);
    EXPECT_EQ(result.set_env("NCCL_TOPO_FILE"), kNdv5File);
}

TEST(TopoNotPropagated, WithoutAHostViewQuietWhenTheTaskSeesItsFile) {
    auto ctx = launch_from_yaml("runtime: kubernetes\nenv: {NCCL_TOPO_FILE: /opt/microsoft/ndv5-topo.xml}\n");
    MemoryFileView task;
    task.add_file(kNdv5File, fixture_text("nccl-topo/ndv5-topo.xml"));
    use_view(ctx, task);
    EXPECT_TRUE(run_rule("topo.not-propagated", ctx, azure_profile()).quiet());
}

TEST(TopoNotPropagated, WithoutAHostViewBareMetalIsQuietAndContainersAreUnknown) {
    EXPECT_TRUE(run_rule("topo.not-propagated", launch_from_yaml("runtime: bare\n"), azure_profile()).quiet());
    auto result = run_rule("topo.not-propagated", launch_from_yaml("runtime: enroot\n"));
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(result.unknowns.front().reason, "launchguard has no view of the host"));
}

TEST(TopoNotPropagated, UnknownWhenTheTaskEnvironmentIsUnknown) {
    auto result = run_rule("topo.not-propagated", unknown_env_launch(), azure_profile());
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(result.unknowns.front().reason, "the task's environment is unknown"));
}

// ======================================================== topo.silently-ignored

LaunchContext with_topo_file(const std::string& contents, const std::string& path = "/opt/topo.xml") {
    auto ctx = launch_from_yaml("runtime: pyxis\n");
    ctx.env.value()["NCCL_TOPO_FILE"] = path;
    MemoryFileView view;
    view.add_file(path, contents);
    use_view(ctx, view);
    return ctx;
}

TEST(TopoSilentlyIgnored, FiresOnAnHwlocStyleRootElement) {
    auto result = run_rule("topo.silently-ignored",
                           with_topo_file("<topology version=\"2.0\">\n  <object type=\"Machine\"/>\n</topology>\n"));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "topo.silently-ignored");
    EXPECT_EQ(finding.action, Action::block);
    EXPECT_TRUE(mentions(finding.message, "NCCL_TOPO_FILE=/opt/topo.xml: root element is not <system>"));
    EXPECT_EQ(result.evidence("nccl_outcome"), "silently_ignored");
    EXPECT_TRUE(mentions(result.evidence("nccl_message"), "Ignoring element topology"));
    EXPECT_TRUE(mentions(manual_text(finding), "fix the file /opt/topo.xml: make <system version=\"1\"> the root"));
}

TEST(TopoSilentlyIgnored, FiresOnASystemWithoutCpus) {
    auto result = run_rule("topo.silently-ignored", with_topo_file("<system version=\"1\">\n</system>\n"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("line"), "1");
    EXPECT_EQ(result.evidence("line_text"), "<system version=\"1\">");
    EXPECT_TRUE(mentions(manual_text(result.finding()), "add the node's <cpu> elements"));
}

TEST(TopoSilentlyIgnored, FiresOnAFileOfOnlyComments) {
    auto result = run_rule("topo.silently-ignored", with_topo_file("<!-- generated later -->\n"));
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(manual_text(result.finding()), "the file holds no XML elements"));
}

TEST(TopoSilentlyIgnored, FiresOnUpperCaseBusIds) {
    // Derived from the real ndv5 file: the three GPU ids with hex letters in upper case.
    std::string text = fixture_text("nccl-topo/ndv5-topo.xml");
    for (const char* id : {"000a:00:00.0", "000b:00:00.0", "000c:00:00.0"}) {
        std::string upper = id;
        upper[3] = static_cast<char>(upper[3] - 'a' + 'A');
        text = replace_all(text, id, upper);
    }
    auto result = run_rule("topo.silently-ignored", with_topo_file(text));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("nccl_outcome"), "accepted");
    EXPECT_EQ(result.evidence("upper_case_busids"), "000A:00:00.0, 000B:00:00.0, 000C:00:00.0");
    EXPECT_TRUE(mentions(result.finding().message, "are upper case and never match"));
    EXPECT_EQ(manual_text(result.finding()),
              "fix the file /opt/topo.xml: write bus ids in lower case, as NCCL formats them: 000A:00:00.0 -> "
              "000a:00:00.0, 000B:00:00.0 -> 000b:00:00.0, 000C:00:00.0 -> 000c:00:00.0");
}

TEST(TopoSilentlyIgnored, ChecksTheDefaultPathWhenTheVariableIsUnset) {
    auto ctx = launch_from_yaml("{}");
    MemoryFileView view;
    view.add_file(kDefaultTopo, "<topology/>\n");
    use_view(ctx, view);
    auto result = run_rule("topo.silently-ignored", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("NCCL_TOPO_FILE"), "unset");
    EXPECT_EQ(result.evidence("default_path"), kDefaultTopo);
    EXPECT_TRUE(mentions(result.finding().message, kDefaultTopo));
}

TEST(TopoSilentlyIgnored, QuietForRealFilesNcclUses) {
    EXPECT_TRUE(run_rule("topo.silently-ignored", with_topo_file(fixture_text("nccl-topo/ndv5-topo.xml"))).quiet());
    EXPECT_TRUE(run_rule("topo.silently-ignored", with_topo_file(fixture_text("nccl-topo/ndv4-topo.xml"))).quiet());
    // A licence comment before <system> is fine.
    EXPECT_TRUE(run_rule("topo.silently-ignored", with_topo_file(fixture_text("nccl-topo/p4d-24xl-topo.xml"))).quiet());
}

TEST(TopoSilentlyIgnored, QuietWhenNcclRejectsOrTheFileIsMissing) {
    // Those are topo.nccl-rejects' and topo.file-missing's findings.
    EXPECT_TRUE(run_rule("topo.silently-ignored", with_topo_file(fixture_text("hwloc/nvidiaDGX2.xml"))).quiet());
    EXPECT_TRUE(run_rule("topo.silently-ignored", with_topo_file("")).quiet());
    EXPECT_TRUE(run_rule("topo.silently-ignored", launch_from_yaml("env: {NCCL_TOPO_FILE: /nope.xml}\n")).quiet());
    auto in_process = launch_from_yaml("env: {NCCL_TOPO_FILE: /proc/self/fd/3}\n");
    EXPECT_TRUE(run_rule("topo.silently-ignored", in_process).quiet());
}

TEST(TopoSilentlyIgnored, UnknownWhenTheContentIsNotKnown) {
    auto result = run_rule("topo.silently-ignored", launch_from_yaml("runtime: kubernetes\n"
                                                                     "env: {NCCL_TOPO_FILE: /etc/topo/topo.xml}\n"
                                                                     "unknown_files: [/etc/topo/topo.xml]\n"));
    ASSERT_TRUE(result.undecided());
    EXPECT_EQ(result.unknowns.front().reason,
              "cannot tell whether NCCL uses the topology file because the content of /etc/topo/topo.xml is not "
              "known (cannot tell)");
}

// ======================================================== topo.nccl-rejects

TEST(TopoNcclRejects, FiresOnAnHwlocExportBecauseOfItsXmlDeclaration) {
    // A common mistake: lstopo's XML handed to NCCL.
    auto result = run_rule("topo.nccl-rejects", with_topo_file(fixture_text("hwloc/nvidiaDGX2.xml")));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "topo.nccl-rejects");
    EXPECT_EQ(finding.action, Action::block);
    EXPECT_EQ(finding.message,
              "NCCL_TOPO_FILE=/opt/topo.xml makes NCCL fail communicator init on line 1: \"XML Parse "
              ": expected >, got '?'\"");
    EXPECT_EQ(result.evidence("nccl_outcome"), "rejected");
    EXPECT_EQ(result.evidence("nccl_message"), "XML Parse : expected >, got '?'");
    EXPECT_EQ(result.evidence("line"), "1");
    EXPECT_TRUE(mentions(result.evidence("line_text"), "<?xml version=\"1.0\""));
    EXPECT_EQ(manual_text(finding),
              "fix the file /opt/topo.xml: remove the <?xml ...?> declaration on line 1: "
              "NCCL's reader accepts only elements and comments");
}

TEST(TopoNcclRejects, FiresOnAnRcclVersionTwoModel) {
    auto result = run_rule("topo.nccl-rejects", with_topo_file(fixture_text("nccl-topo/rccl-topo_4p1h.xml")));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("nccl_message"), "XML Topology has wrong version 2, 1 needed");
    EXPECT_EQ(result.evidence("line"), "5");
    EXPECT_TRUE(mentions(manual_text(result.finding()), "NVIDIA NCCL reads only <system version=\"1\">"));
}

TEST(TopoNcclRejects, FiresOnTabIndentationWithTheTabMadeVisible) {
    // Derived from the real ndv5 file: its two-space indent on line 2 replaced by a tab.
    std::string text = replace_all(fixture_text("nccl-topo/ndv5-topo.xml"), "\n  <cpu", "\n\t<cpu");
    auto result = run_rule("topo.nccl-rejects", with_topo_file(text));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("line"), "2");
    EXPECT_TRUE(result.evidence("line_text").starts_with("\\t<cpu numaid=\"0\""));
    EXPECT_EQ(manual_text(result.finding()),
              "fix the file /opt/topo.xml: replace the tab indentation with spaces (the first tab is on line 2)");
}

TEST(TopoNcclRejects, FiresOnATagSplitAcrossLines) {
    std::string text = replace_all(fixture_text("nccl-topo/ndv5-topo.xml"), "<cpu numaid=\"1\" affinity",
                                   "<cpu numaid=\"1\"\n       affinity");
    auto result = run_rule("topo.nccl-rejects", with_topo_file(text));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("nccl_message"), "XML Parse : expected >, got '\\n'");
    EXPECT_TRUE(mentions(manual_text(result.finding()), "join the tag that starts on line"));
}

TEST(TopoNcclRejects, FiresOnASystemWithoutVersionAndOnAnUnterminatedFile) {
    auto no_version =
        run_rule("topo.nccl-rejects", with_topo_file("<system>\n  <cpu numaid=\"0\">\n  </cpu>\n</system>\n"));
    ASSERT_TRUE(no_version.fired());
    EXPECT_EQ(no_version.evidence("nccl_message"), "Attribute version of node system not found");
    EXPECT_EQ(manual_text(no_version.finding()),
              "fix the file /opt/topo.xml: add version=\"1\" to the <system> element on line 1");

    auto unterminated = run_rule("topo.nccl-rejects", with_topo_file("<system version=\"1\">\n  <cpu numaid=\"0\">\n"));
    ASSERT_TRUE(unterminated.fired());
    EXPECT_TRUE(mentions(unterminated.evidence("nccl_message"), "unterminated"));
    EXPECT_TRUE(mentions(manual_text(unterminated.finding()), "its end tag is missing"));
}

TEST(TopoNcclRejects, QuietForAcceptedAndIgnoredFiles) {
    EXPECT_TRUE(run_rule("topo.nccl-rejects", with_topo_file(fixture_text("nccl-topo/ndv5-topo.xml"))).quiet());
    EXPECT_TRUE(run_rule("topo.nccl-rejects", with_topo_file(fixture_text("nccl-topo/p4d-24xl-topo.xml"))).quiet());
    // CRLF line endings are accepted by NCCL's reader.
    auto crlf = replace_all(fixture_text("nccl-topo/ndv5-topo.xml"), "\n", "\r\n");
    EXPECT_TRUE(run_rule("topo.nccl-rejects", with_topo_file(crlf)).quiet());
    EXPECT_TRUE(run_rule("topo.nccl-rejects", with_topo_file("<topology/>\n")).quiet());
}

TEST(TopoNcclRejects, UnknownWhenTheEnvironmentIsUnknown) {
    auto result = run_rule("topo.nccl-rejects", unknown_env_launch());
    ASSERT_TRUE(result.undecided());
    EXPECT_EQ(result.unknowns.front().rule, "topo.nccl-rejects");
    EXPECT_TRUE(mentions(result.unknowns.front().reason, "cannot tell whether NCCL can parse the topology file"));
}

// ======================================================== topo.busid-drift

LaunchContext on_node(const std::string& hwloc, const std::string& contents) {
    auto ctx = launch_from_yaml("runtime: pyxis\nhwloc_xml: " + hwloc + "\n");
    ctx.env.value()["NCCL_TOPO_FILE"] = "/opt/topo.xml";
    MemoryFileView view;
    view.add_file("/opt/topo.xml", contents);
    use_view(ctx, view);
    return ctx;
}

TEST(TopoBusidDrift, FiresWhenAzuresFileMeetsADgx2) {
    auto result =
        run_rule("topo.busid-drift", on_node("hwloc/nvidiaDGX2.xml", fixture_text("nccl-topo/ndv5-topo.xml")));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "topo.busid-drift");
    EXPECT_EQ(finding.action, Action::block);
    EXPECT_EQ(finding.message,
              "NCCL_TOPO_FILE=/opt/topo.xml does not list 16 of 16 GPUs of this node: NCCL silently drops the "
              "unmatched parts of the file and auto-detects those devices (a file for another SKU or VM layout)");
    std::string gpus = result.evidence("gpus_missing");
    EXPECT_TRUE(gpus.starts_with("0000:34:00.0, 0000:36:00.0, "));
    EXPECT_TRUE(mentions(gpus, "0000:e7:00.0"));
    EXPECT_EQ(result.evidence("nics_missing"), "");
    EXPECT_TRUE(mentions(result.evidence("file_devices_not_on_node"), "0001:00:00.0, 0101:00:00.0"));
    EXPECT_TRUE(mentions(result.evidence("node_topology"), "nvidiaDGX2.xml"));
    ASSERT_EQ(finding.remediation.size(), 1U);
    EXPECT_EQ(finding.remediation[0].kind, Kind::manual);
    EXPECT_TRUE(mentions(finding.remediation[0].text, "use the topology file written for this node class"));
}

TEST(TopoBusidDrift, ListsMissingNicsToo) {
    auto result = run_rule("topo.busid-drift",
                           on_node("hwloc/32em64t-2n8c2t-pci-normalio.xml", fixture_text("nccl-topo/ndv5-topo.xml")));
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message, "3 of 3 GPUs and 1 of 1 RDMA NICs"));
    EXPECT_EQ(result.evidence("nics_missing"), "0000:04:00.0");
}

TEST(TopoBusidDrift, QuietWhenTheFileListsEveryDeviceOfTheNode) {
    EXPECT_TRUE(
        run_rule("topo.busid-drift", on_node("hwloc/32em64t-2n8c2t-pci-normalio.xml", topology_for_32em64t())).quiet());
}

TEST(TopoBusidDrift, FiresForOneMissingNic) {
    auto result = run_rule("topo.busid-drift",
                           on_node("hwloc/32em64t-2n8c2t-pci-normalio.xml", topology_for_32em64t("0000:05:00.0")));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("gpus_missing"), "");
    EXPECT_EQ(result.evidence("nics_missing"), "0000:04:00.0");
    EXPECT_EQ(result.evidence("file_devices_not_on_node"), "0000:05:00.0");
    EXPECT_TRUE(mentions(result.finding().message, "does not list 1 of 1 RDMA NICs of this node"));
}

TEST(TopoBusidDrift, ABusidReadsAsNcclsCStringUpToANul) {
    // NCCL keeps attribute values in C strings: "0000:83:00.0\0x" is 0000:83:00.0 to it.
    std::string file = topology_for_32em64t();
    file.replace(file.find("0000:83:00.0"), 12, std::string("0000:83:00.0\0x", 14));
    EXPECT_TRUE(run_rule("topo.busid-drift", on_node("hwloc/32em64t-2n8c2t-pci-normalio.xml", file)).quiet());
    // Placement is judged on the same bus id as the file without the NUL.
    auto with_nul = run_rule("topo.numa-drift", on_node("hwloc/32em64t-2n8c2t-pci-normalio.xml", file));
    auto without =
        run_rule("topo.numa-drift", on_node("hwloc/32em64t-2n8c2t-pci-normalio.xml", topology_for_32em64t()));
    ASSERT_EQ(with_nul.fired(), without.fired());
    if (without.fired()) {
        EXPECT_EQ(with_nul.finding().evidence, without.finding().evidence);
    }
}

TEST(TopoBusidDrift, SaysWhenOnlyTheCaseDiffers) {
    // Derived from the real ndv5 file: its first GPU replaced by a DGX-2 GPU written in upper case.
    auto dgx2 = replace_all(fixture_text("nccl-topo/ndv5-topo.xml"), "0001:00:00.0", "0000:E7:00.0");
    auto drifted = run_rule("topo.busid-drift", on_node("hwloc/nvidiaDGX2.xml", dgx2));
    ASSERT_TRUE(drifted.fired());
    EXPECT_TRUE(mentions(drifted.evidence("gpus_missing"), "0000:e7:00.0 (written 0000:E7:00.0)"));
}

TEST(TopoBusidDrift, ProposesTheProfilesFileWhenTheTaskUsesAnother) {
    auto result = run_rule("topo.busid-drift", on_node("hwloc/nvidiaDGX2.xml", fixture_text("nccl-topo/ndv4-topo.xml")),
                           azure_profile());
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    ASSERT_EQ(finding.remediation.size(), 3U);
    EXPECT_EQ(finding.remediation[0].kind, Kind::mount_file);
    EXPECT_EQ(finding.remediation[0].host_path, kNdv5File);
    EXPECT_EQ(result.set_env("NCCL_TOPO_FILE"), kNdv5File);
    EXPECT_EQ(finding.remediation[2].kind, Kind::manual);
}

TEST(TopoBusidDrift, DoesNotProposeTheProfilesFileWhenTheTaskAlreadyUsesIt) {
    // NCCL_TOPO_FILE names Azure's symlink, which resolves to the profile's file.
    auto ctx = launch_from_yaml("runtime: pyxis\nhwloc_xml: hwloc/nvidiaDGX2.xml\n");
    MemoryFileView view = azure_ndv5_root();
    use_view(ctx, view);
    auto result = run_rule("topo.busid-drift", ctx, azure_profile());
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("resolved_path"), kNdv5File);
    ASSERT_EQ(result.finding().remediation.size(), 1U);
    EXPECT_EQ(result.finding().remediation[0].kind, Kind::manual);
}

TEST(TopoBusidDrift, QuietWhenNcclWouldNotUseTheFile) {
    EXPECT_TRUE(
        run_rule("topo.busid-drift", on_node("hwloc/nvidiaDGX2.xml", fixture_text("hwloc/nvidiaDGX2.xml"))).quiet());
    EXPECT_TRUE(run_rule("topo.busid-drift", on_node("hwloc/nvidiaDGX2.xml", "<topology/>\n")).quiet());
}

TEST(TopoBusidDrift, UnknownWithoutANodeTopologyOnlyWhenThereIsAFileToCompare) {
    auto result = run_rule("topo.busid-drift", with_topo_file(fixture_text("nccl-topo/ndv5-topo.xml")));
    ASSERT_TRUE(result.undecided());
    EXPECT_EQ(result.unknowns.front().reason,
              "cannot tell whether NCCL_TOPO_FILE=/opt/topo.xml describes this node because the node topology is "
              "unknown (no node topology in the test fixture)");
    // No file in effect: nothing to compare, nothing to say.
    EXPECT_TRUE(run_rule("topo.busid-drift", launch_from_yaml("{}")).quiet());
}

// ======================================================== topo.numa-drift

TEST(TopoNumaDrift, FiresWhenTheFilePutsAGpuOnTheOtherSocket) {
    // tests/fixtures/cli: GPU 0000:03:00.0 under <cpu numaid="1">, where hwloc has it on NUMA node 0.
    auto result = run_rule("topo.numa-drift", on_node("hwloc/32em64t-2n8c2t-pci-normalio.xml",
                                                      fixture_text("cli/topo-32em64t-swapped-numa.xml")));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.action, Action::block);
    EXPECT_TRUE(mentions(finding.message, "NCCL_TOPO_FILE=/opt/topo.xml places 1 device(s) on another NUMA node"));
    EXPECT_EQ(result.evidence("GPU 0000:03:00.0"),
              "file line 5: NUMA 1, CPUs 8-15,24-31 (<cpu> on line 4); node: NUMA 0, CPUs 0-7,16-23");
    EXPECT_EQ(result.evidence("NIC 0000:04:00.0"), "");  // the NIC is where the node has it
    EXPECT_TRUE(mentions(result.evidence("node_topology"), "32em64t-2n8c2t-pci-normalio.xml"));
    ASSERT_EQ(finding.remediation.size(), 1U);
    EXPECT_TRUE(mentions(finding.remediation[0].text, "NCCL_TOPO_DUMP_FILE"));
}

TEST(TopoNumaDrift, FiresWhenTheSocketsAreRightButTheNicsAreCrossed) {
    // topology_for_32em64t() hangs the node's only NIC (NUMA 1 by hwloc) under socket 0 with affinity 0000ffff.
    auto result = run_rule("topo.numa-drift", on_node("hwloc/32em64t-2n8c2t-pci-normalio.xml", topology_for_32em64t()));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("NIC 0000:04:00.0"),
              "file line 5: NUMA 0, CPUs 0-15 (<cpu> on line 2); node: NUMA 1, CPUs 8-15,24-31");
}

TEST(TopoNumaDrift, FiresWhenTheFilePairsAGpuWithAFarNic) {
    // The 32em64t node with a second NIC on socket 0; the file hangs the
    // socket-1 NIC under GPU 0000:03:00.0's switch instead of that one.
    std::string file =
        "<system version=\"1\">\n"
        "  <cpu numaid=\"0\" affinity=\"00ff00ff\">\n"
        "    <pci busid=\"ffff:ff:01.0\" class=\"0x060400\">\n"
        "      <pci busid=\"0000:03:00.0\" class=\"0x030200\"/>\n"
        "      <pci busid=\"0000:04:00.0\" class=\"0x020700\"/>\n"
        "    </pci>\n"
        "    <pci busid=\"0000:05:00.0\" class=\"0x020700\"/>\n"
        "  </cpu>\n"
        "</system>\n";
    auto ctx = on_node("hwloc/32em64t-2n8c2t-pci-normalio.xml", file);
    Nic second;
    second.hca = "mlx5_1";
    second.busid = "0000:05:00.0";
    second.numa_node = 0;
    second.pci_bridges = {"0000:00:1e.0"};
    ctx.topology.value().nics.push_back(second);
    auto result = run_rule("topo.numa-drift", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message, "1 GPU(s) paired with a NIC the node does not put nearest"));
    EXPECT_EQ(result.evidence("nearest NIC of GPU 0000:03:00.0"),
              "file line 4: 0000:04:00.0 (PIX); node: 0000:05:00.0 (PHB)");
    EXPECT_EQ(result.evidence("NIC 0000:04:00.0"),
              "file line 5: NUMA 0, CPUs 0-7,16-23 (<cpu> on line 2); node: "
              "NUMA 1, CPUs 8-15,24-31");
}

TEST(TopoNumaDrift, QuietWhenTheFilePlacesEveryDeviceAsTheNodeDoes) {
    EXPECT_TRUE(run_rule("topo.numa-drift", on_node("hwloc/32em64t-2n8c2t-pci-normalio.xml",
                                                    fixture_text("cli/topo-32em64t-agreeing.xml")))
                    .quiet());
}

TEST(TopoNumaDrift, UndecidedWithoutTheNodeTopology) {
    auto ctx = launch_from_yaml("runtime: pyxis\n");
    ctx.env.value()["NCCL_TOPO_FILE"] = "/opt/topo.xml";
    MemoryFileView view;
    view.add_file("/opt/topo.xml", fixture_text("cli/topo-32em64t-swapped-numa.xml"));
    use_view(ctx, view);
    auto result = run_rule("topo.numa-drift", ctx);
    EXPECT_TRUE(result.undecided());
}

TEST(TopoNumaDrift, ProposesTheProfilesFileWhenTheTaskUsesAnother) {
    auto result =
        run_rule("topo.numa-drift",
                 on_node("hwloc/32em64t-2n8c2t-pci-normalio.xml", fixture_text("cli/topo-32em64t-swapped-numa.xml")),
                 azure_profile());
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.finding().remediation[0].kind, Kind::mount_file);
    EXPECT_EQ(result.set_env("NCCL_TOPO_FILE"), kNdv5File);
}

// ======================================================== topo.required

TEST(TopoRequired, FiresWhenTheProfileNeedsAFileAndNoneIsInEffect) {
    auto result = run_rule("topo.required", launch_from_yaml("runtime: pyxis\n"), azure_profile());
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "topo.required");
    EXPECT_EQ(finding.action, Action::block);
    EXPECT_EQ(finding.message,
              "profile azure-ndv5-test requires a topology file, but none is in effect: NCCL_TOPO_FILE is unset and "
              "/var/run/nvidia-topologyd/virtualTopology.xml is missing; NCCL will use the node's own (in a VM, "
              "synthetic) PCI topology without a message");
    EXPECT_EQ(result.evidence("profile"), "azure-ndv5-test");
    EXPECT_EQ(result.evidence("profile_host_path"), kNdv5File);
    EXPECT_EQ(result.evidence("NCCL_TOPO_FILE"), "unset");
    EXPECT_EQ(result.evidence("default_path"), kDefaultTopo);
    expect_mount_and_point(finding, kNdv5File, kNdv5File);
}

TEST(TopoRequired, FiresWhenTheNamedFileCannotBeRead) {
    auto ctx = launch_from_yaml("runtime: pyxis\n");
    MemoryFileView view;
    view.add_file("/etc/nccl.conf", azure_ndv5_conf()).add_symlink(kNdv5Link, kNdv5File);
    use_view(ctx, view);
    auto result = run_rule("topo.required", ctx, azure_profile());
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message,
                         "NCCL_TOPO_FILE=/opt/microsoft/ndv5/topo.xml is a dangling "
                         "symlink to /opt/microsoft/ndv5-topo.xml"));
    EXPECT_EQ(result.evidence("source"), "/etc/nccl.conf:2");
}

TEST(TopoRequired, QuietWhenAFileIsInEffect) {
    auto profile = azure_profile();
    auto from_default = launch_from_yaml("{}");
    MemoryFileView view;
    view.add_file(kDefaultTopo, fixture_text("nccl-topo/ndv5-topo.xml"));
    use_view(from_default, view);
    EXPECT_TRUE(run_rule("topo.required", from_default, profile).quiet());
    EXPECT_TRUE(run_rule("topo.required", with_topo_file(fixture_text("nccl-topo/ndv5-topo.xml")), profile).quiet());
    auto in_process = launch_from_yaml("env: {NCCL_TOPO_FILE: /proc/self/fd/3}\n");
    EXPECT_TRUE(run_rule("topo.required", in_process, profile).quiet());
}

TEST(TopoRequired, QuietWhenTheProfileDoesNotRequireOne) {
    EXPECT_TRUE(run_rule("topo.required", launch_from_yaml("runtime: pyxis\n")).quiet());
    EXPECT_TRUE(run_rule("topo.required", unknown_env_launch()).quiet());
}

TEST(TopoRequired, UnknownWhenTheEnvironmentOrTheViewCannotTell) {
    auto env = run_rule("topo.required", unknown_env_launch(), azure_profile());
    ASSERT_TRUE(env.undecided());
    EXPECT_TRUE(mentions(env.unknowns.front().reason,
                         "cannot tell whether a topology file is in effect because the "
                         "task's environment is unknown"));

    auto pod = launch_from_yaml(
        "runtime: kubernetes\n"
        "unknown_files: [/var/run/nvidia-topologyd/virtualTopology.xml]\n");
    auto view = run_rule("topo.required", pod, azure_profile());
    ASSERT_TRUE(view.undecided());
    EXPECT_TRUE(mentions(view.unknowns.front().reason, "the view cannot tell what is at " + std::string(kDefaultTopo)));
}

}  // namespace
}  // namespace launchguard
