// `launchguard topo FILE --paths --nccl-version V` and the JSON shape of
// `topo --paths --format json`, run as a user runs them.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <regex>
#include <string>

#include "support/launch_fixture.h"
#include "support/run_command.h"

namespace launchguard {
namespace {

using testing::fixture_path;
using testing::quote_arg;
using testing::run_command;

std::string topo_paths(const std::string& fixture, const std::string& extra) {
    return quote_arg(LAUNCHGUARD_CLI) + " topo " + quote_arg(fixture_path("nccl-paths/" + fixture)) + " --paths" +
           extra;
}

boost::json::object json_of(const std::string& fixture, const std::string& extra) {
    auto r = run_command(topo_paths(fixture, " --format json" + extra));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return boost::json::parse(r.out).as_object();
}

const boost::json::object& gpu_of(const boost::json::object& o, const std::string& busid) {
    for (const auto& g : o.at("gpus").as_array()) {
        if (g.as_object().at("busid").as_string() == busid) return g.as_object();
    }
    throw std::runtime_error("no GPU " + busid);
}

// The keys of the documented shape: {"gpus":[{"busid","nics","path","gdr"}],
// "gpu_pairs":[{"a","b","path","p2p"}]}, every bus id as lower-case dddd:bb:dd.f.
TEST(PathsVersionCli, JsonHasTheDocumentedKeysAndLowerCaseBusIds) {
    auto o = json_of("verdict-shared-nics.xml", "");
    const std::regex busid("[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-9a-f]");
    const auto& gpus = o.at("gpus").as_array();
    ASSERT_EQ(gpus.size(), 4U);
    for (const auto& value : gpus) {
        const auto& g = value.as_object();
        for (const char* key : {"busid", "nics", "path", "gdr", "nic", "gdr_read", "nccl_path"})
            EXPECT_TRUE(g.contains(key)) << key;
        EXPECT_TRUE(std::regex_match(std::string(g.at("busid").as_string()), busid)) << g.at("busid");
        for (const auto& nic : g.at("nics").as_array())
            EXPECT_TRUE(std::regex_match(std::string(nic.as_string()), busid)) << nic;
        EXPECT_TRUE(g.at("gdr").is_bool());
        EXPECT_TRUE(g.at("path").is_string());
    }
    const auto& pairs = o.at("gpu_pairs").as_array();
    ASSERT_EQ(pairs.size(), 6U);
    for (const auto& value : pairs) {
        const auto& p = value.as_object();
        for (const char* key : {"a", "b", "path", "p2p", "nccl_path"}) EXPECT_TRUE(p.contains(key)) << key;
        EXPECT_TRUE(std::regex_match(std::string(p.at("a").as_string()), busid));
        EXPECT_TRUE(std::regex_match(std::string(p.at("b").as_string()), busid));
        EXPECT_TRUE(p.at("p2p").is_bool());
    }
    EXPECT_EQ(o.at("nccl_version").as_string(), "2.30.7 (assumed)");
}

// --nccl-version picks the release's logic: GPU dev 2 of verdict-shared-nics
// uses NIC 42 under 2.30.7 and NIC 43 under 2.30.4 (ncclTopoGetLocalNetType).
TEST(PathsVersionCli, NcclVersionPicksTheReleaseLogic) {
    auto now = json_of("verdict-shared-nics.xml", "");
    EXPECT_EQ(gpu_of(now, "0000:41:00.0").at("nic").as_string(), "0000:42:00.0");
    auto before = json_of("verdict-shared-nics.xml", " --nccl-version 2.30.4");
    EXPECT_EQ(gpu_of(before, "0000:41:00.0").at("nic").as_string(), "0000:43:00.0");
    EXPECT_EQ(before.at("nccl_version").as_string(), "2.30.4 (--nccl-version)");
    auto grace = json_of("grace-c2c.xml", " --nccl-version 2.26.6");
    EXPECT_EQ(grace.at("gdr_level").as_string(), "PXB");
    EXPECT_EQ(gpu_of(grace, "0000:01:00.0").at("gdr").as_bool(), false);
}

// ncclTopoCheckNet: the cross-socket pair goes through the network, in JSON and text.
TEST(PathsVersionCli, PairThroughTheNetworkIsShown) {
    auto o = json_of("verdict-cross-socket-nics.xml", "");
    const auto& p = o.at("gpu_pairs").as_array().at(0).as_object();
    EXPECT_EQ(p.at("transport").as_string(), "NET");
    EXPECT_EQ(p.at("nccl_path").as_string(), "NET");
    auto text = run_command(topo_paths("verdict-cross-socket-nics.xml", ""));
    EXPECT_NE(text.out.find("NCCL sends it through the network"), std::string::npos) << text.out;
}

TEST(PathsVersionCli, BadNcclVersionIsAClearError) {
    auto junk = run_command(topo_paths("grace-c2c.xml", " --nccl-version 2.x"));
    EXPECT_EQ(junk.exit_code, 2);
    EXPECT_NE(junk.err.find("--nccl-version 2.x: not an NCCL release number"), std::string::npos) << junk.err;
    auto old = run_command(topo_paths("grace-c2c.xml", " --nccl-version 2.18.3"));
    EXPECT_EQ(old.exit_code, 2);
    EXPECT_NE(old.err.find("outside the releases this model follows (2.23.0 to 2.x)"), std::string::npos) << old.err;
    auto major = run_command(topo_paths("grace-c2c.xml", " --nccl-version 3.0"));
    EXPECT_EQ(major.exit_code, 2);
    EXPECT_TRUE(major.out.empty()) << major.out;
}

}  // namespace
}  // namespace launchguard
