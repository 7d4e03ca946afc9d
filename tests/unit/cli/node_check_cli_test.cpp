// `launchguard node-check` as node-problem-detector, node_exporter and an
// operator see it: the real executable against recorded nodes (hwloc XML +
// sysfs trees), never this machine's own state, and never its topology cache.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <boost/json.hpp>
#include <fstream>
#include <regex>
#include <sstream>

#include "support/launch_fixture.h"
#include "support/run_command.h"
#include "support/text.h"
#include "unit/probe/temp_tree.h"

namespace launchguard {
namespace {

using testing::cli;
using testing::fixture_path;
using testing::quote_arg;
using testing::read_all;
using testing::run_command;

// The 32em64t node with one of the recorded sysfs trees.
std::string node_check(const std::string& sysfs, const std::string& extra = "") {
    return cli() + " node-check --no-topology-cache --hwloc-xml " +
           quote_arg(fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml")) + " --sysfs-root " +
           quote_arg(fixture_path("sysfs/" + sysfs)) + " " + extra;
}

// kvm-guest-2n under a profile that accepts everything this node does
// differently from the default: no finding at all.
std::string write_quiet_profile(const test::TempTree& tree) {
    tree.write("quiet.yaml",
               "name: quiet\ndescription: accepts the kvm-guest-2n fixture\n"
               "rules:\n  power.governor: off\n  numa.balancing-on: off\n  virt.iommu-translating: off\n"
               "  virt.iommu-strict: off\n  hw.pcie-degraded: off\n");
    return tree.path("quiet.yaml");
}

struct NpdCase {
    const char* name;
    std::string command;
    int exit_code;
    std::string message_start;
};

TEST(NodeCheckCli, NpdContractOnEveryOutcome) {
    test::TempTree tree;
    const std::string quiet = write_quiet_profile(tree);
    const NpdCase cases[] = {
        {"healthy", node_check("kvm-guest-2n", "--npd --profile " + quote_arg(quiet)), 0,
         "launchguard: node healthy ("},
        {"warnings only", node_check("misconfigured-node", "--npd"), 0,
         "launchguard: healthy, warning power.governor +"},
        {"blocking finding", node_check("kvm-guest-2n", "--npd"), 1, "launchguard: hw.pcie-degraded: "},
        {"unknown: bad profile", node_check("kvm-guest-2n", "--npd --profile no-such-profile"), 2,
         "launchguard: unknown: profile: "},
        {"unknown: unreadable hwloc XML",
         cli() + " node-check --npd --no-topology-cache --hwloc-xml " + quote_arg(tree.path("missing.xml")), 2,
         "launchguard: unknown: cannot inspect the node: "},
    };
    for (const auto& c : cases) {
        auto result = run_command(c.command);
        EXPECT_EQ(result.exit_code, c.exit_code) << c.name << "\n" << result.out << result.err;
        // One line on stdout, within NPD's default max_output_length (80).
        ASSERT_FALSE(result.out.empty()) << c.name;
        EXPECT_EQ(result.out.find('\n'), result.out.size() - 1) << c.name << ": " << result.out;
        EXPECT_LE(result.out.size() - 1, 80U) << c.name << ": " << result.out;
        EXPECT_EQ(result.out.rfind(c.message_start, 0), 0U) << c.name << ": " << result.out;
    }
}

TEST(NodeCheckCli, PlainReportAndExitCodesAsCheck) {
    auto degraded = run_command(node_check("kvm-guest-2n"));
    EXPECT_EQ(degraded.exit_code, 1) << degraded.err;
    EXPECT_NE(degraded.out.find("hw.pcie-degraded"), std::string::npos) << degraded.out;

    auto warned = run_command(node_check("misconfigured-node", "--format json"));
    EXPECT_EQ(warned.exit_code, 0) << warned.err;
    auto report = boost::json::parse(warned.out).as_object();
    EXPECT_EQ(report.at("decision").as_string(), "allow");
    std::set<std::string> fired;
    for (const auto& f : report.at("findings").as_array()) fired.insert(std::string(f.at("rule").as_string()));
    // Node rules only: no task rule (conf.*, cpu.*, shm.*) is evaluated.
    EXPECT_EQ(fired,
              (std::set<std::string>{"power.governor", "power.cstates", "power.turbo-off", "numa.balancing-on"}));

    auto warn_mode = run_command(node_check("kvm-guest-2n", "--mode warn"));
    EXPECT_EQ(warn_mode.exit_code, 0) << "warn: nothing blocks";

    auto bad = run_command(node_check("kvm-guest-2n", "--profile no-such-profile"));
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("no-such-profile"), std::string::npos) << bad.err;

    EXPECT_EQ(run_command(node_check("kvm-guest-2n", "--slurm --npd")).exit_code, 2) << "one front end at a time";
    EXPECT_EQ(run_command(node_check("kvm-guest-2n", "--timeout 0")).exit_code, 2);
    EXPECT_EQ(run_command(node_check("kvm-guest-2n", "--config /x.conf")).exit_code, 2) << "--config needs --slurm";
}

TEST(NodeCheckCli, TransportRulesRunAndShowInTheJson) {
    test::TempTree tree;
    tree.write("gdr.yaml", "name: gdr\nnode: {gpudirect_rdma: true}\n");
    tree.mkdir("root/sys/module/mlx5_core");
    tree.mkdir("root/sys/bus/pci/devices");
    tree.write("root/proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01\n");
    auto result = run_command(cli() + " node-check --no-topology-cache --format json --hwloc-xml " +
                              quote_arg(fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml")) + " --sysfs-root " +
                              quote_arg(tree.path("root")) + " --profile " + quote_arg(tree.path("gdr.yaml")));
    EXPECT_EQ(result.exit_code, 1) << result.err;
    auto report = boost::json::parse(result.out).as_object();
    std::set<std::string> fired;
    for (const auto& f : report.at("findings").as_array()) fired.insert(std::string(f.at("rule").as_string()));
    EXPECT_EQ(fired.count("net.gdr-unavailable"), 1U) << result.out;
    // Task rules (net.verbs-missing, mem.nofile-low) are not node rules.
    EXPECT_EQ(fired.count("net.verbs-missing"), 0U);
    EXPECT_EQ(fired.count("mem.nofile-low"), 0U);
}

TEST(NodeCheckCli, AFifoInTheSysfsTreeDoesNotStallTheCheck) {
    // A FIFO where a sysfs attribute should be: launchguard's bounded reader
    // refuses it before opening (util/input_file.h), so the fact is unknown
    // and the check ends at once; the watchdog is for reads the kernel
    // itself never finishes.
    test::TempTree tree;
    std::filesystem::copy(fixture_path("sysfs/kvm-guest-2n"), tree.path("sysfs"),
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
    const std::string governor = tree.path("sysfs/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    std::filesystem::remove(governor);
    ASSERT_EQ(::mkfifo(governor.c_str(), 0600), 0);
    const auto start = std::chrono::steady_clock::now();
    auto result = run_command(cli() + " node-check --no-topology-cache --timeout 5 --format json --hwloc-xml " +
                              quote_arg(fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml")) + " --sysfs-root " +
                              quote_arg(tree.path("sysfs")));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
    EXPECT_EQ(result.exit_code, 1) << result.err;  // hw.pcie-degraded still decides
}

TEST(NodeCheckCli, MetricsFileForTheTextfileCollector) {
    test::TempTree tree;
    const std::string prom = tree.path("launchguard.prom");
    auto result = run_command(node_check("kvm-guest-2n", "--npd --metrics-file " + quote_arg(prom)));
    EXPECT_EQ(result.exit_code, 1) << result.err;
    const std::string text = read_all(prom);
    // One gauge per rule and outcome: exactly one outcome is 1 for each rule.
    EXPECT_NE(text.find("# TYPE launchguard_node_rule_outcome gauge\n"), std::string::npos) << text;
    EXPECT_NE(text.find("launchguard_node_rule_outcome{rule=\"hw.pcie-degraded\",outcome=\"block\"} 1\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("launchguard_node_rule_outcome{rule=\"hw.pcie-degraded\",outcome=\"pass\"} 0\n"),
              std::string::npos);
    EXPECT_NE(text.find("launchguard_node_rule_outcome{rule=\"power.governor\",outcome=\"warn\"} 1\n"),
              std::string::npos);
    EXPECT_NE(text.find("launchguard_node_rule_outcome{rule=\"hw.inventory\",outcome=\"pass\"} 1\n"),
              std::string::npos);
    EXPECT_NE(text.find("launchguard_node_health{health=\"degraded\"} 1\n"), std::string::npos);
    EXPECT_NE(text.find("launchguard_node_health{health=\"healthy\"} 0\n"), std::string::npos);
    std::smatch when;
    ASSERT_TRUE(std::regex_search(text, when, std::regex("\nlaunchguard_node_check_timestamp_seconds ([0-9.]+)\n")));
    const double age = static_cast<double>(std::time(nullptr)) - std::stod(when[1]);
    EXPECT_GE(age, -1.0);
    EXPECT_LT(age, 60.0);
    EXPECT_TRUE(std::regex_search(text, std::regex("\nlaunchguard_node_check_duration_seconds [0-9.]+\n")));
    std::map<std::string, int> ones;
    std::regex sample("launchguard_node_rule_outcome\\{rule=\"([^\"]+)\",outcome=\"[a-z]+\"\\} ([01])\n");
    for (std::sregex_iterator it(text.begin(), text.end(), sample), end; it != end; ++it) {
        ones[(*it)[1]] += std::stoi((*it)[2]);
    }
    EXPECT_GE(ones.size(), 10U);
    for (const auto& [rule, count] : ones) EXPECT_EQ(count, 1) << rule;
    struct stat st {};
    ASSERT_EQ(::stat(prom.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644U);

    // An unknown check still writes the file: alerting on it needs it.
    auto unknown = run_command(node_check("kvm-guest-2n", "--npd --profile nope --metrics-file " + quote_arg(prom)));
    EXPECT_EQ(unknown.exit_code, 2);
    EXPECT_NE(read_all(prom).find("launchguard_node_health{health=\"unknown\"} 1\n"), std::string::npos);

    // A directory that does not exist: said, and not a success.
    auto nowhere =
        run_command(node_check("misconfigured-node", "--metrics-file " + quote_arg(tree.path("no/dir/x.prom"))));
    EXPECT_EQ(nowhere.exit_code, 2);
    EXPECT_NE(nowhere.err.find("--metrics-file"), std::string::npos) << nowhere.err;
}

TEST(NodeCheckCli, SlurmConfigurationErrorsNameFileAndLine) {
    test::TempTree tree;
    tree.write("node-check.conf", "profile = default\nmode = enforce\ntimeout = 90\n");
    auto bad = run_command("LAUNCHGUARD_NODE_CHECK_CONF=" + quote_arg(tree.path("node-check.conf")) + " " + cli() +
                           " node-check --slurm");
    EXPECT_EQ(bad.exit_code, 2);
    const std::string where = tree.path("node-check.conf") + ":3: timeout: ";
    EXPECT_NE(bad.err.find(where), std::string::npos) << bad.err;
    // slurmd logs a failing health check's stdout: the reason is there too.
    EXPECT_NE(bad.out.find(where), std::string::npos) << bad.out;

    auto missing = run_command(cli() + " node-check --slurm --config " + quote_arg(tree.path("absent.conf")));
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.err.find(tree.path("absent.conf")), std::string::npos) << missing.err;
}

TEST(NodeCheckCli, ShippedNpdConfigNamesTheBinaryAndCondition) {
    const std::string path = std::string(LAUNCHGUARD_SOURCE_DIR) + "/deploy/npd/launchguard-node-check.json";
    boost::system::error_code ec;
    auto value = boost::json::parse(read_all(path), ec);
    ASSERT_FALSE(ec) << path << ": " << ec.message();
    const auto& config = value.as_object();
    EXPECT_EQ(config.at("plugin").as_string(), "custom");
    const auto& plugin_config = config.at("pluginConfig").as_object();
    EXPECT_EQ(plugin_config.at("max_output_length").as_int64(), 80) << "the message bound node-check keeps to";
    const auto& conditions = config.at("conditions").as_array();
    ASSERT_EQ(conditions.size(), 1U);
    EXPECT_EQ(conditions[0].at("type").as_string(), "LaunchguardNodeDegraded");
    const auto& rules = config.at("rules").as_array();
    ASSERT_EQ(rules.size(), 1U);
    const auto& rule = rules[0].as_object();
    EXPECT_EQ(rule.at("type").as_string(), "permanent");
    EXPECT_EQ(rule.at("condition").as_string(), "LaunchguardNodeDegraded");
    EXPECT_NE(rule.at("reason").as_string(), conditions[0].at("reason").as_string()) << "a reason per outcome";
    EXPECT_EQ(rule.at("path").as_string(), "/usr/local/bin/launchguard");
    const auto& args = rule.at("args").as_array();
    ASSERT_GE(args.size(), 2U);
    EXPECT_EQ(args[0].as_string(), "node-check");
    EXPECT_EQ(args[1].as_string(), "--npd");
    // node-check's own bound ends before NPD's, so NPD never kills it.
    int own_timeout = 10;
    for (std::size_t i = 0; i + 1 < args.size(); ++i) {
        if (args[i].as_string() == "--timeout") own_timeout = std::stoi(std::string(args[i + 1].as_string()));
    }
    const std::string npd_timeout(rule.at("timeout").as_string());
    ASSERT_TRUE(npd_timeout.ends_with("s")) << npd_timeout;
    EXPECT_LT(own_timeout, std::stoi(npd_timeout));
    // The arguments it ships are accepted by this launchguard.
    std::string command = cli();
    for (const auto& a : args) command += " " + quote_arg(std::string(a.as_string()));
    command += " --no-topology-cache --hwloc-xml " + quote_arg(fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml")) +
               " --sysfs-root " + quote_arg(fixture_path("sysfs/misconfigured-node"));
    auto run = run_command(command);
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
}

}  // namespace
}  // namespace launchguard
