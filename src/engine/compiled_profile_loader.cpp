// Profiles without YAML, for the Slurm task checks
// (spank_launchguard_core.so links no YAML library and no shared C++
// runtime: docs/performance.md). The embedded profiles come compiled at
// build time (compiled_profiles.h, written by `launchguard profile compile`);
// a file must be the compiled form too.
#include "engine/profile_loader.h"
#include "profile/compiled_profiles.h"
#include "profile/profile_source.h"

namespace launchguard {

Result<Profile> load_compiled_profile(std::string_view name_or_path) {
    if (!looks_like_profile_path(name_or_path)) {
        const EmbeddedProfile* compiled = find_embedded_profile(compiled_profiles(), name_or_path);
        if (compiled == nullptr) return unknown_profile_name(name_or_path, compiled_profiles());
        return parse_profile_json(compiled->text, "embedded:" + std::string(compiled->name));
    }
    std::string path(name_or_path);
    if (!is_json_profile_path(path)) {
        return make_file_error(path, 0,
                               "cannot read a YAML profile here: give its compiled form (launchguard profile "
                               "compile FILE -o FILE.json)");
    }
    auto text = read_profile_file(path);
    if (!text) return text.error();
    return parse_profile_json(*text, path);
}

}  // namespace launchguard
