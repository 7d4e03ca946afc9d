// The only symbols spank_launchguard_prolog.so exports: node checks in the
// job prolog (root, once per node per job). It is a plugin of its own so that
// sites pay Slurm's per-job prolog process only when they want node findings
// to drain nodes (docs/performance.md has the measured cost).
extern "C" {
#include <slurm/spank.h>
}

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
    return launchguard::slurm::guarded_hook("job_prolog", ac, av, [sp](const launchguard::slurm::PluginConfig& config) {
        return launchguard::slurm::run_job_prolog(sp, config);
    });
}
