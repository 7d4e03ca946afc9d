// `launchguard check --sysfs-root` on the Grace trees with the shipped
// gb200-nvl72 profile, limited to the power, virtualization and NUMA rules:
// what a GB200 tray and a GB200 VM get from the command line.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <set>
#include <string>

#include "support/launch_fixture.h"
#include "support/run_command.h"

namespace launchguard {
namespace {

using testing::fixture_path;
using testing::quote_arg;
using testing::run_command;

constexpr const char* kRules[] = {"power.governor",         "power.cstates",     "power.turbo-off", "numa.balancing-on",
                                  "virt.iommu-translating", "virt.iommu-strict", "virt.page-size"};

testing::CommandResult check_grace(const std::string& tree, const std::string& hwloc) {
    std::string command = quote_arg(LAUNCHGUARD_CLI) + " check --env-file " + quote_arg(fixture_path("cli/job.env")) +
                          " --hwloc-xml " + quote_arg(fixture_path("hwloc/" + hwloc)) + " --sysfs-root " +
                          quote_arg(fixture_path("sysfs/" + tree)) +
                          " --runtime bare --profile gb200-nvl72 --format json";
    for (const char* rule : kRules) command += std::string(" --rule ") + rule;
    return run_command(command);
}

std::set<std::string> rules_in(const boost::json::object& report, const char* key) {
    std::set<std::string> ids;
    for (const auto& entry : report.at(key).as_array()) ids.insert(std::string(entry.at("rule").as_string()));
    return ids;
}

boost::json::object parse(const std::string& out) {
    boost::system::error_code ec;
    auto value = boost::json::parse(out, ec);
    EXPECT_FALSE(ec) << "not JSON: " << out;
    return ec || !value.is_object() ? boost::json::object{} : value.as_object();
}

TEST(GraceCheck, ATunedTrayGetsNoFindingAndNothingUndecided) {
    // None of these rules looks at the tray's topology; the VM's XML keeps the
    // run off live discovery of the machine the test runs on.
    auto result = check_grace("grace-gb200-node", "grace-gb200-vm.xml");
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    auto report = parse(result.out);
    ASSERT_FALSE(report.empty());
    EXPECT_EQ(report.at("decision").as_string(), "allow");
    EXPECT_TRUE(rules_in(report, "findings").empty()) << result.out;
    EXPECT_TRUE(rules_in(report, "unknown").empty()) << result.out;
}

TEST(GraceCheck, AVmWithATranslatingSmmuIsBlocked) {
    auto result = check_grace("grace-gb200-vm", "grace-gb200-vm.xml");
    EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
    auto report = parse(result.out);
    ASSERT_FALSE(report.empty());
    EXPECT_EQ(report.at("decision").as_string(), "block");
    EXPECT_EQ(rules_in(report, "findings"),
              (std::set<std::string>{"virt.iommu-translating", "virt.page-size", "numa.balancing-on"}))
        << result.out;
    // No cpufreq or cpuidle in the guest: the power rules cannot look.
    EXPECT_EQ(rules_in(report, "unknown"),
              (std::set<std::string>{"power.governor", "power.cstates", "power.turbo-off"}))
        << result.out;
    EXPECT_NE(result.out.find("4 GPUs and 4 NICs in this kvm guest"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("smmu3.0x0000000009050000 (arm-smmu-v3)"), std::string::npos) << result.out;
}

}  // namespace
}  // namespace launchguard
