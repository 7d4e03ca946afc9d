// NCCL configuration semantics: setEnvFile() parsing quirks (src/misc/param.cc),
// the env > NCCL_CONF_FILE/~/.nccl.conf > /etc/nccl.conf precedence, lint and
// strtoll integer parsing.
#include "nccl/nccl_config.h"

#include <gtest/gtest.h>

#include <climits>
#include <memory>
#include <string>

#include "support/memory_file_view.h"

namespace launchguard::nccl {
namespace {

using launchguard::testing::MemoryFileView;

// ---- parse_conf -------------------------------------------------------------

TEST(NcclConfParse, SplitsAtFirstEqualsAndKeepsEverythingLiterally) {
    ConfFile file = parse_conf("/etc/nccl.conf",
                               "# comment=ignored\n"
                               "NCCL_IB_HCA = mlx5\n"
                               "NCCL_SOCKET_IFNAME=\"eth0\"\n"
                               "export NCCL_DEBUG=INFO\n"
                               "  NCCL_NET=IB\n"
                               "NCCL_IB_QPS_PER_CONNECTION=4 # comment\n"
                               "no equals sign here\n"
                               "NCCL_ALGO=Ring=Tree\n"
                               "NCCL_EMPTY=\n");
    ASSERT_EQ(file.entries.size(), 7U);
    EXPECT_EQ(file.entries[0].name, "NCCL_IB_HCA ");
    EXPECT_EQ(file.entries[0].value, " mlx5");
    EXPECT_EQ(file.entries[0].line, 2);
    EXPECT_EQ(file.entries[1].value, "\"eth0\"");
    EXPECT_EQ(file.entries[2].name, "export NCCL_DEBUG");
    EXPECT_EQ(file.entries[3].name, "  NCCL_NET");
    EXPECT_EQ(file.entries[4].value, "4 # comment");
    EXPECT_EQ(file.entries[5].name, "NCCL_ALGO");
    EXPECT_EQ(file.entries[5].value, "Ring=Tree");
    EXPECT_EQ(file.entries[5].line, 8);
    EXPECT_EQ(file.entries[6].value, "");
}

TEST(NcclConfParse, OnlyAHashInColumnOneIsAComment) {
    ConfFile file = parse_conf("c", " # NCCL_DEBUG=INFO\n#NCCL_DEBUG=WARN\n");
    ASSERT_EQ(file.entries.size(), 1U);
    EXPECT_EQ(file.entries[0].name, " # NCCL_DEBUG");
}

TEST(NcclConfParse, CrlfLosesExactlyOneCarriageReturn) {
    // setEnvFile() strips '\n' then one '\r' (NCCL 2.30).
    ConfFile file = parse_conf("c", "NCCL_DEBUG=INFO\r\nNCCL_NET=IB\r\r\nNCCL_LAST=1");
    ASSERT_EQ(file.entries.size(), 3U);
    EXPECT_EQ(file.entries[0].value, "INFO");
    EXPECT_EQ(file.entries[1].value, "IB\r");
    EXPECT_EQ(file.entries[2].value, "1");  // no trailing newline
    EXPECT_EQ(file.entries[2].line, 3);
}

TEST(NcclConfParse, LongLinesAreSplitLikeFgets) {
    std::string value(5000, 'x');
    ConfFile file = parse_conf("c", "NCCL_LONG=" + value + "\nNCCL_NEXT=1\n");
    ASSERT_EQ(file.entries.size(), 2U);
    EXPECT_EQ(file.entries[0].value.size(), 1023U);  // envValue is char[1024]
    EXPECT_EQ(file.entries[1].name, "NCCL_NEXT");
    EXPECT_EQ(file.entries[1].line, 2);
}

// ---- lint -------------------------------------------------------------------

struct LintCase {
    const char* label;
    std::string line;
    std::string problem_contains;
    std::string meant_name;
    std::string corrected;
};

class NcclConfLint : public ::testing::TestWithParam<LintCase> {};

TEST_P(NcclConfLint, ExplainsTheQuirk) {
    const LintCase& c = GetParam();
    auto issues = lint_conf(parse_conf("/etc/nccl.conf", c.line + "\n"));
    ASSERT_FALSE(issues.empty()) << c.line;
    bool found = false;
    for (const auto& issue : issues) {
        if (issue.problem.find(c.problem_contains) != std::string::npos) {
            found = true;
            EXPECT_EQ(issue.name, c.meant_name);
            EXPECT_EQ(issue.corrected, c.corrected);
            EXPECT_EQ(issue.path, "/etc/nccl.conf");
            EXPECT_EQ(issue.line, 1);
        }
    }
    EXPECT_TRUE(found) << "no issue mentions '" << c.problem_contains << "' for " << c.line
                       << "; first: " << issues.front().problem;
}

INSTANTIATE_TEST_SUITE_P(
    Quirks, NcclConfLint,
    ::testing::Values(
        LintCase{"spaces_around_equals", "NCCL_IB_HCA = mlx5", "named 'NCCL_IB_HCA '", "NCCL_IB_HCA",
                 "NCCL_IB_HCA=mlx5"},
        LintCase{"quotes", "NCCL_SOCKET_IFNAME=\"eth0\"", "quotes are kept literally", "NCCL_SOCKET_IFNAME",
                 "NCCL_SOCKET_IFNAME=eth0"},
        LintCase{"export", "export NCCL_DEBUG=INFO", "'export' is not understood", "NCCL_DEBUG", "NCCL_DEBUG=INFO"},
        LintCase{"leading_whitespace", "  NCCL_NET=IB", "leading whitespace", "NCCL_NET", "NCCL_NET=IB"},
        LintCase{"inline_comment", "NCCL_IB_QPS_PER_CONNECTION=4 # comment", "does not start a comment",
                 "NCCL_IB_QPS_PER_CONNECTION", "NCCL_IB_QPS_PER_CONNECTION=4"},
        LintCase{"size_suffix", "NCCL_BUFFSIZE=8M", "as 8, not 8388608", "NCCL_BUFFSIZE", "NCCL_BUFFSIZE=8388608"},
        // No integer to offer: the fix must not repeat the broken value.
        LintCase{"words", "NCCL_IB_QPS_PER_CONNECTION=four", "not an integer", "NCCL_IB_QPS_PER_CONNECTION", ""},
        LintCase{"exponent", "NCCL_IB_QPS_PER_CONNECTION=1e99", "not an integer", "NCCL_IB_QPS_PER_CONNECTION", ""},
        LintCase{"overflow", "NCCL_IB_QPS_PER_CONNECTION=99999999999999999999", "out of range",
                 "NCCL_IB_QPS_PER_CONNECTION", ""},
        LintCase{"quoted_integer", "NCCL_IB_QPS_PER_CONNECTION=\"4\"", "as 0, not 4", "NCCL_IB_QPS_PER_CONNECTION",
                 "NCCL_IB_QPS_PER_CONNECTION=4"},
        LintCase{"indented_comment", "  # NCCL_DEBUG=INFO", "first character is '#'", "# NCCL_DEBUG",
                 "# NCCL_DEBUG=INFO"},
        // Without a name there is no line to offer: "=value" again would be ignored again.
        LintCase{"no_name", "=value", "ignores a line without a name", "", ""}),
    [](const ::testing::TestParamInfo<LintCase>& param_info) { return std::string(param_info.param.label); });

TEST(NcclConfLint, CleanLinesHaveNoIssues) {
    auto issues = lint_conf(parse_conf("c",
                                       "# Azure ndv5\n"
                                       "NCCL_IB_PCI_RELAXED_ORDERING=1\n"
                                       "NCCL_TOPO_FILE=/opt/microsoft/ndv5/topo.xml\n"
                                       "NCCL_IGNORE_CPU_AFFINITY=1\n"
                                       "NCCL_BUFFSIZE=0x800000\n"
                                       "NCCL_NET_GDR_LEVEL=PHB\n"));
    for (const auto& issue : issues) ADD_FAILURE() << issue.line << ": " << issue.problem;
}

TEST(NcclConfLint, EnvironmentValuesAreLintedToo) {
    auto issues = lint_value("environment", 0, "NCCL_BUFFSIZE", "8M");
    ASSERT_EQ(issues.size(), 1U);
    EXPECT_EQ(issues[0].path, "environment");
    EXPECT_EQ(issues[0].line, 0);
    EXPECT_EQ(issues[0].corrected, "NCCL_BUFFSIZE=8388608");

    EXPECT_TRUE(lint_value("environment", 0, "NCCL_NET_GDR_LEVEL", "PHB").empty());
    EXPECT_TRUE(lint_value("environment", 0, "NCCL_BUFFSIZE", "4194304").empty());
    EXPECT_FALSE(lint_value("environment", 0, "NCCL_IB_HCA", "'mlx5_0'").empty());
    EXPECT_FALSE(lint_value("environment", 0, "NCCL_BUFFSIZE", "99999999999999999999999").empty());
}

TEST(NcclConfLint, IntegerVariables) {
    for (const char* name : {"NCCL_BUFFSIZE",
                             "NCCL_IB_QPS_PER_CONNECTION",
                             "NCCL_IB_DISABLE",
                             "NCCL_P2P_DISABLE",
                             "NCCL_SHM_DISABLE",
                             "NCCL_NVLS_ENABLE",
                             "NCCL_CUMEM_ENABLE",
                             "NCCL_MAX_NCHANNELS",
                             "NCCL_MIN_NCHANNELS",
                             "NCCL_MAX_CTAS",
                             "NCCL_MIN_CTAS",
                             "NCCL_NET_GDR_READ",
                             "NCCL_IB_TIMEOUT",
                             "NCCL_IB_RETRY_CNT",
                             "NCCL_IB_GID_INDEX",
                             "NCCL_IB_TC",
                             "NCCL_IB_SL",
                             "NCCL_IGNORE_CPU_AFFINITY",
                             "NCCL_CROSS_NIC",
                             "NCCL_COLLNET_ENABLE",
                             "NCCL_MNNVL_ENABLE",
                             "NCCL_P2P_NET_CHUNKSIZE",
                             "NCCL_NCHANNELS_PER_NET_PEER",
                             "NCCL_IB_SPLIT_DATA_ON_QPS",
                             "NCCL_CUMEM_HOST_ENABLE"}) {
        EXPECT_TRUE(is_integer_variable(name)) << name;
    }
    for (const char* name : {"NCCL_NET_GDR_LEVEL", "NCCL_P2P_LEVEL", "NCCL_IB_HCA", "NCCL_DEBUG", "NCCL_TOPO_FILE",
                             "NCCL_ALGO", "NCCL_BUFFSIZE ", ""}) {
        EXPECT_FALSE(is_integer_variable(name)) << name;
    }
}

// ---- parse_int --------------------------------------------------------------

TEST(NcclParseInt, StrtollSemantics) {
    auto check = [](const char* text, long long value, bool complete, bool overflow) {
        IntValue v = parse_int(text);
        EXPECT_EQ(v.value, value) << text;
        EXPECT_EQ(v.complete, complete) << text;
        EXPECT_EQ(v.overflow, overflow) << text;
    };
    check("8M", 8, false, false);
    check("four", 0, false, false);
    check("0x10", 16, true, false);
    check("1e3", 1, false, false);
    check("010", 8, true, false);  // base 0: leading 0 is octal
    check("-2", -2, true, false);
    check(" 4", 4, true, false);
    check("4 # comment", 4, false, false);
    check("", 0, false, false);
    check("99999999999999999999", LLONG_MAX, true, true);
    check("-99999999999999999999", LLONG_MIN, true, true);
}

// ---- resolve ----------------------------------------------------------------

TEST(NcclResolve, EnvBeatsConfFileBeatsSystemConf) {
    MemoryFileView files;
    files.add_file("/work/my.conf", "NCCL_DEBUG=WARN\nNCCL_IB_HCA=mlx5_0\n")
        .add_file("/etc/nccl.conf", "NCCL_DEBUG=TRACE\nNCCL_IB_HCA=mlx5_9\nNCCL_TOPO_FILE=/opt/topo.xml\n")
        .add_file("/home/u/.nccl.conf", "NCCL_TOPO_FILE=/home/topo.xml\nNCCL_NET=Socket\n");
    Environment env{{"NCCL_DEBUG", "INFO"}, {"NCCL_CONF_FILE", "/work/my.conf"}, {"HOME", "/home/u"}};

    EffectiveConfig config = resolve(env, files);
    EXPECT_TRUE(config.env_known);
    ASSERT_NE(config.get("NCCL_DEBUG"), nullptr);
    EXPECT_EQ(config.get("NCCL_DEBUG")->value, "INFO");
    EXPECT_EQ(config.get("NCCL_DEBUG")->source, Source::environment);
    EXPECT_EQ(config.get("NCCL_DEBUG")->origin, "environment");

    EXPECT_EQ(config.value("NCCL_IB_HCA"), "mlx5_0");
    EXPECT_EQ(config.get("NCCL_IB_HCA")->source, Source::conf_file);
    EXPECT_EQ(config.get("NCCL_IB_HCA")->origin, "/work/my.conf:2");

    EXPECT_EQ(config.value("NCCL_TOPO_FILE"), "/opt/topo.xml");
    EXPECT_EQ(config.get("NCCL_TOPO_FILE")->source, Source::system_conf);
    EXPECT_EQ(config.get("NCCL_TOPO_FILE")->origin, "/etc/nccl.conf:3");

    // NCCL_CONF_FILE set: ~/.nccl.conf is never read.
    EXPECT_EQ(config.value("NCCL_NET"), std::nullopt);
    ASSERT_EQ(config.loaded.size(), 2U);
    EXPECT_EQ(config.loaded[0].path, "/work/my.conf");
    EXPECT_EQ(config.loaded[1].path, "/etc/nccl.conf");
    // HOME is not an NCCL_ variable and no file sets it.
    EXPECT_EQ(config.get("HOME"), nullptr);
}

TEST(NcclResolve, HomeConfWhenConfFileUnsetOrEmpty) {
    MemoryFileView files;
    files.add_file("/home/u/.nccl.conf", "NCCL_NET=Socket\n").add_file("/etc/nccl.conf", "NCCL_NET=IB\n");
    for (const Environment& env :
         {Environment{{"HOME", "/home/u"}}, Environment{{"HOME", "/home/u"}, {"NCCL_CONF_FILE", ""}}}) {
        EffectiveConfig config = resolve(env, files);
        EXPECT_EQ(config.value("NCCL_NET"), "Socket");
        EXPECT_EQ(config.get("NCCL_NET")->source, Source::user_conf);
        EXPECT_EQ(config.get("NCCL_NET")->origin, "/home/u/.nccl.conf:1");
    }
}

TEST(NcclResolve, FirstDefinitionInOneFileWins) {
    MemoryFileView files;
    files.add_file("/etc/nccl.conf", "NCCL_NET=IB\nNCCL_NET=Socket\n");
    EffectiveConfig config = resolve(Environment{}, files);
    EXPECT_EQ(config.value("NCCL_NET"), "IB");
}

TEST(NcclResolve, MissingConfFileIsNotedAndHomeIsStillSkipped) {
    MemoryFileView files;
    files.add_file("/home/u/.nccl.conf", "NCCL_NET=Socket\n").add_file("/etc/nccl.conf", "NCCL_DEBUG=WARN\n");
    EffectiveConfig config = resolve(Environment{{"HOME", "/home/u"}, {"NCCL_CONF_FILE", "/nope.conf"}}, files);
    EXPECT_EQ(config.value("NCCL_NET"), std::nullopt);
    EXPECT_EQ(config.value("NCCL_DEBUG"), "WARN");
    ASSERT_EQ(config.notes.size(), 1U);
    EXPECT_EQ(config.notes[0], "NCCL_CONF_FILE=/nope.conf names a missing file: skipped");
}

TEST(NcclResolve, BrokenNamesNeverReachSettings) {
    MemoryFileView files;
    files.add_file("/etc/nccl.conf",
                   "NCCL_IB_HCA = mlx5\nexport NCCL_DEBUG=INFO\n  NCCL_NET=IB\n=x\nCUDA_DEVICE_MAX_CONNECTIONS=1\n");
    EffectiveConfig config = resolve(Environment{}, files);
    EXPECT_EQ(config.get("NCCL_IB_HCA"), nullptr);
    EXPECT_EQ(config.get("NCCL_IB_HCA "), nullptr);
    EXPECT_EQ(config.get("NCCL_DEBUG"), nullptr);
    EXPECT_EQ(config.get("NCCL_NET"), nullptr);
    // Conf files set any name literally, not only NCCL_*.
    EXPECT_EQ(config.value("CUDA_DEVICE_MAX_CONNECTIONS"), "1");
    ASSERT_EQ(config.loaded.size(), 1U);
    EXPECT_EQ(config.loaded[0].entries.size(), 5U);
}

TEST(NcclResolve, NonNcclEnvironmentStillBeatsConfFiles) {
    MemoryFileView files;
    files.add_file("/etc/nccl.conf", "CUDA_DEVICE_MAX_CONNECTIONS=1\n");
    EffectiveConfig config = resolve(Environment{{"CUDA_DEVICE_MAX_CONNECTIONS", "32"}}, files);
    ASSERT_NE(config.get("CUDA_DEVICE_MAX_CONNECTIONS"), nullptr);
    EXPECT_EQ(config.get("CUDA_DEVICE_MAX_CONNECTIONS")->value, "32");
    EXPECT_EQ(config.get("CUDA_DEVICE_MAX_CONNECTIONS")->source, Source::environment);
}

TEST(NcclResolve, UnusualFilesBecomeNotes) {
    MemoryFileView files;
    files.add_directory("/home/u/.nccl.conf").add_unreadable("/etc/nccl.conf");
    EffectiveConfig config = resolve(Environment{{"HOME", "/home/u"}}, files);
    EXPECT_TRUE(config.settings.empty());
    EXPECT_TRUE(config.loaded.empty());
    ASSERT_EQ(config.notes.size(), 2U);
    EXPECT_NE(config.notes[0].find("is a directory"), std::string::npos);
    EXPECT_NE(config.notes[1].find("unreadable"), std::string::npos);
}

TEST(NcclResolve, ConfFileThroughSymlink) {
    MemoryFileView files;
    files.add_file("/opt/conf/real.conf", "NCCL_NET=IB\n").add_symlink("/etc/nccl.conf", "../opt/conf/real.conf");
    EXPECT_EQ(resolve(Environment{}, files).value("NCCL_NET"), "IB");

    MemoryFileView dangling;
    dangling.add_symlink("/etc/nccl.conf", "/opt/gone.conf");
    EffectiveConfig config = resolve(Environment{}, dangling);
    ASSERT_EQ(config.notes.size(), 2U);
    EXPECT_EQ(config.notes[0], "HOME is not set: NCCL skips $HOME/.nccl.conf");
    EXPECT_EQ(config.notes[1], "/etc/nccl.conf is a dangling symlink: skipped");
}

TEST(NcclResolve, ConfFileSettingInsideAFileHasNoEffect) {
    MemoryFileView files;
    files.add_file("/etc/nccl.conf", "NCCL_CONF_FILE=/other.conf\n").add_file("/other.conf", "NCCL_NET=IB\n");
    EffectiveConfig config = resolve(Environment{}, files);
    EXPECT_EQ(config.value("NCCL_NET"), std::nullopt);
    ASSERT_FALSE(config.notes.empty());
    EXPECT_NE(config.notes.back().find("has no effect"), std::string::npos);
}

TEST(NcclResolve, FromLaunchContext) {
    auto files = std::make_shared<MemoryFileView>();
    files->add_file("/etc/nccl.conf", "NCCL_TOPO_FILE=/opt/topo.xml\n").add_file("/root/.nccl.conf", "NCCL_NET=IB\n");

    LaunchContext ctx;
    ctx.files = files;
    ctx.env = Fact<Environment>::known(Environment{{"HOME", "/root"}, {"NCCL_DEBUG", "INFO"}});
    EffectiveConfig known = resolve(ctx);
    EXPECT_TRUE(known.env_known);
    EXPECT_EQ(known.value("NCCL_DEBUG"), "INFO");
    EXPECT_EQ(known.value("NCCL_NET"), "IB");
    EXPECT_EQ(known.value("NCCL_TOPO_FILE"), "/opt/topo.xml");

    ctx.env = Fact<Environment>::unknown("manifest does not say");
    EffectiveConfig unknown = resolve(ctx);
    EXPECT_FALSE(unknown.env_known);
    EXPECT_EQ(unknown.value("NCCL_NET"), std::nullopt);
    EXPECT_EQ(unknown.value("NCCL_TOPO_FILE"), "/opt/topo.xml");
    EXPECT_FALSE(unknown.notes.empty());

    LaunchContext no_files;
    no_files.env = Fact<Environment>::known(Environment{{"NCCL_DEBUG", "WARN"}});
    EffectiveConfig without_view = resolve(no_files);
    EXPECT_EQ(without_view.value("NCCL_DEBUG"), "WARN");
    EXPECT_TRUE(without_view.loaded.empty());
}

TEST(NcclResolve, SourceNames) {
    EXPECT_EQ(to_string(Source::environment), "environment");
    EXPECT_EQ(to_string(Source::conf_file), "conf_file");
    EXPECT_EQ(to_string(Source::user_conf), "user_conf");
    EXPECT_EQ(to_string(Source::system_conf), "system_conf");
}

TEST(NcclMemoryFileView, DescribesWhatATaskSees) {
    MemoryFileView files("test root");
    files.add_file("/a/b/file", "hello").add_other("/dev/null").add_unknown("/maybe");
    EXPECT_EQ(files.stat("/a//b/./file").kind, FileKind::regular);
    EXPECT_EQ(files.stat("/a/b/file").size, 5U);
    EXPECT_EQ(files.stat("/a/b").kind, FileKind::directory);
    EXPECT_EQ(files.stat("/a/c").kind, FileKind::missing);
    EXPECT_EQ(files.stat("/dev/null").kind, FileKind::other);
    EXPECT_EQ(files.stat("/maybe").kind, FileKind::unknown);
    EXPECT_EQ(files.list("/a"), std::vector<std::string>{"b"});
    EXPECT_FALSE(files.read("/a/b/file", 2).ok());  // past the bound: an error, not a prefix
    EXPECT_FALSE(files.read("/a/b").ok());
    EXPECT_EQ(files.describe(), "test root");

    files.add_symlink("/link", "/a").add_symlink("/loop", "/loop");
    EXPECT_EQ(files.stat("/link/b/file").kind, FileKind::regular);
    EXPECT_EQ(files.stat("/link/b/file").resolved_path, "/a/b/file");
    EXPECT_EQ(files.stat("/loop").kind, FileKind::unreadable);
}

}  // namespace
}  // namespace launchguard::nccl
