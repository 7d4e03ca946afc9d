// The text report leads with what a user can act on: blocks, then patches,
// then warnings, then information; a spec review says in one line which
// rules only the node or the running task can decide, unless verbose.
#include "report/text_report.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <string>

namespace launchguard {
namespace {

Finding finding(const std::string& rule, Action action, Severity severity = Severity::warning) {
    Finding f;
    f.rule = rule;
    f.action = action;
    f.severity = severity;
    f.message = rule + " message";
    return f;
}

Report sample() {
    Report report;
    report.profile = "default";
    report.profile_origin = "embedded:default";
    report.decision = Decision::block;
    report.findings.push_back(finding("cpu.k8s-not-pinnable", Action::warn, Severity::info));
    report.findings.push_back(finding("net.fallback-unguarded", Action::warn));
    report.findings.push_back(finding("shm.small", Action::patch));
    report.findings.push_back(finding("topo.required", Action::block, Severity::error));
    report.unknowns.push_back({"power.turbo-off",
                               "cannot tell whether turbo is available because a batch script "
                               "does not show the node"});
    report.unknowns.push_back({"hw.inventory", "cannot count the node's GPUs"});
    report.unknowns.push_back({"mem.memlock", "cannot tell whether RDMA can pin NCCL's buffers"});
    report.unknowns.push_back({"review", "srun on line 5: a note"});
    return report;
}

std::size_t at(const std::string& text, const std::string& part) {
    std::size_t pos = text.find(part);
    EXPECT_NE(pos, std::string::npos) << part << " not in:\n" << text;
    return pos;
}

TEST(TextReport, BlocksLeadThenPatchesWarningsAndInformation) {
    std::string text = render_text(sample(), TextStyle{});
    EXPECT_LT(at(text, "BLOCK  topo.required"), at(text, "PATCH  shm.small"));
    EXPECT_LT(at(text, "PATCH  shm.small"), at(text, "WARN   net.fallback-unguarded"));
    EXPECT_LT(at(text, "WARN   net.fallback-unguarded"), at(text, "INFO   cpu.k8s-not-pinnable"));
    EXPECT_LT(at(text, "INFO   cpu.k8s-not-pinnable"), at(text, "unknown:"));
    at(text, "4 finding(s): 1 block, 1 patch, 1 warn, 1 info; 4 unknown;");
}

TEST(TextReport, ASpecReviewSaysItsUnknownsInOneLineAfterTheFindings) {
    ReportScope scope;
    scope.spec_review = true;
    std::string text = render_text(sample(), TextStyle{}, scope);
    EXPECT_EQ(text.find("cannot count the node's GPUs"), std::string::npos) << text;
    EXPECT_EQ(text.find("turbo is available"), std::string::npos) << text;
    EXPECT_EQ(text.find("srun on line 5: a note"), std::string::npos) << text;
    // Every unknown counted, each rule named once, and how to see them all.
    std::size_t line = at(text,
                          "4 unknown (judged when the job runs: the SPANK plugin, the enroot hook, "
                          "`launchguard node-check`): power.turbo-off, hw.inventory, mem.memlock, review  "
                          "(--unknown to list)\n");
    // A finding never moves below an unknown.
    EXPECT_LT(at(text, "INFO   cpu.k8s-not-pinnable"), line);
    EXPECT_EQ(std::count(text.begin(), text.end(), '?'), 1) << text;

    scope.unknown_judge = "the launch gate judges them in the container";
    at(render_text(sample(), TextStyle{}, scope), "4 unknown (the launch gate judges them in the container): ");

    scope.verbose = true;
    std::string verbose = render_text(sample(), TextStyle{}, scope);
    at(verbose, "cannot count the node's GPUs");
    at(verbose, "srun on line 5: a note");
    EXPECT_EQ(verbose.find("--unknown to list"), std::string::npos) << verbose;
}

TEST(TextReport, ACheckOfALiveLaunchListsEveryUnknown) {
    std::string text = render_text(sample(), TextStyle{});
    at(text, "cannot count the node's GPUs");
    EXPECT_EQ(text.find("--unknown to list"), std::string::npos) << text;
}

TEST(TextReport, RulesNotApplicableToTheBackendAreOneLine) {
    Report report = sample();
    report.not_applicable.push_back({"shm.small", "the launch uses gloo, not NCCL (spec: --backend gloo)"});
    report.not_applicable.push_back({"net.qps-low", "the launch uses gloo, not NCCL (spec: --backend gloo)"});
    std::string text = render_text(report, TextStyle{});
    at(text, "2 NCCL rule(s) not applicable: the launch uses gloo, not NCCL (spec: --backend gloo)");
}

}  // namespace
}  // namespace launchguard
