// spank_launchguard.so's exports (spank_launchguard.lds): the task checks'
// hooks. srun, sbatch and salloc load it on every launch, so it carries only
// the plugstack arguments and --launchguard; slurmstepd and slurmd load the
// core (core_loader.h), and the first hook that needs it replays init and
// --launchguard. Node checks are in spank_launchguard_prolog.so.
extern "C" {
#include <slurm/spank.h>
}

#include <optional>
#include <string>

#include "core_loader.h"
#include "spank_glue.h"

// The library is built with hidden visibility; these are the exceptions.
#define LAUNCHGUARD_EXPORT __attribute__((visibility("default")))

// C linkage and external definitions, or Slurm's dlsym() cannot find them
// (slurm/spank.h declares them outside its extern "C" block; docs/design/
// SLURM_PLUGIN.md, "The C boundary").
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

// Whether the core has had init (and the option) handed to it, and the
// --launchguard value slurmstepd gave before that.
bool g_core_ready = false;
std::optional<std::string> g_pending_option;

// In slurmstepd the core keeps the requested mode for task_init; the value
// arrives right after init, while the core may still be loading, so it is
// judged here and handed over by ready_core(). In srun and sbatch, and when
// the core is missing, this plugin's judgement is the only one.
int forward_user_option(int val, const char* optarg, int remote) {
    if (g_core_ready && loaded_core() != nullptr) return loaded_core()->user_option(val, optarg, remote);
    const int rc = on_user_option(val, optarg, remote);
    if (rc == 0 && remote != 0 && optarg != nullptr) {
        try {
            g_pending_option = optarg;
        } catch (...) {
            log_error("--launchguard: internal error: the value could not be kept for the task checks");
        }
    }
    return rc;
}

// The core, ready for a hook: the first hook that needs it waits for the load
// and hands it what init and the option callback saw. Tasks forked after
// user_init inherit a ready core.
const launchguard_core* ready_core(spank_t sp, int ac, char** av) noexcept {
    if (g_core_ready) return loaded_core();
    g_core_ready = true;
    const launchguard_core* core = wait_for_core();
    try {
        if (core == nullptr) {
            log_error(core_load_error());
            return nullptr;
        }
        // init only fails on a plugstack line that this plugin's init refused already.
        if (core->init(sp, ac, av) != 0) log_error("the task checks refused the plugstack arguments");
    } catch (...) {
        // Only logging allocates here; the core itself catches everything.
    }
    if (core != nullptr && g_pending_option) core->user_option(0, g_pending_option->c_str(), 1);
    return core;
}

struct spank_option g_option = {
    const_cast<char*>("launchguard"),
    const_cast<char*>("MODE"),
    const_cast<char*>(
        "launchguard mode for this job: enforce, patch, warn or off (the site decides which are allowed)"),
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

// A site in mode=off, and a job that chose no mode with --launchguard: no
// check runs in this step, so slurmstepd and its tasks never load the core.
// Loading it costs on its own: where page faults are expensive, about half
// of what the plugin adds to a launch (docs/performance.md). The option
// arrives after init: a job that chose a mode has user_init load the core.
bool step_runs_no_checks() {
    const PluginConfig* config = remembered_config();
    return config != nullptr && config->mode == Mode::off && !requested_user_mode();
}

// task_init without its checks: on-error decides; the first task tells the user why.
int report_missing_core(spank_t sp, const PluginConfig& config) {
    const bool off = config.mode == Mode::off && requested_user_mode().value_or(Mode::off) == Mode::off;
    if (off) return 0;
    const std::string reason =
        core_load_error().empty() ? std::string("the task checks were not loaded") : core_load_error();
    if (local_task_id(sp).value_or(0) == 0) tell_user(reason);
    return config.on_error == OnError::block ? -1 : 0;
}

}  // namespace

// timing=1, in slurmstepd: what the loading thread took, and the wait for it.
void log_core_loading() noexcept {
    const PluginConfig* config = remembered_config();
    if (config == nullptr || !config->timing || core_loading_times().empty()) return;
    try {
        log_info("timing core loading thread: " + core_loading_times());
    } catch (...) {
    }
}

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
        if (context == S_CTX_REMOTE) {
            if (config.mode != launchguard::Mode::off) start_loading_core(ac, av);
            return 0;
        }
        if (context != S_CTX_SLURMD) return 0;
        // slurmd has no later hook to wait in: load and init now (the core
        // writes the topology cache). Never fail here: that would stop slurmd.
        ready_core(sp, ac, av);
        return 0;
    });
}

extern "C" int slurm_spank_user_init(spank_t sp, int ac, char** av) {
    using namespace launchguard::slurm;
    if (step_runs_no_checks()) return 0;
    const launchguard_core* core = launchguard::slurm::ready_core(sp, ac, av);
    log_core_loading();
    return core != nullptr ? core->user_init(sp, ac, av) : 0;
}

extern "C" int slurm_spank_task_init_privileged(spank_t sp, int ac, char** av) {
    using namespace launchguard::slurm;
    if (step_runs_no_checks()) return 0;
    const launchguard_core* core = launchguard::slurm::ready_core(sp, ac, av);
    return core != nullptr ? core->task_init_privileged(sp, ac, av) : 0;
}

extern "C" int slurm_spank_task_init(spank_t sp, int ac, char** av) {
    using namespace launchguard::slurm;
    if (step_runs_no_checks()) return 0;
    if (const launchguard_core* core = launchguard::slurm::ready_core(sp, ac, av)) return core->task_init(sp, ac, av);
    return guarded_hook("task_init", ac, av, [sp](const PluginConfig& config) {
        return launchguard::slurm::report_missing_core(sp, config);
    });
}
