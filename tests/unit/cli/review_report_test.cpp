// What `launchguard review` prints first: what the file was taken for, the
// findings to act on, and the unknowns only the node can settle in one line
// (all of them with --verbose, and always in JSON).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/launch_fixture.h"
#include "support/run_command.h"

namespace launchguard {
namespace {

using testing::cli;
using testing::quote_arg;
using testing::run_command;

std::string write_file(const std::string& name, const std::string& text) {
    auto dir = std::filesystem::temp_directory_path() / ("launchguard-review-report-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto path = dir / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
}

// A clean 4-node job: nothing to block, node facts no script shows.
const std::string kCleanJob =
    "#!/bin/bash\n"
    "#SBATCH --nodes=4\n"
    "#SBATCH --gpus-per-node=8\n"
    "export NCCL_NET=IB\n"
    "srun --container-image=nvcr.io/nvidia/pytorch:25.01-py3 --container-env=NCCL_NET python train.py\n";

TEST(ReviewReport, UnknownsAreOneLineUnlessAskedFor) {
    std::string path = write_file("clean.sbatch", kCleanJob);
    auto brief = run_command(cli() + " review " + quote_arg(path) + " --profile h100-cx7-ib");
    EXPECT_NE(brief.out.find(" unknown (judged when the job runs"), std::string::npos) << brief.out;
    EXPECT_NE(brief.out.find("(--unknown to list)"), std::string::npos) << brief.out;
    EXPECT_NE(brief.out.find("launchguard node-check"), std::string::npos) << brief.out;
    EXPECT_EQ(brief.out.find("unknown: cannot tell whether automatic NUMA balancing is on"), std::string::npos)
        << brief.out;

    auto verbose = run_command(cli() + " review -v " + quote_arg(path) + " --profile h100-cx7-ib");
    EXPECT_EQ(verbose.exit_code, brief.exit_code);
    EXPECT_NE(verbose.out.find("unknown: cannot tell whether automatic NUMA balancing is on"), std::string::npos)
        << verbose.out;
    EXPECT_EQ(verbose.out.find("(--unknown to list)"), std::string::npos) << verbose.out;
    auto listed = run_command(cli() + " review --unknown " + quote_arg(path) + " --profile h100-cx7-ib");
    EXPECT_EQ(listed.out, verbose.out);

    auto json = run_command(cli() + " review " + quote_arg(path) + " --profile h100-cx7-ib --format json");
    boost::system::error_code ec;
    auto value = boost::json::parse(json.out, ec);
    ASSERT_FALSE(ec) << json.out;
    bool numa = false;
    for (const auto& unknown : value.at("unknown").as_array()) {
        numa = numa || unknown.at("rule").as_string() == "numa.balancing-on";
    }
    EXPECT_TRUE(numa) << json.out;
}

// A Pod with one finding (NCCL_DEBUG=INFO) and six unknowns only the launch
// gate can settle: the finding leads, the unknowns are one line, and
// --unknown lists each of them.
TEST(ReviewReport, APodsUnknownsDoNotDrownItsFinding) {
    const std::string pod = quote_arg(testing::fixture_path("k8s/pod-one-finding-six-unknowns.yaml"));
    auto brief = run_command(cli() + " review " + pod);
    EXPECT_EQ(brief.exit_code, 0) << brief.out << brief.err;
    const auto lines = std::count(brief.out.begin(), brief.out.end(), '\n');
    EXPECT_LE(lines, 6) << brief.out;
    EXPECT_LT(brief.out.find("WARN"), brief.out.find("6 unknown (the launch gate judges them in the container): "))
        << brief.out;
    EXPECT_NE(brief.out.find("(--unknown to list)"), std::string::npos) << brief.out;

    auto json = run_command(cli() + " review --format json " + pod);
    boost::system::error_code ec;
    auto value = boost::json::parse(json.out, ec);
    ASSERT_FALSE(ec) << json.out;
    const auto& report = value.at("documents").at(0).at("report");
    const auto unknowns = report.at("unknown").as_array().size();
    EXPECT_EQ(report.at("findings").as_array().size(), 1U) << json.out;
    EXPECT_EQ(unknowns, 6U) << json.out;
    EXPECT_NE(brief.out.find(std::to_string(unknowns) + " unknown ("), std::string::npos) << brief.out;

    auto listed = run_command(cli() + " review --unknown " + pod);
    std::size_t count = 0;
    for (std::size_t at = listed.out.find("  unknown: "); at != std::string::npos;
         at = listed.out.find("  unknown: ", at + 1)) {
        ++count;
    }
    EXPECT_EQ(count, unknowns) << listed.out;
    EXPECT_LT(listed.out.find("WARN"), listed.out.find("  unknown: ")) << listed.out;
}

TEST(ReviewReport, AFileWithOnlyAShebangSaysWhatItWasTakenFor) {
    std::string path = write_file("tool.sh", "#!/bin/bash\necho hello\n");
    auto result = run_command(cli() + " review " + quote_arg(path));
    EXPECT_NE(result.out.find("taken for a Slurm batch script, but it has no #SBATCH line and runs no srun"),
              std::string::npos)
        << result.out;
    auto script = run_command(cli() + " review " + quote_arg(write_file("job.sbatch", kCleanJob)));
    EXPECT_NE(script.out.find("Slurm batch script, 2 #SBATCH option(s), 1 srun step(s); 1 launch(es) judged"),
              std::string::npos)
        << script.out;
}

TEST(ReviewReport, AGlooJobSaysTheNcclRulesDoNotApply) {
    std::string path =
        write_file("gloo.sbatch",
                   "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\n"
                   "srun --container-image=nvcr.io/nvidia/pytorch:25.01-py3 python train.py --backend gloo\n");
    auto result = run_command(cli() + " review " + quote_arg(path) + " --profile azure-ndv5");
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    EXPECT_NE(result.out.find("NCCL rule(s) not applicable: the launch uses gloo, not NCCL"), std::string::npos)
        << result.out;
}

}  // namespace
}  // namespace launchguard
