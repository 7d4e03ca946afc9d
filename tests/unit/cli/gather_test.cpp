// `launchguard gather` run as a user runs it: the real executable records a
// node into a directory, and `check` / `node-check` on that directory must
// judge the node exactly as they judge the source. The sources are the
// recorded trees in tests/fixtures/sysfs/, so every comparison is
// deterministic; one smoke test gathers this machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "support/launch_fixture.h"
#include "support/run_command.h"
#include "support/text.h"
#include "unit/probe/temp_tree.h"

namespace launchguard {
namespace {

namespace fs = std::filesystem;
using testing::cli;
using testing::fixture_path;
using testing::quote_arg;
using testing::read_all;
using testing::run_command;

std::string node_xml() { return fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml"); }

std::string gather(const std::string& dir, const std::string& sysfs, const std::string& extra = "") {
    return cli() + " gather " + quote_arg(dir) + " --sysfs-root " + quote_arg(sysfs) + " --hwloc-xml " +
           quote_arg(node_xml()) + " " + extra;
}

// A recorded launch (as cli_test.cpp's) on the node under `sysfs` with the
// topology `xml`: the task side is fixed, only the node varies.
std::string check(const std::string& sysfs, const std::string& xml, const std::string& task = "--cpus 0-3 --gpus 0") {
    return cli() + " check --root " + quote_arg(testing::rootfs_with_ndv5_topology()) + " --env-file " +
           quote_arg(fixture_path("cli/job.env")) + " --hwloc-xml " + quote_arg(xml) + " --sysfs-root " +
           quote_arg(sysfs) + " --runtime pyxis --format json " + task;
}
// A task on a node that may have no GPU at all.
constexpr const char* kTaskWithoutGpus = "--cpus 0 --gpus none";

std::string node_check_json(const std::string& sysfs, const std::string& xml) {
    return cli() + " node-check --no-topology-cache --format json --hwloc-xml " + quote_arg(xml) + " --sysfs-root " +
           quote_arg(sysfs);
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
}

// The findings of a JSON report, with the two places the node was read from
// written the same way: evidence names the files it came from.
std::string findings(std::string report, const std::string& sysfs, const std::string& xml) {
    replace_all(report, xml, "<topology>");
    replace_all(report, sysfs, "<node>");
    boost::system::error_code ec;
    auto value = boost::json::parse(report, ec);
    EXPECT_FALSE(ec) << "not JSON: " << report;
    if (ec) return {};
    return boost::json::serialize(value.as_object().at("findings"));
}

class GatherFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(GatherFixture, CheckAndNodeCheckJudgeTheGatheredTreeAsTheSource) {
    test::TempTree tree;
    const std::string source = fixture_path(std::string("sysfs/") + GetParam());
    const std::string dir = tree.path("gathered");
    auto gathered = run_command(gather(dir, source));
    ASSERT_EQ(gathered.exit_code, 0) << gathered.err;
    const std::string gathered_xml = dir + "/hwloc.xml";

    auto before = run_command(check(source, node_xml()));
    auto after = run_command(check(dir, gathered_xml));
    EXPECT_EQ(before.exit_code, after.exit_code) << after.err;
    const std::string expected = findings(before.out, source, node_xml());
    EXPECT_FALSE(expected.empty());
    EXPECT_EQ(expected, findings(after.out, dir, gathered_xml));

    auto node_before = run_command(node_check_json(source, node_xml()));
    auto node_after = run_command(node_check_json(dir, gathered_xml));
    EXPECT_EQ(node_before.exit_code, node_after.exit_code) << node_after.err;
    EXPECT_EQ(findings(node_before.out, source, node_xml()), findings(node_after.out, dir, gathered_xml));
}

INSTANTIATE_TEST_SUITE_P(RecordedNodes, GatherFixture,
                         ::testing::Values("h100-baremetal", "kvm-guest-2n", "azure-vm-degraded", "misconfigured-node",
                                           "cx8-fabric-mixed"),
                         [](const ::testing::TestParamInfo<const char*>& instance) {
                             std::string name = instance.param;
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

TEST(Gather, TakesOnlyWhatTheProbesRead) {
    test::TempTree tree;
    fs::copy(fixture_path("sysfs/h100-baremetal"), tree.path("node"),
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    // Files no probe reads, beside ones they do.
    tree.write("node/proc/self/environ", "SECRET=1");
    tree.write("node/sys/devices/system/cpu/cpu0/cpufreq/scaling_setspeed", "<unsupported>\n");
    tree.write("node/private.txt", "not node facts\n");

    auto gathered = run_command(gather(tree.path("gathered"), tree.path("node")));
    ASSERT_EQ(gathered.exit_code, 0) << gathered.err;
    EXPECT_FALSE(fs::exists(tree.path("gathered/proc/self")));
    EXPECT_FALSE(fs::exists(tree.path("gathered/sys/devices/system/cpu/cpu0/cpufreq/scaling_setspeed")));
    EXPECT_FALSE(fs::exists(tree.path("gathered/private.txt")));
    EXPECT_EQ(read_all(tree.path("gathered/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")),
              read_all(tree.path("node/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")));
    // mlx5_1, which the topology lacks, takes its bus id from its device link:
    // a link inside the tree.
    EXPECT_TRUE(fs::is_symlink(tree.path("gathered/sys/class/infiniband/mlx5_1/device")));
    EXPECT_EQ(fs::canonical(tree.path("gathered/sys/class/infiniband/mlx5_1/device")).filename(), "0000:1a:00.1");
    EXPECT_EQ(read_all(tree.path("gathered/hwloc.xml")), read_all(node_xml()));

    const std::string manifest = read_all(tree.path("gathered/GATHERED.txt"));
    EXPECT_NE(manifest.find(LAUNCHGUARD_VERSION), std::string::npos) << manifest;
    EXPECT_NE(manifest.find("hostname: "), std::string::npos) << manifest;
    const std::string replay = "launchguard check --sysfs-root " + tree.path("gathered") + " --hwloc-xml " +
                               tree.path("gathered") + "/hwloc.xml";
    EXPECT_NE(manifest.find(replay), std::string::npos) << manifest;
    EXPECT_NE(gathered.out.find(replay), std::string::npos) << gathered.out;
    // Nothing is left beside the directory.
    int entries = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(tree.root())) ++entries;
    EXPECT_EQ(entries, 2);
}

TEST(Gather, RefusesANonEmptyDirectoryUnlessForced) {
    test::TempTree tree;
    tree.write("gathered/notes.txt", "mine\n");
    const std::string source = fixture_path("sysfs/kvm-guest-2n");
    auto refused = run_command(gather(tree.path("gathered"), source));
    EXPECT_EQ(refused.exit_code, 2);
    EXPECT_NE(refused.err.find(tree.path("gathered") + ": not empty"), std::string::npos) << refused.err;
    EXPECT_FALSE(fs::exists(tree.path("gathered/sys")));

    auto forced = run_command(gather(tree.path("gathered"), source, "--force"));
    EXPECT_EQ(forced.exit_code, 0) << forced.err;
    EXPECT_EQ(read_all(tree.path("gathered/notes.txt")), "mine\n");
    EXPECT_TRUE(fs::exists(tree.path("gathered/GATHERED.txt")));
    // Forced again over its own output: files are replaced, not refused.
    auto again = run_command(gather(tree.path("gathered"), source, "--force"));
    EXPECT_EQ(again.exit_code, 0) << again.err;
}

TEST(Gather, NeverWritesThroughALinkInTheDirectory) {
    test::TempTree tree;
    tree.mkdir("elsewhere");
    tree.symlink(tree.path("elsewhere"), "gathered/sys");
    auto r = run_command(gather(tree.path("gathered"), fixture_path("sysfs/kvm-guest-2n"), "--force"));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("gathered/sys: a symbolic link or not a directory: refused"), std::string::npos) << r.err;
    EXPECT_TRUE(fs::is_empty(tree.path("elsewhere")));
}

TEST(Gather, BadInputLeavesNothingBehind) {
    test::TempTree tree;
    tree.write("broken.xml", "<topology><object");
    auto r = run_command(cli() + " gather " + quote_arg(tree.path("gathered")) + " --sysfs-root " +
                         quote_arg(fixture_path("sysfs/kvm-guest-2n")) + " --hwloc-xml " +
                         quote_arg(tree.path("broken.xml")));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("broken.xml"), std::string::npos) << r.err;
    int entries = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(tree.root())) ++entries;
    EXPECT_EQ(entries, 1) << "only broken.xml";

    tree.write("a-file", "x");
    auto not_dir = run_command(gather(tree.path("a-file"), fixture_path("sysfs/kvm-guest-2n")));
    EXPECT_EQ(not_dir.exit_code, 2);
    EXPECT_NE(not_dir.err.find("not a directory"), std::string::npos) << not_dir.err;
    EXPECT_EQ(run_command(cli() + " gather").exit_code, 2);
}

// This machine, end to end: whatever it is, its tree is one `check` accepts.
TEST(Gather, ThisMachineReplays) {
    test::TempTree tree;
    auto gathered = run_command(cli() + " gather " + quote_arg(tree.path("node")));
    ASSERT_EQ(gathered.exit_code, 0) << gathered.err;
    auto replayed = run_command(check(tree.path("node"), tree.path("node/hwloc.xml"), kTaskWithoutGpus));
    EXPECT_NE(replayed.exit_code, 2) << replayed.err;
}

// A tree gathered on a development machine (a VM without cpufreq, IOMMU
// groups or GPUs) and committed: it allows, and what it cannot tell is the
// power settings, not the IOMMU, whose empty sys/kernel/iommu_groups only a
// .keep file carries through git.
TEST(Gather, CommittedDevelopmentMachineTreeGivesAStableVerdict) {
    const std::string node = fixture_path("sysfs/dev-machine-gathered");
    auto r = run_command(check(node, node + "/hwloc.xml", kTaskWithoutGpus));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    boost::json::object report = boost::json::parse(r.out).as_object();
    EXPECT_TRUE(report.at("findings").as_array().empty()) << r.out;
    std::set<std::string> unknown;
    for (const auto& item : report.at("unknown").as_array()) unknown.insert(std::string(item.at("rule").as_string()));
    // mem.nofile-low reads launchguard's own RLIMIT_NOFILE (no --pid): whether
    // it is below the profile's minimum is this machine's, not the tree's.
    unknown.erase("mem.nofile-low");
    EXPECT_EQ(unknown, (std::set<std::string>{"conf.host-not-visible", "power.cstates", "power.governor",
                                              "power.turbo-off", "shm.small"}))
        << r.out;
}

}  // namespace
}  // namespace launchguard
