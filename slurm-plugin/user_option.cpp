// --launchguard=enforce|patch|warn|off: judged at submission (srun, sbatch,
// salloc: a refused mode fails there) and again in slurmstepd, where the site
// policy is enforced. dispatch.cpp registers it.
#include <exception>

#include "spank_glue.h"

namespace launchguard::slurm {
namespace {

int judge_user_option(int /*val*/, const char* optarg, int remote) {
    auto mode = parse_mode(optarg == nullptr ? "" : optarg);
    if (!mode) {
        log_error(std::string("--launchguard=") + (optarg ? optarg : "") + ": expected enforce, patch, warn or off");
        return -1;
    }
    const PluginConfig* config = remembered_config();
    if (remote == 0 && config != nullptr && !user_may_choose(*config, *mode)) {
        log_error("--launchguard=" + std::string(optarg) +
                  " is not allowed on this cluster (allowed: " + allowed_user_modes(*config) + ")");
        return -1;
    }
    set_requested_user_mode(*mode);
    return 0;
}

}  // namespace

std::optional<Mode> task_mode(spank_t sp, const PluginConfig& config, int& rc) {
    const auto requested = requested_user_mode();
    if (requested && !user_may_choose(config, *requested)) {
        if (local_task_id(sp).value_or(0) == 0)
            tell_user("--launchguard=" + std::string(to_string(*requested)) +
                      " is not allowed on this cluster (allowed: " + allowed_user_modes(config) + ")");
        rc = -1;
        return std::nullopt;
    }
    const Mode mode = requested.value_or(config.mode);
    rc = 0;
    if (mode == Mode::off) return std::nullopt;
    return mode;
}

int on_user_option(int val, const char* optarg, int remote) noexcept {
    try {
        return judge_user_option(val, optarg, remote);
    } catch (const std::exception& e) {
        log_error(std::string("--launchguard: internal error: ") + e.what());
    } catch (...) {
        log_error("--launchguard: internal error");
    }
    // Nothing is known about the value here; as guarded_hook, let the job run.
    return 0;
}

}  // namespace launchguard::slurm
