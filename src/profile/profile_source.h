// What the two profile loaders share: the YAML one (engine/profile_loader.cpp, the
// CLI and the webhook) and the compiled one (engine/compiled_profile_loader.cpp, the Slurm
// task checks). Defined in profile.cpp, which needs no YAML, and the path
// tests in profile_reference.cpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "profile/embedded_profiles.h"
#include "profile/profile.h"
#include "util/error.h"

namespace launchguard {

// A path rather than the name of an embedded profile.
bool looks_like_profile_path(std::string_view name_or_path);
// A path to the compiled (JSON) form.
bool is_json_profile_path(std::string_view path);
// The file's text, within kMaxProfileBytes; errors name the file.
Result<std::string> read_profile_file(const std::string& path);
// The profile called `name` in a table of embedded ones (YAML or compiled),
// or null.
const EmbeddedProfile* find_embedded_profile(const std::vector<EmbeddedProfile>& table, std::string_view name);
// "no profile named 'x' (embedded profiles: a, b; or give a path ...)",
// listing the table.
Error unknown_profile_name(std::string_view name, const std::vector<EmbeddedProfile>& table);

}  // namespace launchguard
