// `launchguard review` as users run it: kind detection, exit codes, the JSON
// shape, --patched output and errors that name the file.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/launch_fixture.h"
#include "support/run_command.h"

namespace launchguard {
namespace {

using testing::fixture_path;
using testing::quote_arg;
using testing::run_command;

std::string cli() { return quote_arg(LAUNCHGUARD_CLI); }

// Writes a script into a fresh temporary directory and returns its path.
std::string write_script(const std::string& name, const std::string& text) {
    auto dir = std::filesystem::temp_directory_path() / ("launchguard-review-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto path = dir / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
}

const std::string kNdv5Job = "#!/bin/bash\n"
                             "#SBATCH --nodes=2 --gpus-per-node=8\n"
                             "srun --container-image=nvcr.io/nvidia/pytorch:25.01-py3 python train.py\n";

TEST(ReviewBatchScript, BlocksAMissingTopologyMountAndSaysHowToMountIt) {
    auto result = run_command(cli() + " review " + quote_arg(write_script("ndv5.sbatch", kNdv5Job)) +
                              " --profile azure-ndv5");
    EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
    EXPECT_NE(result.out.find("srun on line 3: pyxis image nvcr.io/nvidia/pytorch:25.01-py3, nodes 2, GPUs 16"),
              std::string::npos)
        << result.out;
    EXPECT_NE(result.out.find("topo.not-propagated"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("--container-mounts=/opt/microsoft/ndv5-topo.xml:/opt/microsoft/ndv5-topo.xml:ro"),
              std::string::npos)
        << result.out;
}

TEST(ReviewBatchScript, JsonCarriesTheReportAndTheSteps) {
    auto result = run_command(cli() + " review " + quote_arg(write_script("ndv5.sbatch", kNdv5Job)) +
                              " --profile azure-ndv5 --format json");
    EXPECT_EQ(result.exit_code, 1);
    boost::system::error_code ec;
    auto value = boost::json::parse(result.out, ec);
    ASSERT_FALSE(ec) << result.out;
    const auto& report = value.as_object();
    EXPECT_EQ(report.at("decision").as_string(), "block");
    EXPECT_EQ(report.at("spec").at("kind").as_string(), "slurm");
    EXPECT_EQ(report.at("spec").at("steps").as_array().size(), 1U);
    EXPECT_EQ(report.at("spec").at("steps").at(0).at("line").as_int64(), 3);
}

TEST(ReviewBatchScript, PatchedPrintsTheScriptWithItsFixes) {
    auto result = run_command(cli() + " review " + quote_arg(write_script("ndv5.sbatch", kNdv5Job)) +
                              " --profile azure-ndv5 --patched");
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_EQ(result.out,
              "#!/bin/bash\n"
              "#SBATCH --nodes=2 --gpus-per-node=8\n"
              "export NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml\n"
              "srun --container-mounts=/opt/microsoft/ndv5-topo.xml:/opt/microsoft/ndv5-topo.xml:ro "
              "--container-env=NCCL_TOPO_FILE --container-image=nvcr.io/nvidia/pytorch:25.01-py3 python train.py\n");
    auto again = run_command(cli() + " review " + quote_arg(write_script("patched.sbatch", result.out)) +
                             " --profile azure-ndv5");
    EXPECT_EQ(again.exit_code, 0) << again.out;
}

TEST(ReviewBatchScript, ExitCodesFollowCheck) {
    std::string qps = "#!/bin/bash\n#SBATCH --nodes=64 --gpus-per-node=8\nsrun ./train\n";
    EXPECT_EQ(run_command(cli() + " review " + quote_arg(write_script("qps.sbatch", qps)) + " --profile b300-cx8")
                  .exit_code,
              3);
    std::string fine = "#!/bin/bash\n#SBATCH --nodes=1 --gpus-per-node=8\nsrun ./train\n";
    EXPECT_EQ(run_command(cli() + " review " + quote_arg(write_script("fine.sbatch", fine))).exit_code, 0);
}

TEST(ReviewBatchScript, KindsAndBadInput) {
    // A manifest goes to the Kubernetes reviewer, a script to this one.
    auto manifest = run_command(cli() + " review " + quote_arg(fixture_path("k8s/awsome-nccl-tests.yaml")));
    EXPECT_NE(manifest.exit_code, 2) << manifest.err;
    EXPECT_EQ(manifest.out.find("Slurm batch script"), std::string::npos) << manifest.out;
    auto forced = run_command(cli() + " review --kind kubernetes " +
                              quote_arg(write_script("x.sbatch", "#!/bin/bash\nsrun ./a\n")));
    EXPECT_EQ(forced.exit_code, 2);

    // Neither a script nor a manifest: the manifest reader names the file.
    auto neither = run_command(cli() + " review " + quote_arg(write_script("notes.txt", "hello\n")));
    EXPECT_EQ(neither.exit_code, 2);
    EXPECT_NE(neither.err.find("notes.txt"), std::string::npos) << neither.err;
    // --kind slurm reads a script without #!/#SBATCH.
    EXPECT_EQ(run_command(cli() + " review --kind slurm " + quote_arg(write_script("notes.txt", "hello\n"))).exit_code,
              0);

    EXPECT_EQ(run_command(cli() + " review /nonexistent.sbatch").exit_code, 2);
    auto binary = run_command(cli() + " review " +
                              quote_arg(write_script("bin.sbatch", std::string("#!/bin/sh\n\0\n", 12))));
    EXPECT_EQ(binary.exit_code, 2);
    EXPECT_NE(binary.err.find("bin.sbatch:2:"), std::string::npos) << binary.err;
    std::string huge = "#!/bin/bash\n" + std::string(2U << 20, '#');
    auto too_large = run_command(cli() + " review " + quote_arg(write_script("huge.sbatch", huge)));
    EXPECT_EQ(too_large.exit_code, 2);
}

TEST(ReviewBatchScript, RealFixtureReviewsWithoutError) {
    auto result = run_command(cli() + " review " + quote_arg(fixture_path("slurm/awsome-nccl-tests-container.sbatch")) +
                              " --profile h100-cx7-ib");
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    EXPECT_NE(result.out.find("srun on line 59: pyxis image /fsx/nccl-tests.sqsh, nodes 2, GPUs 16"),
              std::string::npos)
        << result.out;
}

}  // namespace
}  // namespace launchguard
