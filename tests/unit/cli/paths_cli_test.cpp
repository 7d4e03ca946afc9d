// `launchguard topo FILE --paths` and `launchguard check --paths`, run as a
// user runs them.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdio>
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

std::string topo_paths(const std::string& extra = "") {
    return cli() + " topo " + quote_arg(fixture_path("nccl-paths/two-socket-nvswitch.xml")) + " --paths" + extra;
}

TEST(PathsCli, TopoPathsJsonNamesEachGpusNicPathAndGdr) {
    auto r = run_command(topo_paths(" --format json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto v = boost::json::parse(r.out).as_object();
    const auto& gpus = v.at("gpus").as_array();
    ASSERT_EQ(gpus.size(), 4U);
    const auto& first = gpus[0].as_object();
    EXPECT_EQ(first.at("busid").as_string(), "0000:1b:00.0");
    EXPECT_EQ(first.at("nics").as_array().at(0).as_string(), "0000:1c:00.0");
    EXPECT_EQ(first.at("path").as_string(), "PIX");
    EXPECT_EQ(first.at("gdr").as_bool(), true);
    const auto& pairs = v.at("gpu_pairs").as_array();
    ASSERT_EQ(pairs.size(), 6U);
    EXPECT_EQ(pairs[0].as_object().at("path").as_string(), "NVL");
    EXPECT_EQ(pairs[0].as_object().at("p2p").as_bool(), true);
}

TEST(PathsCli, EnvFileSettingsChangeTheVerdict) {
    const std::string env = ::testing::TempDir() + "/paths-env";
    std::ofstream(env) << "NCCL_P2P_DISABLE=1\nexport NCCL_NET_GDR_LEVEL=\"LOC\"\n";
    auto r = run_command(topo_paths(" --format json --env-file " + quote_arg(env)));
    std::remove(env.c_str());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto v = boost::json::parse(r.out).as_object();
    EXPECT_EQ(v.at("gpus").as_array()[0].as_object().at("gdr").as_bool(), false);
    EXPECT_EQ(v.at("gpu_pairs").as_array()[0].as_object().at("p2p").as_bool(), false);
    EXPECT_EQ(v.at("p2p_level_source").as_string(), "NCCL_P2P_DISABLE=1");
}

TEST(PathsCli, TopoPathsTextHasTablesAndMatrix) {
    auto r = run_command(topo_paths());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("0000:9b:00.0   0000:1c:00.0   PXN   yes"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("GPU0  X     NVL"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("NIC1: 0000:a0:00.0"), std::string::npos) << r.out;
}

TEST(PathsCli, RejectedFileExitsOne) {
    const std::string file = ::testing::TempDir() + "/paths-bad.xml";
    std::ofstream(file) << "<system version=\"2\"><cpu numaid=\"0\"/></system>\n";
    auto r = run_command(cli() + " topo " + quote_arg(file) + " --paths");
    std::remove(file.c_str());
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.out.find("no path model"), std::string::npos) << r.out;
}

// This machine's hwloc topology (the hwloc fixture without GPUs stands in for
// a build host): a clear answer, exit 0.
TEST(PathsCli, CheckPathsWithoutGpusSaysSo) {
    const std::string env = ::testing::TempDir() + "/paths-empty-env";
    std::ofstream(env) << "PATH=/usr/bin\n";
    auto r = run_command(cli() + " check --paths --env-file " + quote_arg(env) + " --format json");
    std::remove(env.c_str());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto v = boost::json::parse(r.out).as_object();
    if (!v.at("no_gpu").as_bool()) GTEST_SKIP() << "this machine has GPUs";
    EXPECT_EQ(v.at("message").as_string(), "no GPU on this node: NCCL has no GPU paths to decide");
    EXPECT_TRUE(v.at("gpus").as_array().empty());
}

TEST(PathsCli, CheckPathsOnARecordedNodeWithGpus) {
    const std::string env = ::testing::TempDir() + "/paths-env2";
    std::ofstream(env) << "PATH=/usr/bin\n";
    auto r = run_command(cli() + " check --paths --env-file " + quote_arg(env) + " --hwloc-xml " +
                         quote_arg(fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml")) + " --format json");
    std::remove(env.c_str());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto v = boost::json::parse(r.out).as_object();
    EXPECT_FALSE(v.at("gpus").as_array().empty()) << r.out;
}

}  // namespace
}  // namespace launchguard
