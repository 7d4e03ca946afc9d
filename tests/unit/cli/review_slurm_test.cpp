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

using testing::cli;
using testing::fixture_path;
using testing::quote_arg;
using testing::run_command;

// Writes a script into a fresh temporary directory and returns its path.
std::string write_script(const std::string& name, const std::string& text) {
    auto dir = std::filesystem::temp_directory_path() / ("launchguard-review-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto path = dir / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
}

const std::string kNdv5Job =
    "#!/bin/bash\n"
    "#SBATCH --nodes=2 --gpus-per-node=8\n"
    "srun --container-image=nvcr.io/nvidia/pytorch:25.01-py3 python train.py\n";

TEST(ReviewBatchScript, BlocksAMissingTopologyMountAndSaysHowToMountIt) {
    auto result =
        run_command(cli() + " review " + quote_arg(write_script("ndv5.sbatch", kNdv5Job)) + " --profile azure-ndv5");
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
    EXPECT_EQ(
        run_command(cli() + " review " + quote_arg(write_script("qps.sbatch", qps)) + " --profile b300-cx8").exit_code,
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
    auto binary =
        run_command(cli() + " review " + quote_arg(write_script("bin.sbatch", std::string("#!/bin/sh\n\0\n", 12))));
    EXPECT_EQ(binary.exit_code, 2);
    EXPECT_NE(binary.err.find("bin.sbatch:2:"), std::string::npos) << binary.err;
    std::string huge = "#!/bin/bash\n" + std::string(2U << 20, '#');
    auto too_large = run_command(cli() + " review " + quote_arg(write_script("huge.sbatch", huge)));
    EXPECT_EQ(too_large.exit_code, 2);
}

const std::string kIbJob = "#!/bin/bash\n#SBATCH --nodes=2 --gpus-per-node=8\n";

TEST(ReviewBatchScript, EveryStepIsJudgedAndTooManyAreRefused) {
    // The 65th step blocks: it is judged like the first.
    std::string text = kIbJob;
    for (int i = 0; i < 64; ++i) text += "srun ./a\n";
    auto late = run_command(cli() + " review " +
                            quote_arg(write_script("late.sbatch", text + "env NCCL_IB_DISABLE=1 srun ./a\n")) +
                            " --profile h100-cx7-ib");
    EXPECT_EQ(late.exit_code, 1) << late.out << late.err;
    EXPECT_NE(late.out.find("srun on line 67"), std::string::npos) << late.out;

    // Past the bound nothing is allowed: the script is refused, naming the line.
    for (int i = 64; i < 4096; ++i) text += "srun ./a\n";
    auto refused = run_command(cli() + " review " + quote_arg(write_script("many.sbatch", text + "srun ./b\n")) +
                               " --profile h100-cx7-ib");
    EXPECT_EQ(refused.exit_code, 2) << refused.out;
    EXPECT_NE(refused.err.find("many.sbatch:4099: the script runs more than 4096 srun steps"), std::string::npos)
        << refused.err;
    EXPECT_EQ(refused.out, "");
}

TEST(ReviewBatchScript, WrappedStepsAreJudged) {
    for (const std::string step : {"env NCCL_IB_DISABLE=1 srun ./a", "export NCCL_IB_DISABLE=1\nnohup srun ./a",
                                   "export NCCL_IB_DISABLE=1\ntimeout --kill-after=5 -s INT 1h /usr/bin/srun ./a"}) {
        auto result = run_command(cli() + " review " + quote_arg(write_script("wrapped.sbatch", kIbJob + step + "\n")) +
                                  " --profile h100-cx7-ib");
        EXPECT_EQ(result.exit_code, 1) << step << result.out << result.err;
        EXPECT_NE(result.out.find("net.ib-disabled"), std::string::npos) << result.out;
    }
    auto subshell =
        run_command(cli() + " review " +
                    quote_arg(write_script("subshell.sbatch", kIbJob + "( export NCCL_IB_DISABLE=1 )\nsrun ./a\n")) +
                    " --profile h100-cx7-ib");
    EXPECT_EQ(subshell.exit_code, 0) << subshell.out << subshell.err;
}

// A profile file like azure-ndv5 whose topology file lives at `host_path` (a YAML scalar as written).
std::string profile_with_topology(const std::string& host_path) {
    std::ifstream in(std::string(LAUNCHGUARD_SOURCE_DIR) + "/profiles/azure-ndv5.yaml");
    std::string yaml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string line = "host_path: /opt/microsoft/ndv5-topo.xml";
    yaml.replace(yaml.find(line), line.size(), "host_path: " + host_path);
    return write_script("hostile-profile.yaml", yaml);
}

TEST(ReviewBatchScript, PatchedScriptRunsNoCommandFromTheProfile) {
    auto dir = std::filesystem::path(write_script("ndv5.sbatch", kNdv5Job)).parent_path() / "patched-run";
    std::filesystem::create_directories(dir);
    std::filesystem::remove(dir / "pwned");
    std::string host_path = "/opt/$(touch " + (dir / "pwned").string() + ")/topo.xml";
    auto result = run_command(cli() + " review " + quote_arg(write_script("ndv5.sbatch", kNdv5Job)) + " --profile " +
                              quote_arg(profile_with_topology("'" + host_path + "'")) + " --patched");
    ASSERT_EQ(result.exit_code, 1) << result.out << result.err;
    // Run the patched script with an srun that prints its arguments: the path arrives as written.
    std::ofstream(dir / "patched.sbatch") << result.out;
    std::ofstream(dir / "srun") << "#!/bin/sh\nprintf '%s\\n' \"$@\"\n";
    std::filesystem::permissions(dir / "srun", std::filesystem::perms::owner_all);
    auto ran = run_command("cd " + quote_arg(dir.string()) + " && PATH=" + quote_arg(dir.string()) +
                           ":/usr/bin:/bin bash patched.sbatch");
    EXPECT_EQ(ran.exit_code, 0) << ran.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "pwned")) << result.out;
    EXPECT_NE(ran.out.find("--container-mounts=" + host_path + ":/opt/microsoft/ndv5-topo.xml:ro\n"), std::string::npos)
        << ran.out;

    // A line break in the path cannot be written safely: refused, nothing printed.
    auto newline = run_command(cli() + " review " + quote_arg(write_script("ndv5.sbatch", kNdv5Job)) + " --profile " +
                               quote_arg(profile_with_topology("\"/opt/x\\n/topo.xml\"")) + " --patched");
    EXPECT_EQ(newline.exit_code, 2) << newline.out;
    EXPECT_EQ(newline.out, "");
    EXPECT_NE(newline.err.find("ndv5.sbatch:3: --patched cannot write the fix for the mount /opt/x\\n/topo.xml"),
              std::string::npos)
        << newline.err;
}

TEST(ReviewBatchScript, PatchedKeepsCrLfAndSaysSbatchRefusesIt) {
    std::string crlf =
        "#!/bin/bash\r\n#SBATCH --nodes=2 --gpus-per-node=8\r\n"
        "srun --container-image=nvcr.io/nvidia/pytorch:25.01-py3 python train.py\r\n";
    auto result = run_command(cli() + " review " + quote_arg(write_script("dos.sbatch", crlf)) +
                              " --profile azure-ndv5 --patched");
    EXPECT_EQ(result.exit_code, 1) << result.err;
    EXPECT_EQ(result.out.find("\r\r"), std::string::npos);
    EXPECT_EQ(result.out,
              "#!/bin/bash\r\n#SBATCH --nodes=2 --gpus-per-node=8\r\n"
              "export NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml\r\n"
              "srun --container-mounts=/opt/microsoft/ndv5-topo.xml:/opt/microsoft/ndv5-topo.xml:ro "
              "--container-env=NCCL_TOPO_FILE --container-image=nvcr.io/nvidia/pytorch:25.01-py3 python train.py\r\n");
    EXPECT_NE(result.err.find("sbatch refuses"), std::string::npos) << result.err;
    auto report =
        run_command(cli() + " review " + quote_arg(write_script("dos.sbatch", crlf)) + " --profile azure-ndv5");
    EXPECT_NE(report.out.find("DOS line breaks"), std::string::npos) << report.out;
}

TEST(ReviewBatchScript, PatchedFixesEveryStepOfACompoundLine) {
    std::string job =
        "#!/bin/bash\n#SBATCH --nodes=2 --gpus-per-node=8\n"
        "srun --container-image=img ./a && srun --container-image=img ./b | srun --container-image=img ./c\n";
    auto result = run_command(cli() + " review " + quote_arg(write_script("compound.sbatch", job)) +
                              " --profile azure-ndv5 --patched");
    EXPECT_EQ(result.exit_code, 1) << result.err;
    std::size_t fixed = 0;
    for (std::size_t pos = result.out.find("srun --container-mounts="); pos != std::string::npos;
         pos = result.out.find("srun --container-mounts=", pos + 1)) {
        ++fixed;
    }
    EXPECT_EQ(fixed, 3U) << result.out;
    auto again = run_command(cli() + " review " + quote_arg(write_script("compound-patched.sbatch", result.out)) +
                             " --profile azure-ndv5");
    EXPECT_EQ(again.exit_code, 0) << again.out;
}

TEST(ReviewBatchScript, RealFixtureReviewsWithoutError) {
    auto result = run_command(cli() + " review " + quote_arg(fixture_path("slurm/awsome-nccl-tests-container.sbatch")) +
                              " --profile h100-cx7-ib");
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    EXPECT_NE(result.out.find("srun on line 59: pyxis image /fsx/nccl-tests.sqsh, nodes 2, GPUs 16"), std::string::npos)
        << result.out;
}

}  // namespace
}  // namespace launchguard
