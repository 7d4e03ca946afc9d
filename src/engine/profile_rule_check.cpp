// The profile readers' link to the rule registry, and the compiled (JSON)
// profile reader, in an object of their own: the Slurm task checks
// (spank_launchguard_core.so) read compiled profiles and link no YAML, and an
// archive member that also held the YAML reader would pull yaml-cpp in.
#include "engine/profile_loader.h"
#include "rules/rule.h"

namespace launchguard {

bool is_known_rule_id(const std::string& id) { return find_rule(id) != nullptr; }

const ProfileRules& registry_profile_rules() {
    static const ProfileRules rules{.known_rule = is_known_rule_id, .parameters = all_profile_parameters()};
    return rules;
}

Result<Profile> parse_profile_json(std::string_view json, std::string origin) {
    return parse_profile_json_with(json, std::move(origin), registry_profile_rules());
}

}  // namespace launchguard
