// conf.* rules: the host's /etc/nccl.conf at the container boundary (Azure's
// real ndv5.sh writes it), and NCCL's literal conf parser.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rules/families.h"
#include "support/azure_fixtures.h"
#include "support/launch_fixture.h"
#include "support/memory_file_view.h"
#include "support/rule_harness.h"

namespace launchguard {
namespace {

using testing::azure_ndv5_conf;
using testing::azure_ndv5_root;
using testing::kNdv5File;
using testing::kNdv5Link;
using testing::launch_from_yaml;
using testing::MemoryFileView;
using testing::mentions;
using testing::run_rule;
using testing::use_host;
using testing::use_view;
using Kind = RemediationOp::Kind;

std::vector<std::string> set_env_names(const Finding& finding) {
    std::vector<std::string> names;
    for (const auto& op : finding.remediation) {
        if (op.kind == Kind::set_env) names.push_back(op.name + "=" + op.value);
    }
    return names;
}

// ======================================================== conf.host-not-visible

TEST(ConfHostNotVisible, BlocksWhenAzuresHostConfDoesNotReachTheContainer) {
    // The conf derived from the real ndv5.sh, written out.
    ASSERT_EQ(azure_ndv5_conf(),
              "NCCL_IB_PCI_RELAXED_ORDERING=1\n"
              "NCCL_TOPO_FILE=/opt/microsoft/ndv5/topo.xml\n"
              "NCCL_IGNORE_CPU_AFFINITY=1\n");
    auto ctx = launch_from_yaml("runtime: pyxis\n");
    use_host(ctx, azure_ndv5_root("host /"));

    auto result = run_rule("conf.host-not-visible", ctx);
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "conf.host-not-visible");
    EXPECT_EQ(finding.action, Action::block);
    EXPECT_EQ(finding.severity, Severity::error);
    EXPECT_EQ(finding.message,
              "the host's /etc/nccl.conf sets NCCL_IB_PCI_RELAXED_ORDERING=1, "
              "NCCL_TOPO_FILE=/opt/microsoft/ndv5/topo.xml, NCCL_IGNORE_CPU_AFFINITY=1 but the task in the container "
              "does not get "
              "them "
              "(enroot does not mount /etc/nccl.conf): NCCL in the task runs without the host's settings");
    EXPECT_TRUE(finding.fix_or_block);  // it carries NCCL_TOPO_FILE
    EXPECT_EQ(result.evidence("host_conf"), "/etc/nccl.conf");
    EXPECT_EQ(result.evidence("host_view"), "host /");
    EXPECT_EQ(result.evidence("NCCL_TOPO_FILE"), "/opt/microsoft/ndv5/topo.xml (host /etc/nccl.conf:2; task: unset)");
    EXPECT_EQ(result.evidence("NCCL_IB_PCI_RELAXED_ORDERING"), "1 (host /etc/nccl.conf:1; task: unset)");
    EXPECT_EQ(result.evidence("task_conf_files"), "none");
    EXPECT_EQ(result.evidence("runtime"), "pyxis");

    EXPECT_EQ(set_env_names(finding),
              (std::vector<std::string>{"NCCL_IB_PCI_RELAXED_ORDERING=1", "NCCL_TOPO_FILE=/opt/microsoft/ndv5/topo.xml",
                                        "NCCL_IGNORE_CPU_AFFINITY=1"}));
    // The variable alone would point at nothing: the real file is mounted where it points.
    ASSERT_EQ(finding.remediation.size(), 4U);
    EXPECT_EQ(finding.remediation[2].kind, Kind::mount_file);
    EXPECT_EQ(finding.remediation[2].host_path, kNdv5File);
    EXPECT_EQ(finding.remediation[2].container_path, kNdv5Link);
}

TEST(ConfHostNotVisible, WarnsWhenOnlyLesserValuesAreMissed) {
    // The job carries the topology variable (and the file) itself.
    auto ctx = launch_from_yaml("runtime: pyxis\nenv: {NCCL_TOPO_FILE: /opt/microsoft/ndv5/topo.xml}\n");
    use_host(ctx, azure_ndv5_root("host /"));
    auto result = run_rule("conf.host-not-visible", ctx);
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.action, Action::warn);
    EXPECT_EQ(finding.severity, Severity::warning);
    EXPECT_TRUE(mentions(finding.message, "sets NCCL_IB_PCI_RELAXED_ORDERING=1, NCCL_IGNORE_CPU_AFFINITY=1 but"));
    EXPECT_EQ(result.evidence("NCCL_TOPO_FILE"), "");
    EXPECT_EQ(set_env_names(finding),
              (std::vector<std::string>{"NCCL_IB_PCI_RELAXED_ORDERING=1", "NCCL_IGNORE_CPU_AFFINITY=1"}));
    EXPECT_FALSE(result.has_op(Kind::mount_file));
}

TEST(ConfHostNotVisible, BlocksForAMissedIbHca) {
    auto ctx = launch_from_yaml("runtime: enroot\n");
    MemoryFileView host;
    host.add_file("/etc/nccl.conf", "NCCL_IB_HCA=mlx5_0,mlx5_1\nNCCL_DEBUG=WARN\n");
    use_host(ctx, host);
    auto result = run_rule("conf.host-not-visible", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.finding().action, Action::block);
    EXPECT_EQ(result.set_env("NCCL_IB_HCA"), "mlx5_0,mlx5_1");
    EXPECT_EQ(result.set_env("NCCL_DEBUG"), "WARN");
}

TEST(ConfHostNotVisible, QuietWhenTheImageCarriesTheSameConf) {
    auto ctx = launch_from_yaml("runtime: pyxis\n");
    MemoryFileView task;
    task.add_file("/etc/nccl.conf", azure_ndv5_conf());
    use_view(ctx, task);
    use_host(ctx, azure_ndv5_root("host /"));
    EXPECT_TRUE(run_rule("conf.host-not-visible", ctx).quiet());
}

TEST(ConfHostNotVisible, CountsADifferentImageConfAsMissed) {
    auto ctx = launch_from_yaml("runtime: pyxis\n");
    MemoryFileView task;
    task.add_file("/etc/nccl.conf",
                  "NCCL_TOPO_FILE=/opt/image/old-topo.xml\n"
                  "NCCL_IB_PCI_RELAXED_ORDERING=1\nNCCL_IGNORE_CPU_AFFINITY=1\n");
    use_view(ctx, task);
    use_host(ctx, azure_ndv5_root("host /"));
    auto result = run_rule("conf.host-not-visible", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.finding().action, Action::block);
    EXPECT_EQ(result.evidence("NCCL_TOPO_FILE"),
              "/opt/microsoft/ndv5/topo.xml (host /etc/nccl.conf:2; task: '/opt/image/old-topo.xml' from "
              "/etc/nccl.conf:1)");
    EXPECT_EQ(result.evidence("task_conf_files"), "/etc/nccl.conf");
}

TEST(ConfHostNotVisible, AnEnvironmentOverrideIsDeliberate) {
    auto ctx = launch_from_yaml("runtime: enroot\nenv: {NCCL_IB_HCA: mlx5_2}\n");
    MemoryFileView host;
    host.add_file("/etc/nccl.conf", "NCCL_IB_HCA=mlx5_0\n");
    use_host(ctx, host);
    EXPECT_TRUE(run_rule("conf.host-not-visible", ctx).quiet());

    // ...but it is shown when the rule fires for other values.
    host.add_file("/etc/nccl.conf", "NCCL_IB_HCA=mlx5_0\nNCCL_NET_GDR_LEVEL=PHB\n");
    use_host(ctx, host);
    auto result = run_rule("conf.host-not-visible", ctx);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.finding().action, Action::warn);
    EXPECT_EQ(result.evidence("NCCL_IB_HCA"),
              "mlx5_0 (host /etc/nccl.conf:1; overridden by the task environment: 'mlx5_2')");
    EXPECT_EQ(result.set_env("NCCL_IB_HCA"), "");
}

TEST(ConfHostNotVisible, QuietWhenTheHostConfSetsNothingNcclReads) {
    auto ctx = launch_from_yaml("runtime: enroot\n");
    MemoryFileView host;
    // A comment, a non-NCCL variable and a name NCCL never reads (conf.lint's business).
    host.add_file("/etc/nccl.conf", "# tuned by cloud-init\nOMP_NUM_THREADS=4\nNCCL_IB_HCA = mlx5\n");
    use_host(ctx, host);
    EXPECT_TRUE(run_rule("conf.host-not-visible", ctx).quiet());

    auto no_conf = launch_from_yaml("runtime: enroot\n");
    use_host(no_conf, MemoryFileView());
    EXPECT_TRUE(run_rule("conf.host-not-visible", no_conf).quiet());
}

TEST(ConfHostNotVisible, TheFirstLineForANameIsTheOneNcclKeeps) {
    auto ctx = launch_from_yaml("runtime: enroot\nenv: {NCCL_SOCKET_IFNAME: eth0}\n");
    MemoryFileView host;
    host.add_file("/etc/nccl.conf", "NCCL_SOCKET_IFNAME=eth0\nNCCL_SOCKET_IFNAME=ib0\n");
    use_host(ctx, host);
    EXPECT_TRUE(run_rule("conf.host-not-visible", ctx).quiet());
}

TEST(ConfHostNotVisible, WithoutAHostViewContainersAreUnknownAndBareMetalIsQuiet) {
    auto pyxis = run_rule("conf.host-not-visible", launch_from_yaml("runtime: pyxis\n"));
    ASSERT_TRUE(pyxis.undecided());
    EXPECT_EQ(pyxis.unknowns.front().rule, "conf.host-not-visible");
    EXPECT_EQ(pyxis.unknowns.front().reason,
              "cannot tell whether the host's /etc/nccl.conf reaches the task because launchguard has no view of the "
              "host (run it as the enroot hook, or pass --host-root)");
    EXPECT_TRUE(run_rule("conf.host-not-visible", launch_from_yaml("runtime: bare\n")).quiet());
}

TEST(ConfHostNotVisible, UnknownWhenTheTaskEnvironmentIsUnknown) {
    auto ctx = launch_from_yaml("runtime: pyxis\n");
    ctx.env = Fact<Environment>::unknown("no /proc/4242/environ");
    use_host(ctx, azure_ndv5_root("host /"));
    auto result = run_rule("conf.host-not-visible", ctx);
    ASSERT_TRUE(result.undecided());
    EXPECT_EQ(result.unknowns.front().reason,
              "cannot tell whether the task gets NCCL_IB_PCI_RELAXED_ORDERING from the host's /etc/nccl.conf because "
              "the task's environment is unknown (no /proc/4242/environ)");
}

TEST(ConfHostNotVisible, UnknownWhenTheHostConfCannotBeRead) {
    auto ctx = launch_from_yaml("runtime: enroot\n");
    MemoryFileView host;
    host.add_unreadable("/etc/nccl.conf", "permission denied");
    use_host(ctx, host);
    auto result = run_rule("conf.host-not-visible", ctx);
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(result.unknowns.front().reason, "is unreadable (permission denied)"));
}

// ======================================================== conf.lint

LaunchContext with_conf(const std::string& path, const std::string& contents, const std::string& env_yaml = "{}") {
    auto ctx = launch_from_yaml("env: " + env_yaml + "\n");
    MemoryFileView view;
    view.add_file(path, contents);
    use_view(ctx, view);
    return ctx;
}

TEST(ConfLint, FiresOnSpacesAroundEquals) {
    auto result = run_rule("conf.lint", with_conf("/etc/nccl.conf", "NCCL_DEBUG=WARN\nNCCL_IB_HCA = mlx5\n"));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.rule, "conf.lint");
    EXPECT_EQ(finding.action, Action::warn);
    EXPECT_EQ(finding.severity, Severity::warning);
    EXPECT_EQ(finding.message,
              "/etc/nccl.conf:2: spaces around '=': NCCL sets a variable named 'NCCL_IB_HCA '; write "
              "NCCL_IB_HCA=mlx5");
    EXPECT_EQ(result.evidence("location"), "/etc/nccl.conf:2");
    EXPECT_EQ(result.evidence("as_written"), "NCCL_IB_HCA = mlx5");
    EXPECT_EQ(result.evidence("corrected"), "NCCL_IB_HCA=mlx5");
    ASSERT_EQ(finding.remediation.size(), 1U);
    EXPECT_EQ(finding.remediation[0].kind, Kind::manual);
    EXPECT_EQ(finding.remediation[0].text, "in /etc/nccl.conf line 2, write: NCCL_IB_HCA=mlx5");
}

TEST(ConfLint, OneFindingPerIssueAcrossTheFile) {
    auto result = run_rule("conf.lint", with_conf("/etc/nccl.conf",
                                                  "export NCCL_DEBUG=INFO\n"
                                                  "NCCL_SOCKET_IFNAME=\"eth0\"\n"
                                                  "NCCL_IB_QPS_PER_CONNECTION=4 # Exemplar recipe\n"
                                                  "NCCL_BUFFSIZE=8M\n"));
    ASSERT_EQ(result.findings.size(), 4U);
    EXPECT_EQ(result.findings[0].evidence.front().second, "/etc/nccl.conf:1");
    EXPECT_TRUE(mentions(result.findings[0].message, "'export' is not understood"));
    EXPECT_TRUE(mentions(result.findings[0].message, "write NCCL_DEBUG=INFO"));
    EXPECT_TRUE(mentions(result.findings[1].message, "quotes are kept literally"));
    EXPECT_TRUE(mentions(result.findings[1].message, "write NCCL_SOCKET_IFNAME=eth0"));
    EXPECT_TRUE(mentions(result.findings[2].message, "'#' does not start a comment"));
    EXPECT_EQ(result.findings[3].message,
              "/etc/nccl.conf:4: size suffixes are not understood: strtoll reads '8M' as 8, not 8388608; write "
              "NCCL_BUFFSIZE=8388608");
    EXPECT_EQ(result.findings[3].remediation.at(0).text, "in /etc/nccl.conf line 4, write: NCCL_BUFFSIZE=8388608");
}

TEST(ConfLint, EnvironmentValuesGetACorrectedSetEnv) {
    auto result = run_rule("conf.lint", launch_from_yaml("env: {NCCL_BUFFSIZE: 8M, CUDA_VISIBLE_DEVICES: '0'}\n"));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.message,
              "environment NCCL_BUFFSIZE: size suffixes are not understood: strtoll reads '8M' as 8, "
              "not 8388608; set NCCL_BUFFSIZE=8388608");
    EXPECT_EQ(result.evidence("location"), "environment");
    EXPECT_EQ(result.evidence("as_written"), "NCCL_BUFFSIZE=8M");
    ASSERT_EQ(finding.remediation.size(), 1U);
    EXPECT_EQ(finding.remediation[0].kind, Kind::set_env);
    EXPECT_EQ(result.set_env("NCCL_BUFFSIZE"), "8388608");
}

TEST(ConfLint, AValueWithNoIntegerToOfferIsNotRepeatedAsTheFix) {
    auto result = run_rule("conf.lint", launch_from_yaml("env: {NCCL_IB_QPS_PER_CONNECTION: '1e99'}\n"));
    ASSERT_TRUE(result.fired());
    const Finding& finding = result.finding();
    EXPECT_EQ(finding.message.find("set NCCL_IB_QPS_PER_CONNECTION=1e99"), std::string::npos) << finding.message;
    EXPECT_TRUE(mentions(finding.message, "give NCCL_IB_QPS_PER_CONNECTION an integer value")) << finding.message;
    ASSERT_EQ(finding.remediation.size(), 1U);
    EXPECT_EQ(finding.remediation[0].kind, Kind::manual);
}

TEST(ConfLint, IsLinearInTheNumberOfLines) {
    // 40,000 broken lines took 2 s with a linear search per issue; minutes past that.
    std::string conf;
    for (int i = 0; i < 200000; ++i) conf += "NCCL_BUFFSIZE=8M\n";
    auto start = std::chrono::steady_clock::now();
    auto result = run_rule("conf.lint", with_conf("/etc/nccl.conf", conf));
    auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(result.findings.size(), 200000U);
    EXPECT_LT(seconds, 20.0);
}

TEST(ConfLint, QuotedEnvironmentValuesAreLiteralToo) {
    // docker --env-file and many launchers keep quotes as part of the value.
    auto result = run_rule("conf.lint", launch_from_yaml("env: {NCCL_IB_HCA: '\"mlx5_0\"'}\n"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.set_env("NCCL_IB_HCA"), "mlx5_0");
}

TEST(ConfLint, QuietForAzuresRealConfAndCleanValues) {
    EXPECT_TRUE(run_rule("conf.lint", with_conf("/etc/nccl.conf", azure_ndv5_conf())).quiet());
    EXPECT_TRUE(run_rule("conf.lint", with_conf("/etc/nccl.conf",
                                                "# NCCL settings for this cluster\n"
                                                "NCCL_IB_QPS_PER_CONNECTION=4\n"
                                                "NCCL_BUFFSIZE=0x800000\n"))
                    .quiet());
    EXPECT_TRUE(run_rule("conf.lint", launch_from_yaml("env: {NCCL_BUFFSIZE: '8388608', NCCL_IB_HCA: '=mlx5_0:1', "
                                                       "OTHER: '\"quoted\"'}\n"))
                    .quiet());
}

TEST(ConfLint, LintsTheUserConfUnderItsOwnPath) {
    auto result =
        run_rule("conf.lint", with_conf("/home/alice/.nccl.conf", "NCCL_NET_GDR_LEVEL = PHB\n", "{HOME: /home/alice}"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("location"), "/home/alice/.nccl.conf:1");
}

TEST(ConfLint, FiresOnNcclConfFileInsideAConfFile) {
    auto result = run_rule("conf.lint", with_conf("/etc/nccl.conf", "NCCL_CONF_FILE=/opt/site/nccl.conf\n"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.finding().message,
              "/etc/nccl.conf:1: NCCL_CONF_FILE inside a conf file has no effect: NCCL reads "
              "it from the process environment before it loads any file");
    EXPECT_EQ(result.evidence("as_written"), "NCCL_CONF_FILE=/opt/site/nccl.conf");
}

TEST(ConfLint, FiresWhenNcclConfFileNamesAFileTheTaskLacks) {
    auto result = run_rule("conf.lint", launch_from_yaml("env: {NCCL_CONF_FILE: /shared/nccl.conf, HOME: /root}\n"
                                                         "files: {/root/.nccl.conf: \"NCCL_DEBUG=WARN\\n\"}\n"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.finding().message,
              "NCCL_CONF_FILE=/shared/nccl.conf is missing in the task: NCCL skips it, and "
              "$HOME/.nccl.conf too, without a message");
    EXPECT_EQ(result.evidence("found"), "missing");
    EXPECT_EQ(result.evidence("source"), "environment");
    EXPECT_TRUE(mentions(result.finding().remediation.at(0).text, "mount the file NCCL_CONF_FILE names"));

    auto present = launch_from_yaml(
        "env: {NCCL_CONF_FILE: /shared/nccl.conf}\n"
        "files: {/shared/nccl.conf: \"NCCL_DEBUG=WARN\\n\"}\n");
    EXPECT_TRUE(run_rule("conf.lint", present).quiet());
}

TEST(ConfLint, UnknownEnvironmentStillLintsTheFiles) {
    auto ctx = with_conf("/etc/nccl.conf", "NCCL_BUFFSIZE=4M\n");
    ctx.env = Fact<Environment>::unknown("manifest env comes from a ConfigMap");
    auto result = run_rule("conf.lint", ctx);
    ASSERT_EQ(result.findings.size(), 1U);
    EXPECT_EQ(result.findings[0].evidence.front().second, "/etc/nccl.conf:1");
    ASSERT_EQ(result.unknowns.size(), 1U);
    EXPECT_EQ(result.unknowns[0].reason,
              "cannot lint NCCL_* values in the task environment because it is unknown "
              "(manifest env comes from a ConfigMap)");
}

}  // namespace
}  // namespace launchguard
