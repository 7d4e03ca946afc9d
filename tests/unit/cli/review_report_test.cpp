// What `launchguard review` prints first: what the file was taken for, the
// findings to act on, and the unknowns only the node can settle in one line
// (all of them with --verbose, and always in JSON).
#include <gtest/gtest.h>

#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/run_command.h"

namespace launchguard {
namespace {

using testing::quote_arg;
using testing::run_command;

std::string cli() { return quote_arg(LAUNCHGUARD_CLI); }

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

TEST(ReviewReport, NodeOnlyUnknownsAreOneLineUnlessVerbose) {
    std::string path = write_file("clean.sbatch", kCleanJob);
    auto brief = run_command(cli() + " review " + quote_arg(path) + " --profile h100-cx7-ib");
    EXPECT_NE(brief.out.find("need the node or the running task"), std::string::npos) << brief.out;
    EXPECT_NE(brief.out.find("launchguard node-check"), std::string::npos) << brief.out;
    EXPECT_EQ(brief.out.find("unknown: cannot tell whether automatic NUMA balancing is on"), std::string::npos)
        << brief.out;

    auto verbose = run_command(cli() + " review -v " + quote_arg(path) + " --profile h100-cx7-ib");
    EXPECT_EQ(verbose.exit_code, brief.exit_code);
    EXPECT_NE(verbose.out.find("unknown: cannot tell whether automatic NUMA balancing is on"), std::string::npos)
        << verbose.out;
    EXPECT_EQ(verbose.out.find("need the node or the running task"), std::string::npos) << verbose.out;

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
