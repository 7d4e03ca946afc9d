// Runs one rule on one launch, the way the engine would, for rule tests.
//
//   auto result = run_rule("topo.file-missing", launch_from_yaml("env: {NCCL_TOPO_FILE: /x}"));
//   ASSERT_TRUE(result.fired());
//   EXPECT_EQ(result.finding().evidence_value("path"), "/x");
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "context/launch_context.h"
#include "finding/finding.h"
#include "profile/profile.h"
#include "rules/rule.h"

namespace launchguard::testing {

struct RuleResult {
    std::vector<Finding> findings;
    std::vector<Unknown> unknowns;

    [[nodiscard]] bool fired() const { return !findings.empty(); }
    [[nodiscard]] bool quiet() const { return findings.empty() && unknowns.empty(); }
    [[nodiscard]] bool undecided() const { return findings.empty() && !unknowns.empty(); }
    // The single finding; fails the test (via exception) when there is not exactly one.
    [[nodiscard]] const Finding& finding() const;
    // Value of an evidence key of the single finding, "" when absent.
    [[nodiscard]] std::string evidence(std::string_view key) const;
    // The set-env value a finding's remediation proposes for name, "" when none.
    [[nodiscard]] std::string set_env(std::string_view name) const;
    [[nodiscard]] bool has_op(RemediationOp::Kind kind) const;
};

RuleResult run_rule(std::string_view id, const LaunchContext& ctx, const Profile& profile);
// A rule outside the registry (one a test declares).
RuleResult run_rule(const Rule& rule, const LaunchContext& ctx, const Profile& profile);
RuleResult run_rule(std::string_view id, const LaunchContext& ctx);  // embedded default profile

// A profile from inline YAML (schema-checked against the real rule list).
Profile profile_from_yaml(const std::string& yaml);

}  // namespace launchguard::testing
