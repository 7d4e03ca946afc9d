/* The C interface between the small plugins and spank_launchguard_core.so
 * (core_loader.h). Each side has its own C++ runtime, so only C types cross
 * and every function catches everything on its own side. A change here is a
 * change of LAUNCHGUARD_CORE_ABI: a plugin refuses a core of another one. */
#pragma once

#include <slurm/spank.h>

#define LAUNCHGUARD_CORE_ABI 2
/* Two builds of the same checks: without YAML (embedded and compiled .json
 * profiles; no shared C++ runtime) and with it (a profile given as YAML). */
#define LAUNCHGUARD_CORE_FILE "spank_launchguard_core.so"
#define LAUNCHGUARD_CORE_YAML_FILE "spank_launchguard_core_yaml.so"
#define LAUNCHGUARD_CORE_ENTRY "launchguard_core_entry"

#ifdef __cplusplus
extern "C" {
#endif

struct launchguard_core {
    unsigned abi; /* LAUNCHGUARD_CORE_ABI; stays the first member in every version */
    /* slurm_spank_init in REMOTE and SLURMD context, after the plugin has
     * registered --launchguard (only the plugin can: Slurm ties options to
     * the plugin that registers them). */
    int (*init)(spank_t sp, int ac, char** av);
    /* The --launchguard callback, forwarded in REMOTE context. */
    int (*user_option)(int val, const char* optarg, int remote);
    int (*user_init)(spank_t sp, int ac, char** av);
    int (*task_init_privileged)(spank_t sp, int ac, char** av);
    int (*task_init)(spank_t sp, int ac, char** av);
    /* slurm_spank_job_prolog of spank_launchguard_prolog.so: the node checks. */
    int (*job_prolog)(spank_t sp, int ac, char** av);
    /* slurmstepd, on the thread that loaded the core, before init: reads what
     * every task of the step shares (the profile, the node's facts). It is
     * given the plugstack arguments only: it must not call Slurm. */
    void (*prepare_step)(int ac, char** av);
};

typedef const struct launchguard_core* (*launchguard_core_entry_fn)(void);

#ifdef __cplusplus
}
#endif
