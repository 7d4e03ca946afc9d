// What launchguard prints quotes the launch's own values. These tests feed
// hostile values (a newline, ESC, a command substitution, bytes that are not
// UTF-8) through each writer and check the output stays what its reader
// expects: a shell script that runs nothing of the user's, one terminal line
// per finding, valid JSON, enroot lines enroot reads back as written.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>

#include "report/enroot_patch.h"
#include "report/fix_script.h"
#include "report/json_report.h"
#include "report/text_report.h"
#include "support/run_command.h"
#include "util/text_escape.h"

namespace launchguard {
namespace {

Report report_with(std::vector<RemediationOp> ops, std::string message) {
    Report report;
    report.profile = "default";
    report.profile_origin = "embedded:default";
    report.decision = Decision::patch;
    Finding finding;
    finding.rule = "conf.lint";
    finding.action = Action::patch;
    finding.message = std::move(message);
    finding.remediation = ops;
    report.findings.push_back(finding);
    report.patch = std::move(ops);
    return report;
}

TEST(FixScript, RunsNothingTheLaunchChose) {
    namespace fs = std::filesystem;
    const fs::path marker = fs::temp_directory_path() / ("lg-fix-marker-" + std::to_string(::getpid()));
    fs::remove(marker);
    const std::string touch = "touch " + marker.string();
    Report report = report_with(
        {RemediationOp::set_env("NCCL_A$(" + touch + ")", "1"),
         RemediationOp::set_env("NCCL_B", "x\n" + touch + "\n$(" + touch + ")`" + touch + "`'; " + touch + "; '"),
         RemediationOp::unset_env("NCCL_C;" + touch), RemediationOp::manual_step("step\n" + touch)},
        "value 'a\n" + touch + "' is wrong");
    std::string script = render_fix_script(report);

    auto run = testing::run_command("sh -c " + testing::quote_arg(script + "\nprintf '%s' \"$NCCL_B\""));
    EXPECT_EQ(run.exit_code, 0) << script << run.err;
    EXPECT_FALSE(fs::exists(marker)) << "the fix script ran a command from a value:\n" << script;
    // The value survives quoting exactly.
    EXPECT_EQ(run.out, "x\n" + touch + "\n$(" + touch + ")`" + touch + "`'; " + touch + "; '");
    EXPECT_NE(script.find("# not applied: 'NCCL_A$(touch"), std::string::npos) << script;
    fs::remove(marker);
}

TEST(FixScript, QuotesAnythingButPlainWords) {
    EXPECT_EQ(shell_quote("mlx5_0:1,mlx5_1:1"), "mlx5_0:1,mlx5_1:1");
    EXPECT_EQ(shell_quote("^mlx5_0"), "'^mlx5_0'");
    EXPECT_EQ(shell_quote(""), "''");
    EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

TEST(TextReport, EscapesControlCharactersFromTheLaunch) {
    Report report = report_with({RemediationOp::set_env("NCCL_SOCKET_IFNAME", "eth0\x1b]0;owned\x07\r")},
                                "NCCL_SOCKET_IFNAME='\x1b[2J\reth0' matches nothing");
    Unknown unknown;
    unknown.rule = "topo.file-missing";
    unknown.reason = "path /opt/\x1b[31mred\nnext";
    report.unknowns.push_back(unknown);
    std::string text = render_text(report, TextStyle{false});
    EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
    EXPECT_EQ(text.find('\r'), std::string::npos) << text;
    EXPECT_NE(text.find("\\x1B[2J\\reth0"), std::string::npos) << text;
    // One line per finding and unknown, plus the header and the summary.
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4) << text;
}

TEST(JsonReport, IsValidUtf8WhateverTheLaunchHolds) {
    Report report = report_with({RemediationOp::set_env("NCCL_TOPO_FILE", "/opt/\xff\xfe.xml")},
                                "bad \xc3 byte \xed\xa0\x80 surrogate");
    report.findings[0].evidence.emplace_back("path\xff", "\x80");
    report.profile = "prof\xc0\xaf";
    std::string json = render_json(report);
    boost::system::error_code ec;
    auto parsed = boost::json::parse(json, ec);
    ASSERT_FALSE(ec) << json;
    // boost::json accepts some invalid UTF-8 when parsing, so check the bytes too.
    EXPECT_EQ(valid_utf8(json), json);
}

TEST(EnrootPatch, EncodesBlanksInMountPathsAndStaysIdempotent) {
    Report report = report_with({RemediationOp::mount_file("/opt/my topo/nd v5.xml", "/opt/my topo/nd v5.xml")}, "m");
    EnrootPatch first = enroot_patch_for(report, "", "");
    ASSERT_EQ(first.mount_lines.size(), 1U);
    EXPECT_EQ(first.mount_lines[0].rfind("/opt/my\\040topo/nd\\040v5.xml /opt/my\\040topo/nd\\040v5.xml none ", 0), 0U)
        << first.mount_lines[0];
    // The second run sees its own line and adds nothing.
    EnrootPatch second = enroot_patch_for(report, "", first.mount_lines[0] + "\n");
    EXPECT_TRUE(second.mount_lines.empty());
}

TEST(EnrootPatch, RefusesAValueWithALineBreakInsteadOfInjectingALine) {
    Report report = report_with({RemediationOp::set_env("NCCL_TOPO_FILE", "/opt/x.xml\nLD_PRELOAD=/tmp/evil.so")}, "m");
    EnrootPatch patch = enroot_patch_for(report, "", "");
    EXPECT_TRUE(patch.environ_lines.empty());
    ASSERT_EQ(patch.refused.size(), 1U);
    EXPECT_NE(patch.refused[0].find("line break"), std::string::npos) << patch.refused[0];
    EXPECT_EQ(patch.refused[0].find('\n'), std::string::npos);
}

}  // namespace
}  // namespace launchguard
