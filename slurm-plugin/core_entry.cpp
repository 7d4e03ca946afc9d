// spank_launchguard_core.so's one export (core.lds): the table through which
// the small plugins hand it the hooks that need the checks.
#include <chrono>
#include <string>

#include "core_interface.h"
#include "spank_glue.h"
#include "step_node.h"
#include "step_verdict.h"

namespace launchguard::slurm {
namespace {

using launchguard::Mode;

int core_init(spank_t sp, int ac, char** av) {
    (void)sp;
    return guarded_hook("init", ac, av, [](const PluginConfig& config) {
        remember_config(config);
        // Once per slurmd start, as root: discover the node for every task
        // to come. A failure only costs tasks a live discovery.
        if (spank_context() == S_CTX_SLURMD && config.mode != Mode::off && !config.hwloc_xml) {
            auto cached = refresh_topology_cache(config);
            if (!cached) log_error("topology cache: " + cached.error().to_string());
        }
        return 0;
    });
}

// The two recording hooks never fail: a failing user_init drains the node
// in a batch step. A broken plugstack line fails the task in task_init.
int core_user_init(spank_t sp, int ac, char** av) {
    return recording_hook("user_init", ac, av, [sp](const PluginConfig& config) {
        PhaseTimes times;
        {
            PhaseTimer timer(config.timing ? &times : nullptr, "host_side");
            capture_host_side(sp, config);
        }
        // Before the tasks are forked: the table they share verdicts in.
        map_step_verdicts();
        if (!config.timing) return;
        log_info("timing user_init: " + times.to_string());
        // The loading thread has been joined by now (dispatch.cpp).
        if (!prepare_step_times().empty())
            log_info("timing prepare_step (slurmstepd's loading thread): " + prepare_step_times().to_string());
    });
}

int core_task_init_privileged(spank_t sp, int ac, char** av) {
    return recording_hook("task_init_privileged", ac, av, [sp](const PluginConfig& config) {
        remember_forked_namespace();
        // As root, once per step (each task holds the same copy).
        if (local_task_id(sp) == 0) save_prepared_node_facts(config);
    });
}

int core_task_init(spank_t sp, int ac, char** av) {
    return guarded_hook("task_init", ac, av, [sp](const PluginConfig& config) {
        if (!config.timing) return run_task_init(sp, config);
        PhaseTimes times;
        const long faults_before = process_page_faults();
        const auto start = std::chrono::steady_clock::now();
        const int rc = run_task_init(sp, config, &times);
        const auto total =
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
        const long faults = process_page_faults();
        log_info("timing task_init task " + std::to_string(local_task_id(sp).value_or(-1)) +
                 ": total=" + std::to_string(total.count()) + "us " + times.to_string() +
                 " faults=" + std::to_string(faults - faults_before) + " (since fork " + std::to_string(faults) + ")");
        return rc;
    });
}

int core_job_prolog(spank_t sp, int ac, char** av) {
    return guarded_hook("job_prolog", ac, av, [sp](const PluginConfig& config) { return run_job_prolog(sp, config); });
}

// On the loading thread: no Slurm call, not even logging; a configuration
// that does not parse is reported by init and task_init.
void core_prepare_step(int ac, char** av) {
    try {
        if (auto config = parse_plugin_args(plugin_args(ac, av))) prepare_step(*config);
    } catch (...) {
    }
}

constexpr launchguard_core kCore = {
    LAUNCHGUARD_CORE_ABI,      core_init,      on_user_option,  core_user_init,
    core_task_init_privileged, core_task_init, core_job_prolog, core_prepare_step,
};

}  // namespace
}  // namespace launchguard::slurm

extern "C" __attribute__((visibility("default"))) const launchguard_core* launchguard_core_entry() {
    return &launchguard::slurm::kCore;
}
