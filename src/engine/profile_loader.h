// Profiles as the front ends load them: parsed, and held against the rule
// registry (a `rules:` key must name a rule that exists). The registry sits
// above the profile layer, so the loaders that consult it live here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "profile/profile.h"
#include "util/error.h"

namespace launchguard {

// Whether the rule registry has a rule with this id.
bool is_known_rule_id(const std::string& id);
// The registry as the profile readers need it: its rule ids and the
// parameters its rules declare.
const ProfileRules& registry_profile_rules();

// Parses YAML text; `origin` names the file in every error.
Result<Profile> parse_profile(std::string_view yaml, std::string origin);
// The compiled (JSON) form; see parse_profile_json_with.
Result<Profile> parse_profile_json(std::string_view json, std::string origin);

// A NAME of an embedded profile, or a path to a YAML file or a compiled .json
// (JSON is YAML, so both go through the YAML reader).
Result<Profile> load_profile(std::string_view name_or_path);
// The same without YAML (engine/compiled_profile_loader.cpp): an embedded NAME
// from the profiles compiled at build time, or a path to a compiled .json
// file. Only what links the compiled profiles (launchguard_compiled_profiles)
// can call it.
Result<Profile> load_compiled_profile(std::string_view name_or_path);
// The profile used when nothing is configured.
const Profile& default_profile();
// Names of embedded profiles.
std::vector<std::string> embedded_profile_names();

}  // namespace launchguard
