// The only symbols spank_launchguard_prolog.so exports: node checks in the
// job prolog (root, once per node per job). It is a plugin of its own so that
// sites pay Slurm's per-job prolog process only when they want node findings
// to drain nodes (docs/performance.md has the measured cost).
//
// srun, sbatch and slurmstepd load it too, with every plugin of the
// plugstack, and never call it: it is small, and only the prolog process
// loads the checks, spank_launchguard_core.so (core_loader.h).
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
