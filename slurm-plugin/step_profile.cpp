#include "step_profile.h"

#include <optional>
#include <utility>

namespace launchguard::slurm {
namespace {

struct LoadedProfile {
    std::string name_or_path;
    Result<Profile> profile;
};

// Written by the hooks of one slurmstepd only, which Slurm calls one at a time.
std::optional<LoadedProfile> g_loaded;

}  // namespace

const Result<Profile>& step_profile(const std::string& name_or_path) {
    if (!g_loaded || g_loaded->name_or_path != name_or_path) {
        g_loaded.emplace(LoadedProfile{name_or_path, load_profile(name_or_path)});
    }
    return g_loaded->profile;
}

}  // namespace launchguard::slurm
