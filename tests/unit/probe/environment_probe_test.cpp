#include "probe/environment_probe.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "unit/probe/temp_tree.h"

namespace launchguard {
namespace {

TEST(EnvProbeTest, ParsesKeyValueLinesLiterally) {
    auto env =
        parse_env_text("# comment\n\nNCCL_IB_HCA=mlx5_0:1\nNCCL_SOCKET_IFNAME=\"eth0\"\nEMPTY=\nA=b=c\n", "job.env");
    ASSERT_TRUE(env.ok()) << env.error().to_string();
    EXPECT_EQ(env->at("NCCL_IB_HCA"), "mlx5_0:1");
    EXPECT_EQ(env->at("NCCL_SOCKET_IFNAME"), "\"eth0\"");  // NCCL keeps the quotes
    EXPECT_EQ(env->at("EMPTY"), "");
    EXPECT_EQ(env->at("A"), "b=c");
    EXPECT_EQ(env->size(), 4U);
}

TEST(EnvProbeTest, ErrorsCarryOriginAndLine) {
    auto missing_eq = parse_env_text("A=1\n\nNCCL_DEBUG\n", "job.env");
    ASSERT_FALSE(missing_eq.ok());
    EXPECT_EQ(missing_eq.error().file, "job.env");
    EXPECT_EQ(missing_eq.error().line, 3);
    EXPECT_EQ(missing_eq.error().to_string().substr(0, 10), "job.env:3:");

    auto exported = parse_env_text("export NCCL_DEBUG=INFO\n", "job.env");
    ASSERT_FALSE(exported.ok());
    EXPECT_EQ(exported.error().line, 1);
    EXPECT_NE(exported.error().message.find("export"), std::string::npos);

    EXPECT_FALSE(parse_env_text("1BAD=x\n", "e").ok());
    EXPECT_FALSE(parse_env_text("NCCL_DEBUG =INFO\n", "e").ok());
}

TEST(EnvProbeTest, DetectsProcEnvironFormat) {
    using namespace std::string_literals;
    std::string block = "NCCL_DEBUG=INFO\0PATH=/usr/bin\0WEIRD NAME=1\0NOEQUALS\0"s;
    auto env = parse_env_text(block, "/proc/1/environ");
    ASSERT_TRUE(env.ok());
    EXPECT_EQ(env->at("NCCL_DEBUG"), "INFO");
    EXPECT_EQ(env->at("PATH"), "/usr/bin");
    EXPECT_EQ(env->at("WEIRD NAME"), "1");  // the kernel allows it; so does getenv
    EXPECT_EQ(env->count("NOEQUALS"), 0U);
}

TEST(EnvProbeTest, AnEntryWithoutANameIsNoReasonToSkipTheRest) {
    using namespace std::string_literals;
    // A task can exec with "=x" in its environment (execve takes any string);
    // getenv never finds it, and the entries around it are the task's.
    auto env = parse_env_text("=x\0NCCL_IB_HCA=mlx5_0\0=\0LD_LIBRARY_PATH=/opt/lib\0"s, "/proc/1/environ");
    ASSERT_TRUE(env.ok());
    EXPECT_EQ(env->size(), 2U);
    EXPECT_EQ(env->at("NCCL_IB_HCA"), "mlx5_0");
    EXPECT_EQ(env->at("LD_LIBRARY_PATH"), "/opt/lib");
}

TEST(EnvProbeTest, AnEntriesArrayIsReadAsGetenvReadsIt) {
    // environ as execve passed it, or Slurm's job environment: "=x", "=" and
    // an entry without '=' are none getenv() can return; the second of a
    // name is not the one it returns.
    const char* entries[] = {
        "=x", "NCCL_IB_HCA=mlx5_0", "=", "NOEQUALS", "LD_LIBRARY_PATH=/opt/lib", "NCCL_IB_HCA=mlx5_9", nullptr};
    const Environment env = environment_from_entries(entries);
    EXPECT_EQ(env, (Environment{{"NCCL_IB_HCA", "mlx5_0"}, {"LD_LIBRARY_PATH", "/opt/lib"}}));
    EXPECT_TRUE(environment_from_entries(nullptr).empty());
}

TEST(EnvProbeTest, AProcEnvironBlockKeepsTheFirstOfANameAsGetenvDoes) {
    using namespace std::string_literals;
    auto env = parse_env_text("NCCL_NET=IB\0NCCL_NET=Socket\0"s, "/proc/1/environ");
    ASSERT_TRUE(env.ok());
    EXPECT_EQ(env->at("NCCL_NET"), "IB");
}

TEST(EnvProbeTest, AnEnvFileLineWithoutANameIsAnErrorNamingTheLine) {
    // An env file is the user's own input to `check`: refused, never skipped.
    auto env = parse_env_text("NCCL_DEBUG=WARN\n=x\n", "job.env");
    ASSERT_FALSE(env.ok());
    EXPECT_EQ(env.error().to_string().substr(0, 10), "job.env:2:") << env.error().to_string();
}

TEST(EnvProbeTest, ReadsFilesAndNamesMissingOnes) {
    test::TempTree tree;
    tree.write("job.env", "CUDA_VISIBLE_DEVICES=0,1\n");
    auto env = read_env_file(tree.path("job.env"));
    ASSERT_TRUE(env.ok());
    EXPECT_EQ(env->at("CUDA_VISIBLE_DEVICES"), "0,1");
    auto missing = read_env_file(tree.path("nope.env"));
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().file, tree.path("nope.env"));
}

TEST(EnvProbeTest, ReadsRecordedProcessEnviron) {
    auto env = read_process_environ(4242, LAUNCHGUARD_FIXTURES "/sysfs/h100-baremetal/proc");
    ASSERT_TRUE(env.ok()) << env.error().to_string();
    EXPECT_EQ(env->at("NCCL_TOPO_FILE"), "/opt/topo.xml");
    EXPECT_EQ(env->at("SLURM_NTASKS"), "512");
}

TEST(EnvProbeTest, CurrentProcessEnvironment) {
    ::setenv("LAUNCHGUARD_ENV_PROBE_TEST", "a=b", 1);
    EXPECT_EQ(current_process_environment().at("LAUNCHGUARD_ENV_PROBE_TEST"), "a=b");
    ::unsetenv("LAUNCHGUARD_ENV_PROBE_TEST");
}

TEST(EnvFile, AStrayNulIsAnErrorOnItsLineNotASwitchToEnvironFormat) {
    auto env = parse_env_text(std::string("NCCL_DEBUG=INFO\nNCCL_IB_HCA=mlx5\0_0\nNCCL_NET=IB\n", 48), "job.env");
    ASSERT_FALSE(env.ok());
    EXPECT_EQ(env.error().line, 2);
    EXPECT_NE(env.error().message.find("NUL"), std::string::npos) << env.error().message;
}

TEST(EnvFile, AnEnvironDumpEndsWithANul) {
    auto env = parse_env_text(std::string("A=1\0B=2\0", 8), "/proc/1/environ");
    ASSERT_TRUE(env.ok()) << env.error().to_string();
    EXPECT_EQ(env->size(), 2U);
}

}  // namespace
}  // namespace launchguard
