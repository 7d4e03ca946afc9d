// Reports for people: one line per finding with its fix beside it, colour
// only when the output is a terminal.
#pragma once

#include <string>

#include "engine/engine.h"

namespace launchguard {

struct TextStyle {
    bool color = false;
};

// What the report is of. A review of a spec (batch script, manifest) says
// its unknowns in one line, after every finding, with who judges them when
// the job runs (`unknown_judge`), unless `verbose` (`review --unknown`)
// asks for each on its own line. JSON keeps every unknown either way.
struct ReportScope {
    bool spec_review = false;
    bool verbose = false;
    // "the launch gate judges them in the container"; empty: the SPANK
    // plugin, the enroot hook and `launchguard node-check` do.
    std::string unknown_judge;
};

std::string render_text(const Report& report, const TextStyle& style, const ReportScope& scope = {});
// "BLOCK", "PATCH", "WARN", "OFF": how every front end labels a finding.
std::string action_label(Action action);

// A short human description of one remediation step.
std::string describe_remediation(const RemediationOp& op);
// A finding's whole remediation on one line: the steps joined by "; ".
std::string describe_remediations(const std::vector<RemediationOp>& ops);

// "rule1,rule2": the rules of the findings that got `action`, each once, in
// report order; "-" when none. What the decision logs and audit annotations list.
std::string rules_with_action(const Report& report, Action action);

}  // namespace launchguard
