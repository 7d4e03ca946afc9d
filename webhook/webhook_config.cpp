#include "webhook_config.h"

#include <yaml-cpp/yaml.h>

#include "engine/profile_loader.h"
#include "profile/profile_schema.h"
#include "profile/yaml_node.h"
#include "util/input_file.h"
#include "util/yaml_guard.h"

#include <utility>

namespace launchguard::webhook {
namespace {

Error config_error(const std::string& path, const YAML::Node& node, const std::string& field, std::string message) {
    Error e = make_file_error(path, node.IsDefined() ? node.Mark().line + 1 : 0, std::move(message));
    e.field = field;
    return e;
}

// A repeated key is refused as in profiles: YAML keeps both and lookups
// answer with the first, so `mode: warn` then `mode: enforce` served warn.
Status reject_duplicate_keys(const std::string& path, const YAML::Node& map, const std::string& field) {
    try {
        profile_schema::reject_duplicate_keys(YamlNode(map).entries(), field);
    } catch (const profile_schema::SchemaError& e) {
        return e.in(path);
    }
    return Done{};
}

Result<Mode> parse_site_mode(const std::string& path, const YAML::Node& node, const std::string& field) {
    auto mode = node.IsScalar() ? parse_mode(node.Scalar()) : std::nullopt;
    if (!mode || *mode == Mode::off) return config_error(path, node, field, "expected enforce, patch or warn");
    return *mode;
}

Status add_profile(WebhookConfig& config, const std::string& name_or_path, const std::string& origin) {
    auto profile = load_profile(name_or_path);
    if (!profile) {
        Error e = profile.error();
        if (e.message.find(origin) == std::string::npos) e.message = origin + ": " + e.message;
        return e;
    }
    config.profiles.insert_or_assign(profile->name, std::move(profile).value());
    return Done{};
}

Result<bool> parse_bool(const std::string& path, const YAML::Node& node, const std::string& field) {
    if (!node.IsScalar() || (node.Scalar() != "true" && node.Scalar() != "false"))
        return config_error(path, node, field, "expected true or false");
    return node.Scalar() == "true";
}

Result<GateConfig> parse_gate(const std::string& path, const YAML::Node& node) {
    if (!node.IsMap())
        return config_error(path, node, "gate", "expected a mapping {enabled, image, onError, allowOptOut}");
    if (auto unique = reject_duplicate_keys(path, node, "gate"); !unique) return unique.error();
    GateConfig gate;
    gate.enabled = true;
    for (const auto& entry : node) {
        const std::string key = entry.first.as<std::string>("");
        if (key != "enabled" && key != "image" && key != "onError" && key != "allowOptOut") {
            return config_error(path, entry.first, "gate." + key,
                                "unknown key (keys: enabled, image, onError, allowOptOut)");
        }
    }
    for (const auto& [key, target] : {std::pair<const char*, bool*>{"enabled", &gate.enabled},
                                      std::pair<const char*, bool*>{"allowOptOut", &gate.allow_opt_out}}) {
        if (const YAML::Node value = node[key]) {
            auto parsed = parse_bool(path, value, std::string("gate.") + key);
            if (!parsed) return parsed.error();
            *target = *parsed;
        }
    }
    if (const YAML::Node policy = node["onError"]) {
        auto parsed = policy.IsScalar() ? kubernetes::parse_gate_on_error(policy.Scalar()) : std::nullopt;
        if (!parsed) return config_error(path, policy, "gate.onError", "expected allow or block");
        gate.on_error = *parsed;
    }
    if (const YAML::Node image = node["image"]) {
        if (!image.IsScalar()) return config_error(path, image, "gate.image", "expected an image reference");
        gate.image = image.Scalar();
        if (gate.image.find_first_of(" \t\r\n") != std::string::npos)
            return config_error(path, image, "gate.image", "an image reference has no white space");
    }
    if (gate.enabled && gate.image.empty()) {
        return config_error(path, node["image"].IsDefined() ? node["image"] : node, "gate.image",
                            "required while gate.enabled is true: the image that holds /usr/bin/launchguard-gate "
                            "(the chart's own image)");
    }
    return gate;
}

}  // namespace

Result<WebhookConfig> default_webhook_config(const std::string& profile, Mode mode) {
    WebhookConfig config;
    config.modes.site_mode = mode;
    auto added = add_profile(config, profile, "--profile " + profile);
    if (!added) return added.error();
    config.default_profile = config.profiles.begin()->first;
    return config;
}

Result<WebhookConfig> load_webhook_config(const std::string& path) {
    auto text = read_text_file(path);
    if (!text) return text.error();
    if (auto guarded = check_yaml_terminates(*text, path); !guarded) return guarded.error();
    YAML::Node root;
    try {
        root = YAML::Load(*text);
    } catch (const YAML::Exception& e) {
        return yaml_exception_error(e, path, "not valid YAML");
    }
    if (auto bounded = check_yaml_expansion(std::span(&root, 1), path); !bounded) return bounded.error();
    if (!root.IsMap()) return make_file_error(path, 0, "expected a mapping at the top");
    if (auto unique = reject_duplicate_keys(path, root, ""); !unique) return unique.error();

    WebhookConfig config;
    for (const auto& entry : root) {
        const std::string key = entry.first.as<std::string>("");
        if (key != "mode" && key != "defaultProfile" && key != "profiles" && key != "selection" && key != "userModes" &&
            key != "userProfiles" && key != "gate") {
            return config_error(
                path, entry.first, key,
                "unknown key (keys: mode, defaultProfile, profiles, selection, userModes, userProfiles, gate)");
        }
    }
    if (root["mode"]) {
        auto mode = parse_site_mode(path, root["mode"], "mode");
        if (!mode) return mode.error();
        config.modes.site_mode = *mode;
    }
    const std::string default_name = root["defaultProfile"] ? root["defaultProfile"].as<std::string>("") : "default";
    if (default_name.empty())
        return config_error(path, root["defaultProfile"], "defaultProfile", "expected a profile name or path");
    if (auto added = add_profile(config, default_name, path + ": defaultProfile"); !added) return added.error();
    // The name the default profile declares, which may differ from its file name.
    config.default_profile.clear();
    for (const auto& [name, profile] : config.profiles) config.default_profile = name;

    if (const YAML::Node list = root["profiles"]) {
        if (!list.IsSequence())
            return config_error(path, list, "profiles", "expected a list of profile names or paths");
        for (std::size_t i = 0; i < list.size(); ++i) {
            if (!list[i].IsScalar())
                return config_error(path, list[i], "profiles[" + std::to_string(i) + "]", "expected a name or path");
            auto added = add_profile(config, list[i].Scalar(), path + ": profiles[" + std::to_string(i) + "]");
            if (!added) return added.error();
        }
    }
    if (const YAML::Node rules = root["selection"]) {
        if (!rules.IsSequence()) return config_error(path, rules, "selection", "expected a list of {match, profile}");
        for (std::size_t i = 0; i < rules.size(); ++i) {
            const std::string field = "selection[" + std::to_string(i) + "]";
            const YAML::Node rule = rules[i];
            if (!rule.IsMap() || !rule["match"] || !rule["match"].IsMap() || !rule["profile"] ||
                !rule["profile"].IsScalar()) {
                return config_error(path, rule, field, "expected {match: {LABEL: VALUE, ...}, profile: NAME}");
            }
            if (auto unique = reject_duplicate_keys(path, rule, field); !unique) return unique.error();
            if (auto unique = reject_duplicate_keys(path, rule["match"], field + ".match"); !unique)
                return unique.error();
            SelectionRule selection;
            for (const auto& label : rule["match"]) {
                if (!label.second.IsScalar())
                    return config_error(path, label.second, field + ".match", "expected a label value");
                selection.match.emplace(label.first.as<std::string>(""), label.second.Scalar());
            }
            if (selection.match.empty())
                return config_error(path, rule["match"], field + ".match", "expected at least one label");
            selection.profile = rule["profile"].Scalar();
            if (!config.profiles.contains(selection.profile)) {
                return config_error(path, rule["profile"], field + ".profile",
                                    "profile '" + selection.profile + "' is not loaded (add it to profiles)");
            }
            config.selection.push_back(std::move(selection));
        }
    }
    if (const YAML::Node modes = root["userModes"]) {
        if (!modes.IsSequence()) return config_error(path, modes, "userModes", "expected a list of modes");
        for (std::size_t i = 0; i < modes.size(); ++i) {
            auto mode = modes[i].IsScalar() ? parse_mode(modes[i].Scalar()) : std::nullopt;
            if (!mode)
                return config_error(path, modes[i], "userModes[" + std::to_string(i) + "]",
                                    "expected enforce, patch, warn or off");
            config.modes.allowed.push_back(*mode);
        }
    }
    if (const YAML::Node user_profiles = root["userProfiles"]) {
        auto parsed = parse_bool(path, user_profiles, "userProfiles");
        if (!parsed) return parsed.error();
        config.user_profiles = *parsed;
    }
    if (const YAML::Node gate = root["gate"]) {
        auto parsed = parse_gate(path, gate);
        if (!parsed) return parsed.error();
        config.gate = std::move(parsed).value();
    }
    return config;
}

Choice choose(const WebhookConfig& config, const std::map<std::string, std::string>& node_labels,
              const std::map<std::string, std::string>& annotations) {
    Choice choice;
    choice.mode = config.modes.site_mode;
    choice.profile = &config.profiles.at(config.default_profile);
    choice.reason = "default profile";
    for (const auto& rule : config.selection) {
        bool matches = true;
        for (const auto& [label, value] : rule.match) {
            auto found = node_labels.find(label);
            matches = matches && found != node_labels.end() && found->second == value;
        }
        if (!matches) continue;
        choice.profile = &config.profiles.at(rule.profile);
        choice.reason = "selection";
        for (const auto& [label, value] : rule.match) choice.reason += " " + label + "=" + value;
        break;
    }
    if (auto requested = annotations.find(kProfileAnnotation); requested != annotations.end()) {
        auto found = config.profiles.find(requested->second);
        if (!config.user_profiles) {
            choice.refusal = std::string(kProfileAnnotation) + " is not honoured on this cluster";
        } else if (found == config.profiles.end()) {
            choice.refusal =
                std::string(kProfileAnnotation) + "=" + requested->second + " names no profile of this cluster";
        } else {
            choice.profile = &found->second;
            choice.reason = std::string("annotation ") + kProfileAnnotation;
        }
    }
    if (auto requested = annotations.find(kModeAnnotation); requested != annotations.end()) {
        auto mode = parse_mode(requested->second);
        if (!mode) {
            choice.refusal =
                std::string(kModeAnnotation) + "=" + requested->second + ": expected enforce, patch, warn or off";
        } else if (!config.modes.may_choose(*mode)) {
            choice.refusal = std::string(kModeAnnotation) + "=" + requested->second +
                             " is not allowed on this cluster (allowed: " + config.modes.describe_allowed() + ")";
        } else {
            choice.mode = *mode;
        }
    }
    choice.gate = config.gate.enabled && choice.mode != Mode::off;
    if (auto requested = annotations.find(kGateAnnotation); requested != annotations.end() && choice.gate) {
        if (requested->second == "on") {
            // The default, said explicitly.
        } else if (requested->second != "off") {
            choice.gate_warning = std::string(kGateAnnotation) + "=" + requested->second +
                                  ": expected off (or on); the launch gate is added";
        } else if (!config.gate.allow_opt_out) {
            choice.gate_warning = std::string(kGateAnnotation) +
                                  "=off is not allowed on this cluster (gate.allowOptOut is false): the gate is added";
        } else {
            choice.gate = false;
            choice.gate_opted_out = true;
        }
    }
    return choice;
}

}  // namespace launchguard::webhook
