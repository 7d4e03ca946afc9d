// Profiles as the CLI and the webhook load them: embedded YAML by name, or a
// file, YAML or its compiled JSON form, both through the YAML reader.
#include "engine/profile_loader.h"

#include "profile/embedded_profiles.h"
#include "profile/profile_source.h"

namespace launchguard {

Result<Profile> parse_profile(std::string_view yaml, std::string origin) {
    return parse_profile_with(yaml, std::move(origin), registry_profile_rules());
}

Result<Profile> load_profile(std::string_view name_or_path) {
    if (!looks_like_profile_path(name_or_path)) {
        const EmbeddedProfile* embedded = find_embedded_profile(embedded_profiles(), name_or_path);
        if (embedded == nullptr) return unknown_profile_name(name_or_path, embedded_profiles());
        return parse_profile(embedded->text, "embedded:" + std::string(embedded->name));
    }
    std::string path(name_or_path);
    auto text = read_profile_file(path);
    if (!text) return text.error();
    // A .json file too goes through the YAML reader (JSON is YAML): it names
    // lines, and it refuses a repeated key, which Boost.JSON keeps the last of.
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
