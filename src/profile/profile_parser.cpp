// Strict YAML reader for profiles: every key is known, every value has the
// expected type, and every error names the file, the line and the key. The
// schema itself is profile_schema.h, shared with the compiled JSON form.
#include <yaml-cpp/yaml.h>

#include "profile/profile.h"
#include "profile/profile_schema.h"
#include "util/yaml_guard.h"

namespace launchguard {
namespace {

using profile_schema::SchemaError;

// profile_schema.h's view of a yaml-cpp node.
class YamlNode {
public:
    YamlNode() = default;
    explicit YamlNode(YAML::Node node) : node_(std::move(node)), defined_(node_.IsDefined()) {}

    explicit operator bool() const { return defined_; }
    [[nodiscard]] bool is_null() const { return defined_ && node_.IsNull(); }
    [[nodiscard]] bool is_scalar() const { return defined_ && node_.IsScalar(); }
    [[nodiscard]] bool is_map() const { return defined_ && node_.IsMap(); }
    [[nodiscard]] bool is_sequence() const { return defined_ && node_.IsSequence(); }
    [[nodiscard]] std::string scalar() const { return defined_ && node_.IsScalar() ? node_.Scalar() : std::string(); }
    [[nodiscard]] int line() const { return defined_ && node_.Mark().line >= 0 ? node_.Mark().line + 1 : 0; }
    [[nodiscard]] std::size_t size() const { return node_.size(); }
    [[nodiscard]] YamlNode item(std::size_t i) const { return YamlNode(node_[i]); }
    [[nodiscard]] std::vector<std::pair<YamlNode, YamlNode>> entries() const {
        std::vector<std::pair<YamlNode, YamlNode>> out;
        for (const auto& entry : node_) out.emplace_back(YamlNode(entry.first), YamlNode(entry.second));
        return out;
    }

private:
    YAML::Node node_;
    bool defined_ = false;
};

}  // namespace

Result<Profile> parse_profile_with(std::string_view yaml, std::string origin, const KnownRuleCheck& known_rule) {
    // Embedded profiles are ours; a file may come from anyone.
    if (!origin.starts_with("embedded:")) {
        if (auto guarded = check_yaml_terminates(yaml, origin); !guarded) return guarded.error();
    }
    try {
        YAML::Node root = YAML::Load(std::string(yaml));
        if (!root.IsDefined() || root.IsNull()) return make_file_error(origin, 0, "profile is empty");
        if (auto bounded = check_yaml_expansion(std::span(&root, 1), origin); !bounded) return bounded.error();
        Profile profile = profile_schema::read_profile(YamlNode(root), known_rule);
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
