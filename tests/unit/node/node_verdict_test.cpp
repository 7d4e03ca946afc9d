// From a report to the node's health, a drain reason and NPD's message.
#include <gtest/gtest.h>

#include "node/node_verdict.h"
#include "rules/rule.h"

namespace launchguard {
namespace {

Finding finding(std::string rule, Action action, std::string message) {
    Finding f;
    f.rule = std::move(rule);
    f.action = action;
    f.message = std::move(message);
    return f;
}

const std::vector<std::string> kRules = {"power.governor", "numa.balancing-on", "hw.pcie-degraded", "hw.inventory",
                                         "net.ib-port-degraded"};

TEST(NodeVerdict, NoFindingsIsHealthyWithEveryRulePassing) {
    NodeVerdict v = verdict_from_report(Report{}, kRules);
    EXPECT_EQ(v.health, NodeHealth::healthy);
    ASSERT_EQ(v.rules.size(), kRules.size());
    for (const auto& r : v.rules) EXPECT_EQ(r.outcome, RuleOutcome::pass) << r.rule;
}

TEST(NodeVerdict, WarningsOnlyAreHealthyEnoughButSaySo) {
    Report report;
    report.findings.push_back(finding("power.governor", Action::warn, "governor powersave"));
    NodeVerdict v = verdict_from_report(report, kRules);
    EXPECT_EQ(v.health, NodeHealth::warning);
    EXPECT_EQ(v.rules[0].outcome, RuleOutcome::warn);
    EXPECT_EQ(v.rules[0].message, "governor powersave");
}

TEST(NodeVerdict, ABlockingFindingDegradesTheNode) {
    Report report;
    report.findings.push_back(finding("power.governor", Action::warn, "governor powersave"));
    report.findings.push_back(finding("hw.pcie-degraded", Action::block, "GPU 0000:03:00.0 at x8 of x16"));
    report.findings.push_back(finding("hw.pcie-degraded", Action::block, "NIC 0000:04:00.0 at 5 of 8 GT/s"));
    report.unknowns.push_back({"hw.inventory", "the profile lists no GPU count"});
    report.unknowns.push_back({"nccl", "not a rule"});
    NodeVerdict v = verdict_from_report(report, kRules);
    EXPECT_EQ(v.health, NodeHealth::degraded);
    EXPECT_EQ(v.rules[2].outcome, RuleOutcome::block);
    EXPECT_EQ(v.rules[2].message, "GPU 0000:03:00.0 at x8 of x16");  // the first finding speaks for the rule
    EXPECT_EQ(v.rules[3].outcome, RuleOutcome::unknown);
    EXPECT_EQ(v.rules[4].outcome, RuleOutcome::pass);
    EXPECT_EQ(v.rules.size(), kRules.size()) << "an unknown outside any rule adds no rule";
}

TEST(NodeVerdict, PatchActionsCountAsWarningsOnANode) {
    Report report;
    report.findings.push_back(finding("power.governor", Action::patch, "x"));
    EXPECT_EQ(verdict_from_report(report, kRules).health, NodeHealth::warning);
}

TEST(NodeVerdict, DrainReasonNamesTheFirstBlockingRule) {
    Report report;
    report.findings.push_back(finding("hw.pcie-degraded", Action::block, "x"));
    NodeVerdict one = verdict_from_report(report, kRules);
    EXPECT_EQ(drain_reason(one), "launchguard: hw.pcie-degraded");
    report.findings.push_back(finding("net.ib-port-degraded", Action::block, "y"));
    report.findings.push_back(finding("hw.inventory", Action::block, "z"));
    NodeVerdict three = verdict_from_report(report, kRules);
    EXPECT_EQ(drain_reason(three), "launchguard: hw.pcie-degraded +2");
    EXPECT_EQ(drain_reason(unknown_verdict("stalled")), "launchguard: node check unknown");
    // Every reason starts with the prefix later checks recognise their drains by.
    for (const auto& v : {one, three, unknown_verdict("x")})
        EXPECT_EQ(drain_reason(v).rfind(kDrainReasonPrefix, 0), 0U);
}

TEST(NodeVerdict, EveryNodeRulesDrainReasonStaysShort) {
    // `sinfo -R` shows 20 columns (the prefix and the rule's family); the
    // whole reason must still fit `sinfo -R -o '%45E %N'` and one log line.
    for (const Rule* rule : all_rules()) {
        if ((rule->info().scopes & kScopeNode) == 0) continue;
        NodeVerdict v;
        v.health = NodeHealth::degraded;
        v.rules.push_back({std::string(rule->info().id), RuleOutcome::block, "m"});
        for (int i = 0; i < 12; ++i) v.rules.push_back({"other", RuleOutcome::block, "m"});
        const std::string reason = drain_reason(v);
        EXPECT_LE(reason.size(), 45U) << reason;
        EXPECT_EQ(reason.substr(0, 20), std::string("launchguard: ") + std::string(rule->info().id).substr(0, 7));
    }
}

TEST(NodeVerdict, NpdMessageFitsOnEveryOutcome) {
    Report warn;
    warn.findings.push_back(finding("power.governor", Action::warn, "w"));
    warn.findings.push_back(finding("numa.balancing-on", Action::warn, "w"));
    Report block;
    block.findings.push_back(finding("hw.pcie-degraded", Action::block,
                                     "GPU 0000:03:00.0 runs its PCIe link at 5.0 GT/s x8, below its maximum of "
                                     "5.0 GT/s x16: half the host-device bandwidth \xc3\xa9\xc3\xa9\xc3\xa9"));
    const NodeVerdict verdicts[] = {verdict_from_report(Report{}, kRules), verdict_from_report(warn, kRules),
                                    verdict_from_report(block, kRules),
                                    unknown_verdict("node check did not finish within 10 s while probing the node "
                                                    "(live topology, node facts under /)\nsecond line")};
    const std::string expected_start[] = {"launchguard: node healthy (5 rules)",
                                          "launchguard: healthy, warning power.governor +1",
                                          "launchguard: hw.pcie-degraded: GPU 0000:03:00.0",
                                          "launchguard: unknown: node check did not finish within 10 s"};
    for (std::size_t i = 0; i < 4; ++i) {
        const std::string message = npd_message(verdicts[i]);
        EXPECT_LE(message.size(), kNpdMessageBytes) << message;
        EXPECT_EQ(message.rfind(expected_start[i], 0), 0U) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
    // Cut at a character boundary, never inside a UTF-8 sequence.
    for (std::size_t limit = 40; limit < 200; ++limit) {
        std::string m = npd_message(verdicts[2], limit);
        ASSERT_LE(m.size(), limit);
        if (!m.empty()) {
            EXPECT_NE(static_cast<unsigned char>(m.back()), 0xC3U) << limit;
        }
    }
}

TEST(NodeVerdict, NpdMessageEscapesControlAndInvalidBytesFromFindings) {
    // A sysfs value quoted in a finding reaches NPD's condition message and
    // events: a terminal escape, a bell and bytes that are not UTF-8 must not.
    Report block;
    block.findings.push_back(finding("power.governor", Action::block,
                                     "cpufreq governor is 'power\x1b]0;owned\x07save\xff\x7f' on CPUs 0-3"));
    const NodeVerdict verdict = verdict_from_report(block, kRules);
    const std::string message = npd_message(verdict, 200);
    EXPECT_EQ(message,
              "launchguard: power.governor: cpufreq governor is 'power\\x1B]0;owned\\x07save\\xFF\\x7F' on CPUs 0-3");
    const NodeVerdict unknown = unknown_verdict("cannot read /sys/x\x1b[2J\x9b");
    EXPECT_EQ(npd_message(unknown), "launchguard: unknown: cannot read /sys/x\\x1B[2J\\x9B");
    // The bound holds for the escaped line, and no cut splits an escape.
    for (std::size_t limit = 20; limit < 120; ++limit) {
        const std::string m = npd_message(verdict, limit);
        ASSERT_LE(m.size(), limit);
        for (char c : m) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << limit << ": " << m;
        const auto slash = m.rfind('\\');
        if (slash != std::string::npos) {
            EXPECT_GE(m.size() - slash, 4U) << limit << ": " << m;
        }
    }
}

}  // namespace
}  // namespace launchguard
