// Reports for people: one line per finding with its fix beside it, colour
// only when the output is a terminal.
#pragma once

#include <string>

#include "engine/engine.h"

namespace launchguard {

struct TextStyle {
    bool color = false;
};

std::string render_text(const Report& report, const TextStyle& style);
// "BLOCK", "PATCH", "WARN", "OFF": how every front end labels a finding.
std::string action_label(Action action);

// A short human description of one remediation step.
std::string describe_remediation(const RemediationOp& op);

}  // namespace launchguard
