// The usual shape of a rule: a static RuleInfo next to a check function,
// with the profile parameters it reads declared beside them
// (profile/typed_parameter.h). Each family file defines its rules as
// `const TableRule` objects and registers them in rules/registry.cpp's
// explicit list.
#pragma once

#include "profile/typed_parameter.h"
#include "rules/rule.h"

namespace launchguard {

using RuleCheck = void (*)(const RuleInput&, RuleOutput&);

class TableRule final : public Rule {
public:
    constexpr TableRule(RuleInfo info, RuleCheck check) : info_(info), check_(check) {}
    [[nodiscard]] const RuleInfo& info() const override { return info_; }
    void evaluate(const RuleInput& in, RuleOutput& out) const override { check_(in, out); }

private:
    RuleInfo info_;
    RuleCheck check_;
};

}  // namespace launchguard
