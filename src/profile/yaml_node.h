// profile_schema.h's view of a yaml-cpp node, for the profile reader and for
// the other YAML files that share its checks (reject_duplicate_keys: the
// webhook's --config).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace launchguard {

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

}  // namespace launchguard
