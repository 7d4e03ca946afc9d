#include "profile/profile.h"

#include "profile/profile_source.h"
#include "util/input_file.h"

namespace launchguard {

Action Profile::action_for(std::string_view rule, Action fallback) const {
    auto it = actions.find(rule);
    return it == actions.end() ? fallback : it->second;
}

bool Profile::operator==(const Profile& other) const {
    return name == other.name && description == other.description && node == other.node && topology == other.topology &&
           nccl == other.nccl && parameters == other.parameters && actions == other.actions;
}

const ParameterValue* Profile::parameter(std::string_view key) const {
    auto it = parameters.find(key);
    return it == parameters.end() ? nullptr : &it->second;
}

Result<std::string> read_profile_file(const std::string& path) {
    auto text = read_text_file(path, kMaxProfileBytes);
    if (!text) return make_file_error(path, 0, "cannot load profile: " + text.error().message);
    return text;
}

const EmbeddedProfile* find_embedded_profile(const std::vector<EmbeddedProfile>& table, std::string_view name) {
    for (const auto& profile : table) {
        if (profile.name == name) return &profile;
    }
    return nullptr;
}

Error unknown_profile_name(std::string_view name, const std::vector<EmbeddedProfile>& table) {
    std::string listed;
    for (const auto& profile : table) listed += (listed.empty() ? "" : ", ") + std::string(profile.name);
    return make_error("no profile named '" + std::string(name) + "' (embedded profiles: " + listed +
                      "; or give a path to a .yaml file)");
}

}  // namespace launchguard
