// Which rules one evaluation runs. The engine filters with this, and so do
// front ends that report on every rule and not only on those that fired
// (`launchguard node-check --metrics-file` writes a gauge per rule), so the
// two never disagree about what was checked.
#pragma once

#include <string>
#include <vector>

#include "engine/engine.h"
#include "rules/rule.h"

namespace launchguard {

bool rule_is_selected(const RuleInfo& info, const Profile& profile, const EvaluationOptions& options);

// The ids of the rules evaluate() runs under these options, in catalog order.
std::vector<std::string> selected_rule_ids(const Profile& profile, const EvaluationOptions& options);

}  // namespace launchguard
