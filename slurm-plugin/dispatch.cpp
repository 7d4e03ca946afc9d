// The only symbols spank_launchguard.so exports (see spank_launchguard.lds):
// the task checks. Node checks live in spank_launchguard_prolog.so
// (prolog_dispatch.cpp), because Slurm spawns a prolog process for every job
// on every node as soon as any plugin defines slurm_spank_job_prolog.
extern "C" {
#include <slurm/spank.h>
}

#include <exception>

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

using launchguard::slurm::guarded_hook;
using launchguard::slurm::PluginConfig;

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av) {
    using namespace launchguard::slurm;
    return guarded_hook("init", ac, av, [sp](const PluginConfig& config) {
        remember_config(config);
        switch (spank_context()) {
            case S_CTX_LOCAL:
            case S_CTX_ALLOCATOR:
            case S_CTX_REMOTE:
                return register_user_option(sp);
            case S_CTX_SLURMD:
                // Once per slurmd start, as root: discover the node for every
                // task to come. A failure only costs tasks a live discovery.
                if (config.mode != launchguard::Mode::off && !config.hwloc_xml) {
                    auto cached = refresh_topology_cache(config);
                    if (!cached) log_error("topology cache: " + cached.error().to_string());
                }
                return 0;
            default:
                return 0;
        }
    });
}

// The two recording hooks never fail: a failing user_init drains the node
// in a batch step. A broken plugstack line fails the task in task_init.
extern "C" int slurm_spank_user_init(spank_t sp, int ac, char** av) {
    return launchguard::slurm::recording_hook("user_init", ac, av, [sp](const PluginConfig& config) {
        launchguard::slurm::capture_host_side(sp, config);
    });
}

extern "C" int slurm_spank_task_init_privileged(spank_t sp, int ac, char** av) {
    (void)sp;
    return launchguard::slurm::recording_hook("task_init_privileged", ac, av, [](const PluginConfig&) {
        launchguard::slurm::remember_forked_namespace();
    });
}

extern "C" int slurm_spank_task_init(spank_t sp, int ac, char** av) {
    return guarded_hook("task_init", ac, av, [sp](const PluginConfig& config) {
        return launchguard::slurm::run_task_init(sp, config);
    });
}
