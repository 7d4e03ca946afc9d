#include "profile/profile.h"

#include "profile/embedded_profiles.h"
#include "rules/rule.h"
#include "util/input_file.h"

namespace launchguard {

Action Profile::action_for(std::string_view rule, Action fallback) const {
    auto it = actions.find(rule);
    return it == actions.end() ? fallback : it->second;
}

Result<Profile> parse_profile(std::string_view yaml, std::string origin) {
    return parse_profile_with(yaml, std::move(origin),
                              [](const std::string& id) { return find_rule(id) != nullptr; });
}

namespace {

bool looks_like_path(std::string_view s) {
    return s.find('/') != std::string_view::npos || s.ends_with(".yaml") || s.ends_with(".yml");
}

}  // namespace

Result<Profile> load_profile(std::string_view name_or_path) {
    if (!looks_like_path(name_or_path)) {
        for (const auto& embedded : embedded_profiles()) {
            if (embedded.name == name_or_path) {
                return parse_profile(embedded.yaml, "embedded:" + std::string(embedded.name));
            }
        }
        std::string names;
        for (const auto& n : embedded_profile_names()) names += (names.empty() ? "" : ", ") + n;
        return make_error("no profile named '" + std::string(name_or_path) + "' (embedded profiles: " + names +
                          "; or give a path to a .yaml file)");
    }
    std::string path(name_or_path);
    auto text = read_text_file(path, kMaxProfileBytes);
    if (!text) return make_file_error(path, 0, "cannot load profile: " + text.error().message);
    return parse_profile(*text, path);
}

const Profile& default_profile() {
    static const Profile profile = [] {
        auto loaded = load_profile("default");
        if (loaded) return loaded.value();
        // Unreachable with a correct build: tests parse every embedded profile.
        Profile fallback;
        fallback.name = "default";
        fallback.origin = "built-in fallback (" + loaded.error().to_string() + ")";
        return fallback;
    }();
    return profile;
}

std::vector<std::string> embedded_profile_names() {
    std::vector<std::string> names;
    for (const auto& p : embedded_profiles()) names.emplace_back(p.name);
    return names;
}

}  // namespace launchguard
