// The only symbols spank_launchguard.so exports (see spank_launchguard.lds).
// Each hook parses the plugstack arguments, dispatches to the file for its
// context, and catches everything: no C++ exception may cross into Slurm.
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
LAUNCHGUARD_EXPORT int slurm_spank_task_init(spank_t sp, int ac, char** av);
LAUNCHGUARD_EXPORT int slurm_spank_job_prolog(spank_t sp, int ac, char** av);
}

namespace {

using namespace launchguard::slurm;

// Runs body with the parsed configuration. A malformed plugstack line is an
// error everywhere except in slurmd itself, where failing init would stop
// slurmd from starting (SLURM.md §1.1); there it is logged and skipped.
template <typename Body>
int guarded(const char* hook, int ac, char** av, Body body) {
    try {
        auto config = parse_plugin_args(plugin_args(ac, av));
        if (!config) {
            log_error(std::string("plugstack.conf: ") + config.error().to_string());
            return spank_context() == S_CTX_SLURMD ? 0 : -1;
        }
        return body(config.value());
    } catch (const std::exception& e) {
        log_error(std::string(hook) + ": internal error: " + e.what());
    } catch (...) {
        log_error(std::string(hook) + ": internal error");
    }
    // Nothing is known about the configuration here; let the job run.
    return 0;
}

}  // namespace

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av) {
    return guarded("init", ac, av, [sp](const PluginConfig& config) {
        remember_config(config);
        switch (spank_context()) {
            case S_CTX_LOCAL:
            case S_CTX_ALLOCATOR:
            case S_CTX_REMOTE:
                return register_user_option(sp);
            default:
                return 0;
        }
    });
}

extern "C" int slurm_spank_task_init(spank_t sp, int ac, char** av) {
    return guarded("task_init", ac, av, [sp](const PluginConfig& config) { return run_task_init(sp, config); });
}

extern "C" int slurm_spank_job_prolog(spank_t sp, int ac, char** av) {
    return guarded("job_prolog", ac, av, [sp](const PluginConfig& config) { return run_job_prolog(sp, config); });
}
