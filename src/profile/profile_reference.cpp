// What a profile argument names, from its text alone. A file of its own: the
// small Slurm plugins call is_compiled_profile_reference() in srun and
// slurmstepd, and an object file that also held the profile readers would
// bring the rule registry, Boost.JSON and their static initialisers into
// every launch (slurm-plugin/CMakeLists.txt, docs/performance.md).
#include "profile/profile.h"
#include "profile/profile_source.h"

namespace launchguard {

bool looks_like_profile_path(std::string_view s) {
    return s.find('/') != std::string_view::npos || s.ends_with(".yaml") || s.ends_with(".yml") ||
           is_json_profile_path(s);
}

bool is_json_profile_path(std::string_view path) { return path.ends_with(".json"); }

bool is_compiled_profile_reference(std::string_view name_or_path) {
    return !looks_like_profile_path(name_or_path) || is_json_profile_path(name_or_path);
}

}  // namespace launchguard
