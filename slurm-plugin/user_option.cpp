// The user option --launchguard=enforce|patch|warn|off (srun, sbatch, salloc).
// srun validates it locally (so a refused mode fails at submission with
// Slurm's "Invalid --launchguard argument"); slurmstepd receives it through
// the launch message or _SLURM_SPANK_OPTION_launchguard_launchguard and
// checks it again, because the site policy is enforced where the task runs.
#include "spank_glue.h"

namespace launchguard::slurm {
namespace {

int on_launchguard_option(int /*val*/, const char* optarg, int remote) {
    auto mode = parse_mode(optarg == nullptr ? "" : optarg);
    if (!mode) {
        log_error(std::string("--launchguard=") + (optarg ? optarg : "") +
                  ": expected enforce, patch, warn or off");
        return -1;
    }
    const PluginConfig* config = remembered_config();
    if (remote == 0 && config != nullptr && !user_may_choose(*config, *mode)) {
        log_error("--launchguard=" + std::string(optarg) + " is not allowed on this cluster (allowed: " +
                  allowed_user_modes(*config) + ")");
        return -1;
    }
    set_requested_user_mode(*mode);
    return 0;
}

struct spank_option g_option = {
    const_cast<char*>("launchguard"),
    const_cast<char*>("MODE"),
    const_cast<char*>("launchguard mode for this job: enforce, patch, warn or off (the site decides which are allowed)"),
    1,
    0,
    on_launchguard_option,
};

}  // namespace

int register_user_option(spank_t sp) {
    spank_err_t rc = spank_option_register(sp, &g_option);
    if (rc != ESPANK_SUCCESS) {
        log_error(std::string("cannot register --launchguard: ") + spank_strerror(rc));
        return -1;
    }
    return 0;
}

}  // namespace launchguard::slurm
