// spank_launchguard_prolog.so's exports: node checks in the job prolog (root,
// once per node per job), a plugin of its own so that only sites that want
// them pay Slurm's per-job prolog process. Small, like spank_launchguard.so:
// only the prolog process loads the core.
extern "C" {
#include <slurm/spank.h>
}

#include "core_loader.h"
#include "spank_glue.h"

#define LAUNCHGUARD_EXPORT __attribute__((visibility("default")))

extern "C" {
LAUNCHGUARD_EXPORT extern const char plugin_name[] = "launchguard_prolog";
LAUNCHGUARD_EXPORT extern const char plugin_type[] = "spank";
LAUNCHGUARD_EXPORT extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
LAUNCHGUARD_EXPORT extern const unsigned int spank_plugin_version = 1;

LAUNCHGUARD_EXPORT int slurm_spank_job_prolog(spank_t sp, int ac, char** av);
}

extern "C" int slurm_spank_job_prolog(spank_t sp, int ac, char** av) {
    using namespace launchguard::slurm;
    return guarded_hook("job_prolog", ac, av, [sp, ac, av](const PluginConfig& config) {
        remember_config(config);  // which core to load: the profile decides
        const launchguard_core* core = load_core();
        if (core == nullptr) {
            // As when the profile cannot be loaded: on-error decides whether
            // the prolog fails (and Slurm drains the node).
            log_error("job_prolog: " + core_load_error());
            return config.on_error == OnError::block ? -1 : 0;
        }
        return core->job_prolog(sp, ac, av);
    });
}
