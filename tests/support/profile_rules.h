// What the profile readers are given in the tests: any well-formed rule id is
// known, and the real rules' parameters may be set (read when first used: the
// rules are not all constructed before main).
#pragma once

#include <string>

#include "profile/profile.h"
#include "rules/rule.h"

namespace launchguard::testing {

inline const ProfileRules& any_rule() {
    static const ProfileRules rules{.known_rule = [](const std::string&) { return true; },
                                    .parameters = all_profile_parameters()};
    return rules;
}

}  // namespace launchguard::testing
