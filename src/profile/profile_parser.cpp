// Strict YAML reader for profiles: every key is known, every value has the
// expected type, and every error names the file, the line and the key. The
// schema itself is profile_schema.h, shared with the compiled JSON form.
#include <yaml-cpp/yaml.h>

#include "profile/profile.h"
#include "profile/profile_schema.h"
#include "profile/yaml_node.h"
#include "util/yaml_guard.h"

namespace launchguard {
namespace {

using profile_schema::SchemaError;

}  // namespace

Result<Profile> parse_profile_with(std::string_view yaml, std::string origin, const ProfileRules& rules) {
    // Embedded profiles are ours; a file may come from anyone.
    if (!origin.starts_with("embedded:")) {
        if (auto guarded = check_yaml_terminates(yaml, origin); !guarded) return guarded.error();
    }
    try {
        YAML::Node root = YAML::Load(std::string(yaml));
        if (!root.IsDefined() || root.IsNull()) return make_file_error(origin, 0, "profile is empty");
        if (auto bounded = check_yaml_expansion(std::span(&root, 1), origin); !bounded) return bounded.error();
        Profile profile = profile_schema::read_profile(YamlNode(root), rules);
        profile.origin = origin;
        return profile;
    } catch (const SchemaError& e) {
        return e.in(origin);
    } catch (const YAML::Exception& e) {
        return yaml_exception_error(e, origin, "invalid YAML");
    } catch (const std::exception& e) {
        return make_file_error(origin, 0, std::string("cannot read profile: ") + e.what());
    }
}

}  // namespace launchguard
