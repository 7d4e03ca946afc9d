// The only symbols spank_launchguard.so exports (see spank_launchguard.lds):
// the task checks. Node checks live in spank_launchguard_prolog.so
// (prolog_dispatch.cpp), because Slurm spawns a prolog process for every job
// on every node as soon as any plugin defines slurm_spank_job_prolog.
//
// srun, sbatch and salloc load this plugin on every launch, so it carries
// only what they use: the plugstack arguments and --launchguard, with the C++
// runtime linked in and hidden. In slurmstepd and slurmd it loads
// spank_launchguard_core.so (core_loader.h) and hands it the hooks; in
// slurmstepd the load runs while the step is set up, and the first hook that
// needs the core waits for it and replays init and --launchguard. With
// service= the step's tasks ask launchguard-task-service instead, and
// slurmstepd loads no core (service_client.h, task_service.h).
extern "C" {
#include <slurm/spank.h>
}

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core_loader.h"
#include "service_client.h"
#include "service_liveness.h"
#include "spank_glue.h"
#include "util/phase_times.h"

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
// Loading it costs on its own: where page faults are expensive, 3.2 of the
// 6.7 ms that the plugin adds to a launch (docs/performance.md, eighth
// round). The option arrives after init: a job that chose a mode has
// user_init load the core at once instead of on the thread.
bool step_runs_no_checks() {
    const PluginConfig* config = remembered_config();
    return config != nullptr && config->mode == Mode::off && !requested_user_mode();
}

// service=PATH: the step's tasks ask launchguard-task-service, and neither
// slurmstepd nor a task loads the core. Decided once per step, when the
// first hook needs to know: a service that is not running (its lock is not
// held, service_liveness.h; or, for a service without one, it does not
// accept a connection) then leaves the step to the core, as without service=.
std::optional<bool> g_step_uses_service;
// What the tasks send it besides their own environment: the job's
// environment on the host (user_init, before pyxis), the task's mount
// namespace before any task_init, and the connection opened as root.
std::optional<std::vector<std::string>> g_host_env;  // NAME=VALUE entries
std::optional<MountNamespace> g_forked_namespace;
int g_service_fd = -1;
std::string g_service_error;

bool step_uses_service(const PluginConfig& config) {
    if (!config.service) return false;
    if (!g_step_uses_service) {
        std::string why;
        const ServiceLiveness liveness = task_service_liveness(*config.service, why);
        if (liveness == ServiceLiveness::unknown) {
            const int fd = connect_task_service(*config.service, config.node_read_timeout, why);
            if (fd >= 0) ::close(fd);
            g_step_uses_service = fd >= 0;
        } else {
            g_step_uses_service = liveness == ServiceLiveness::up;
        }
        if (!*g_step_uses_service)
            log_error("task service " + *config.service + ": " + why + "; this step checks in slurmstepd");
    }
    return *g_step_uses_service;
}

// The check could not be asked for or answered: as on-error says, and the
// first task tells the user why.
int service_failed(spank_t sp, const PluginConfig& config, const std::string& why) {
    const std::string reason = "the task service " + config.service.value_or("") + " did not check this task: " + why;
    log_error(reason);
    if (local_task_id(sp).value_or(0) == 0) tell_user(reason);
    return config.on_error == OnError::block ? -1 : 0;
}

// The job's environment as Slurm keeps it: NAME=VALUE entries.
char** job_env_array(spank_t sp) {
    char** env = nullptr;
    return spank_get_item(sp, S_JOB_ENV, &env) == ESPANK_SUCCESS ? env : nullptr;
}

// In the task: the request is written straight from Slurm's arrays into one
// buffer, and the plugstack line is the one init parsed (inherited): a
// freshly forked task pays a page fault for each heap page it writes.
int check_task_via_service(spank_t sp, int ac, char** av, const PluginConfig& config) {
    const int fd = std::exchange(g_service_fd, -1);
    int rc = 0;
    const std::optional<Mode> mode = task_mode(sp, config, rc);
    if (!mode) {
        if (fd >= 0) ::close(fd);
        return rc;
    }
    const int task_id = local_task_id(sp).value_or(0);
    const bool first_task = task_id == 0;
    if (fd < 0) return service_failed(sp, config, g_service_error);
    PhaseTimes times;
    PhaseTimes* timed = config.timing ? &times : nullptr;
    PhaseTimer request_timer(timed, "request");
    char** env = job_env_array(sp);
    std::size_t expected = 0;
    for (char** entry = env; entry != nullptr && *entry != nullptr; ++entry) expected += std::strlen(*entry) + 5;
    if (g_host_env) expected += expected;
    TaskRequestWriter request(expected);
    for (int i = 0; i < ac; ++i) {
        if (av[i] != nullptr) request.plugin_arg(av[i]);
    }
    request.mode(*mode);
    for (char** entry = env; entry != nullptr && *entry != nullptr; ++entry) request.env_entry(*entry);
    if (g_host_env) {
        request.host_env_kept();
        for (const auto& entry : *g_host_env) request.host_env_entry(entry);
    }
    if (g_forked_namespace) request.forked_namespace(*g_forked_namespace);
    if (auto job = item_u32(sp, S_JOB_ID)) request.number("job", *job);
    if (auto step = item_u32(sp, S_JOB_STEPID)) request.number("step", *step);
    if (auto nodes = item_u32(sp, S_JOB_NNODES)) request.number("nodes", *nodes);
    request.first_task(first_task);
    std::string bytes = std::move(request).finish();
    request_timer.stop();
    PhaseTimer answer_timer(timed, "ask");
    auto answer = ask_task_service(fd, bytes);
    answer_timer.stop();
    if (!answer) return service_failed(sp, config, answer.error().to_string());
    PhaseTimer apply_timer(timed, "apply");
    rc = apply_task_answer(sp, *answer);
    apply_timer.stop();
    if (timed != nullptr) {
        const long faults = process_page_faults();
        log_info("timing task_init task " + std::to_string(task_id) + " (task service): " + times.to_string() +
                 " faults since fork " + std::to_string(faults));
    }
    return rc;
}

// task_init without its checks: the on-error policy decides, as when the
// profile cannot be loaded. The slurmd log has the reason from user_init
// (ready_core()); a task's own log lines would reach the user's stderr once
// per task, so the first task tells the user once.
int report_missing_core(spank_t sp, const PluginConfig& config) {
    const bool off = config.mode == Mode::off && requested_user_mode().value_or(Mode::off) == Mode::off;
    if (off) return 0;
    const std::string reason =
        core_load_error().empty() ? std::string("the task checks were not loaded") : core_load_error();
    if (local_task_id(sp).value_or(0) == 0) tell_user(reason);
    return config.on_error == OnError::block ? -1 : 0;
}

}  // namespace

// timing=1: the hook's wall time, one line to the slurmd log when it returns,
// in slurmstepd and slurmd only. task_init is timed by the core, phase by phase.
class HookTiming {
public:
    explicit HookTiming(const char* hook) noexcept : hook_(hook), start_(std::chrono::steady_clock::now()) {}
    HookTiming(const HookTiming&) = delete;
    HookTiming& operator=(const HookTiming&) = delete;
    ~HookTiming() {
        const PluginConfig* config = remembered_config();
        if (config == nullptr || !config->timing) return;
        const spank_context_t context = spank_context();
        if (context != S_CTX_REMOTE && context != S_CTX_SLURMD) return;
        try {
            const auto elapsed =
                std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start_);
            std::string line = std::string("timing ") + hook_ + " (hook): " + std::to_string(elapsed.count()) + "us";
            if (!loading_.empty()) line += "; core loading thread: " + loading_;
            log_info(line);
        } catch (...) {
        }
    }
    // After ready_core(): what the loading thread took and the wait for it.
    void note_core_loading() const noexcept {
        try {
            loading_ = core_loading_times();
        } catch (...) {
        }
    }

private:
    const char* hook_;
    std::chrono::steady_clock::time_point start_;
    mutable std::string loading_;
};

}  // namespace launchguard::slurm

using launchguard::slurm::guarded_hook;
using launchguard::slurm::loaded_core;
using launchguard::slurm::PluginConfig;

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av) {
    using namespace launchguard::slurm;
    // Logged only in slurmstepd and slurmd: srun would print it to the user.
    const HookTiming timing("init");
    return guarded_hook("init", ac, av, [sp, ac, av](const PluginConfig& config) {
        remember_config(config);
        const spank_context_t context = spank_context();
        if (context == S_CTX_LOCAL || context == S_CTX_ALLOCATOR || context == S_CTX_REMOTE) {
            if (register_user_option(sp) != 0) return -1;
        }
        if (context == S_CTX_REMOTE) {
            if (config.mode != launchguard::Mode::off && !step_uses_service(config)) start_loading_core(ac, av);
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
    const HookTiming timing("user_init");
    if (step_runs_no_checks()) return 0;
    if (remembered_config() != nullptr && step_uses_service(*remembered_config())) {
        // The job's environment before pyxis merges the image's: the host's side.
        try {
            g_host_env.emplace();
            char** env = job_env_array(sp);
            for (char** entry = env; entry != nullptr && *entry != nullptr; ++entry) g_host_env->emplace_back(*entry);
        } catch (...) {
            g_host_env.reset();
        }
        return 0;
    }
    const launchguard_core* core = launchguard::slurm::ready_core(sp, ac, av);
    timing.note_core_loading();
    return core != nullptr ? core->user_init(sp, ac, av) : 0;
}

extern "C" int slurm_spank_task_init_privileged(spank_t sp, int ac, char** av) {
    using namespace launchguard::slurm;
    const HookTiming timing("task_init_privileged");
    if (step_runs_no_checks()) return 0;
    if (g_step_uses_service.value_or(false)) {
        // As root: only root may ask the service, and the connection keeps
        // that after slurmstepd drops to the job's user.
        // The configuration init parsed (inherited), not the arguments again.
        try {
            const PluginConfig& config = *remembered_config();
            g_forked_namespace = current_mount_namespace();
            g_service_fd = connect_task_service(*config.service, config.node_read_timeout, g_service_error);
        } catch (...) {
            g_service_error = "out of memory";
        }
        return 0;
    }
    const launchguard_core* core = launchguard::slurm::ready_core(sp, ac, av);
    return core != nullptr ? core->task_init_privileged(sp, ac, av) : 0;
}

extern "C" int slurm_spank_task_init(spank_t sp, int ac, char** av) {
    using namespace launchguard::slurm;
    if (step_runs_no_checks()) return 0;
    if (g_step_uses_service.value_or(false)) {
        const HookTiming timing("task_init");
        try {
            return check_task_via_service(sp, ac, av, *remembered_config());
        } catch (...) {
            log_error("task_init: internal error");
        }
        return 0;
    }
    if (const launchguard_core* core = launchguard::slurm::ready_core(sp, ac, av)) return core->task_init(sp, ac, av);
    return guarded_hook("task_init", ac, av, [sp](const PluginConfig& config) {
        return launchguard::slurm::report_missing_core(sp, config);
    });
}
