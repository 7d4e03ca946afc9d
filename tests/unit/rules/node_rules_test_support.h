// Small readers of a Finding shared by the cpu/power/virt/hw/container rule
// tests, for assertions on what a user would read.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "finding/finding.h"
#include "support/rule_harness.h"
#include "support/text.h"

namespace launchguard::testing {

// The texts of a finding's manual steps, in order.
inline std::vector<std::string> manual_steps(const Finding& finding) {
    std::vector<std::string> texts;
    for (const auto& op : finding.remediation) {
        if (op.kind == RemediationOp::Kind::manual) texts.push_back(op.text);
    }
    return texts;
}

// The value of an evidence key of any finding (RuleResult::evidence needs exactly one), "" when absent.
inline std::string evidence_of(const Finding& finding, const std::string& key) {
    for (const auto& [k, v] : finding.evidence) {
        if (k == key) return v;
    }
    return "";
}

// The rule could not decide (no finding, one unknown of `rule`) and its
// reason mentions `part`.
inline ::testing::AssertionResult undecided_because(const RuleResult& result, const std::string& rule,
                                                    const std::string& part) {
    if (!result.undecided()) {
        return ::testing::AssertionFailure() << "expected only unknowns, got " << result.findings.size()
                                             << " finding(s) and " << result.unknowns.size() << " unknown(s)";
    }
    const Unknown& unknown = result.unknowns.front();
    if (unknown.rule != rule) return ::testing::AssertionFailure() << "unknown is from " << unknown.rule;
    if (!mentions(unknown.reason, part)) {
        return ::testing::AssertionFailure()
               << "reason \"" << unknown.reason << "\" does not mention \"" << part << "\"";
    }
    return ::testing::AssertionSuccess();
}

}  // namespace launchguard::testing
