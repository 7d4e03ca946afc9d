#include "util/yaml_guard.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "support/fork_count.h"
#include "util/child_process.h"

namespace launchguard {
namespace {

// yaml-cpp 0.7 loops, allocating, on each of these (found by the manifest
// fuzzer); the check refuses them within its time bound instead.
TEST(YamlGuard, RefusesYamlThatYamlCppNeverFinishes) {
    // In a multi-threaded process the text would go to yaml-cpp unchecked.
    if (!forked_child_may_run_library_code()) GTEST_SKIP() << "an earlier test in this process started a thread";
    std::ifstream seed(LAUNCHGUARD_SOURCE_DIR "/tests/fuzz/seeds/manifest/yaml-cpp-c2913239.yaml");
    std::stringstream fuzzed;
    fuzzed << seed.rdbuf();
    ASSERT_FALSE(fuzzed.str().empty());
    for (const std::string& text : {std::string("{a: b},\n"), fuzzed.str()}) {
        const auto start = std::chrono::steady_clock::now();
        auto status = check_yaml_terminates(text, "m.yaml");
        const auto took = std::chrono::steady_clock::now() - start;
        ASSERT_FALSE(status.ok()) << text;
        EXPECT_EQ(status.error().file, "m.yaml");
        EXPECT_NE(status.error().message.find("yaml-cpp 0.7 loops on some invalid YAML"), std::string::npos)
            << status.error().message;
        EXPECT_LT(took, std::chrono::seconds(kYamlParseSeconds + 5));
    }
}

TEST(YamlGuard, PassesValidAndOrdinaryInvalidYaml) {
    for (const std::string text : {"kind: Pod\nspec: {containers: [{name: a}]}\n", "{a: b}\n", "[1, 2]\n---\nx: 1\n",
                                   "x: [1,\n", "a: b: c\n", ""}) {
        EXPECT_TRUE(check_yaml_terminates(text, "m.yaml").ok()) << text;
    }
}

// A YAML profile in slurmstepd: a child there could deadlock on a lock
// another thread held at the fork.
TEST(YamlGuard, AMultiThreadedProcessForksNoChild) {
    test::start_and_join_a_thread();
    const int before = test::forks_so_far();
    ASSERT_GE(before, 0);
    EXPECT_TRUE(check_yaml_terminates("name: site\nrules: {net.qps-low: off}\n", "site.yaml").ok());
    EXPECT_EQ(test::forks_so_far(), before);
}

TEST(YamlGuard, ASingleThreadedProcessChecksInAChild) {
    if (!forked_child_may_run_library_code()) GTEST_SKIP() << "an earlier test in this process started a thread";
    const int before = test::forks_so_far();
    ASSERT_GE(before, 0);
    EXPECT_TRUE(check_yaml_terminates("name: another-site\n", "site.yaml").ok());
    EXPECT_EQ(test::forks_so_far(), before + 1);
}

}  // namespace
}  // namespace launchguard
