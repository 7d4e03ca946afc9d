// The only symbols spank_launchguard.so exports (see spank_launchguard.lds):
// the task checks. Node checks live in spank_launchguard_prolog.so
// (prolog_dispatch.cpp), because Slurm spawns a prolog process for every job
// on every node as soon as any plugin defines slurm_spank_job_prolog.
//
// srun, sbatch and salloc load this plugin on every launch, so it carries
// only what they use: the plugstack arguments and --launchguard, with the C++
// runtime linked in and hidden. In slurmstepd and slurmd it loads
// spank_launchguard_core.so (core_loader.h) and hands it the hooks.
extern "C" {
#include <slurm/spank.h>
}

#include "core_loader.h"
#include "spank_glue.h"

// The library is built with hidden visibility; these are the exceptions.
#define LAUNCHGUARD_EXPORT __attribute__((visibility("default")))

// C linkage and external definitions, or Slurm's dlsym() cannot find them
// (spank.h declares them outside its extern "C" block, SLURM.md §1.9).
extern "C" {
LAUNCHGUARD_EXPORT extern const char plugin_name[] = "launchguard";
LAUNCHGUARD_EXPORT extern const char plugin_type[] = "spank";
LAUNCHGUARD_EXPORT extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
LAUNCHGUARD_EXPORT extern const unsigned int spank_plugin_version = 1;

LAUNCHGUARD_EXPORT int slurm_spank_init(spank_t sp, int ac, char** av);
LAUNCHGUARD_EXPORT int slurm_spank_user_init(spank_t sp, int ac, char** av);
LAUNCHGUARD_EXPORT int slurm_spank_task_init_privileged(spank_t sp, int ac, char** av);
LAUNCHGUARD_EXPORT int slurm_spank_task_init(spank_t sp, int ac, char** av);
}

namespace launchguard::slurm {
namespace {

// In slurmstepd the core keeps the requested mode for task_init; in srun
// and sbatch, and when the core is missing, this plugin judges the value.
int forward_user_option(int val, const char* optarg, int remote) {
    if (const launchguard_core* core = loaded_core()) return core->user_option(val, optarg, remote);
    return on_user_option(val, optarg, remote);
}

struct spank_option g_option = {
    const_cast<char*>("launchguard"),
    const_cast<char*>("MODE"),
    const_cast<char*>("launchguard mode for this job: enforce, patch, warn or off (the site decides which are allowed)"),
    1,
    0,
    forward_user_option,
};

int register_user_option(spank_t sp) {
    spank_err_t rc = spank_option_register(sp, &g_option);
    if (rc != ESPANK_SUCCESS) {
        log_error(std::string("cannot register --launchguard: ") + spank_strerror(rc));
        return -1;
    }
    return 0;
}

// task_init without its checks: the on-error policy decides, as when the
// profile cannot be loaded. The slurmd log already has the reason from init.
int report_missing_core(spank_t sp, const PluginConfig& config) {
    const bool off = config.mode == Mode::off && requested_user_mode().value_or(Mode::off) == Mode::off;
    if (off) return 0;
    const std::string reason =
        core_load_error().empty() ? std::string("the task checks were not loaded") : core_load_error();
    log_error(reason);
    if (local_task_id(sp).value_or(0) == 0) tell_user(reason);
    return config.on_error == OnError::block ? -1 : 0;
}

}  // namespace
}  // namespace launchguard::slurm

using launchguard::slurm::guarded_hook;
using launchguard::slurm::loaded_core;
using launchguard::slurm::PluginConfig;

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av) {
    using namespace launchguard::slurm;
    return guarded_hook("init", ac, av, [sp, ac, av](const PluginConfig& config) {
        remember_config(config);
        const spank_context_t context = spank_context();
        if (context == S_CTX_LOCAL || context == S_CTX_ALLOCATOR || context == S_CTX_REMOTE) {
            if (register_user_option(sp) != 0) return -1;
        }
        if (context != S_CTX_REMOTE && context != S_CTX_SLURMD) return 0;
        const launchguard_core* core = load_core();
        if (core == nullptr) {
            // Never fail here: in slurmd that would stop slurmd, in
            // slurmstepd the user would see only "plugin stack" errors.
            log_error(core_load_error());
            return 0;
        }
        return core->init(sp, ac, av);
    });
}

extern "C" int slurm_spank_user_init(spank_t sp, int ac, char** av) {
    const launchguard_core* core = loaded_core();
    return core != nullptr ? core->user_init(sp, ac, av) : 0;
}

extern "C" int slurm_spank_task_init_privileged(spank_t sp, int ac, char** av) {
    const launchguard_core* core = loaded_core();
    return core != nullptr ? core->task_init_privileged(sp, ac, av) : 0;
}

extern "C" int slurm_spank_task_init(spank_t sp, int ac, char** av) {
    if (const launchguard_core* core = loaded_core()) return core->task_init(sp, ac, av);
    return guarded_hook("task_init", ac, av, [sp](const PluginConfig& config) {
        return launchguard::slurm::report_missing_core(sp, config);
    });
}
