#include "step_profile.h"

#include <optional>
#include <utility>
#include "engine/profile_loader.h"

namespace launchguard::slurm {
namespace {

struct LoadedProfile {
    std::string name_or_path;
    Result<Profile> profile;
};

// Written by the hooks of one slurmstepd only, which Slurm calls one at a time.
std::optional<LoadedProfile> g_loaded;

// spank_launchguard_core.so reads no YAML (core_loader.cpp picks the build
// that can when the profile is a YAML file).
Result<Profile> read_profile(const std::string& name_or_path) {
#ifdef LAUNCHGUARD_CORE_READS_YAML
    return load_profile(name_or_path);
#else
    return load_compiled_profile(name_or_path);
#endif
}

}  // namespace

const Result<Profile>& step_profile(const std::string& name_or_path) {
    if (!g_loaded || g_loaded->name_or_path != name_or_path) {
        g_loaded.emplace(LoadedProfile{name_or_path, read_profile(name_or_path)});
    }
    return g_loaded->profile;
}

}  // namespace launchguard::slurm
