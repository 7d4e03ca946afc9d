// The rule catalog rendered from the code's own rule list: `launchguard rules`
// and docs/rules.md (a test keeps the committed file equal to this output).
#pragma once

#include <boost/json/value.hpp>
#include <string>

#include "rules/rule.h"

namespace launchguard {

boost::json::value rule_to_json(const RuleInfo& info);
std::string render_rule_table(bool color);
std::string render_rule_explanation(const RuleInfo& info);
std::string render_rules_markdown();

}  // namespace launchguard
