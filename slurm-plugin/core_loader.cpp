#include "core_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <string>
#include <vector>

#include "profile/profile.h"
#include "spank_glue.h"

namespace launchguard::slurm {
namespace {

// Written by the loading thread, read only after it has been joined.
const launchguard_core* g_core = nullptr;
std::string g_error;
bool g_tried = false;

// What the loading thread and the wait for it took (core_loading_times()).
using Clock = std::chrono::steady_clock;
Clock::duration g_load_time{};
Clock::duration g_prepare_time{};
// Page faults the loading thread took for each part (RUSAGE_THREAD).
long g_load_faults = 0;
long g_prepare_faults = 0;
Clock::duration g_wait_time{};
Clock::duration g_window{};  // from starting the thread to the wait for it
Clock::time_point g_started{};
bool g_timed = false;

long long microseconds(Clock::duration d) {
    return static_cast<long long>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

// The loading thread, and the process that started it: a forked child
// cannot join its parent's thread.
bool g_loading = false;
pthread_t g_loader{};
pid_t g_loader_pid = 0;
// Set by the loading thread once the core is open: then a thread that does
// not finish is stuck reading the node, not loading.
std::atomic<bool> g_core_opened{false};
// The thread outlived node-read-timeout: left running, its results unread.
bool g_abandoned = false;

// The build of the core this process needs: a YAML profile needs the YAML one.
const char* core_file() {
    const PluginConfig* config = remembered_config();
    if (config == nullptr || is_compiled_profile_reference(config->profile)) return LAUNCHGUARD_CORE_FILE;
    return LAUNCHGUARD_CORE_YAML_FILE;
}

// This plugin's own file, as the loader opened it, or null.
const char* this_plugin_file() {
    Dl_info self{};
    if (::dladdr(reinterpret_cast<const void*>(&this_plugin_file), &self) == 0) return nullptr;
    return self.dli_fname;
}

// Beside this plugin, which keeps a plugin and its core of the same build together.
std::string core_path() {
    const char* file = core_file();
    const char* self = this_plugin_file();
    if (self == nullptr) return file;
    std::string path(self);
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) return file;
    return path.substr(0, slash + 1) + file;
}

const launchguard_core* open_core() {
    const std::string path = core_path();
    // RTLD_LOCAL: the core's symbols stay out of slurmstepd's namespace.
    // RTLD_LAZY: the core is linked with -z now, and its libraries bind only
    // what is called (RTLD_NOW: 0.25 ms slower). Never closed: tasks run it.
    void* handle = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (handle == nullptr) {
        // dlerror() names the file itself.
        const char* why = ::dlerror();
        g_error = "cannot load the task checks: " + (why ? std::string(why) : path + ": unknown error");
        return nullptr;
    }
    auto entry = reinterpret_cast<launchguard_core_entry_fn>(::dlsym(handle, LAUNCHGUARD_CORE_ENTRY));
    if (entry == nullptr) {
        g_error = path + " has no " LAUNCHGUARD_CORE_ENTRY ": not a launchguard core";
        return nullptr;
    }
    const launchguard_core* core = entry();
    if (core == nullptr || core->abi != LAUNCHGUARD_CORE_ABI) {
        g_error = path + " was built for another version of spank_launchguard.so (core interface " +
                  std::to_string(core ? core->abi : 0) + ", expected " + std::to_string(LAUNCHGUARD_CORE_ABI) +
                  "): install both files from the same build";
        return nullptr;
    }
    return core;
}

// On the loading thread an escaping exception would terminate slurmstepd.
const launchguard_core* open_core_or_null() noexcept {
    try {
        return open_core();
    } catch (...) {
        return nullptr;
    }
}

// The plugstack arguments for prepare_step, copied: Slurm's array is not the thread's.
std::vector<std::string> g_prepare_args;
bool g_prepare = false;

long thread_page_faults() {
    struct rusage usage {};
    if (::getrusage(RUSAGE_THREAD, &usage) != 0) return 0;
    return usage.ru_minflt + usage.ru_majflt;
}

void* load_on_thread(void*) {
    const Clock::time_point start = Clock::now();
    const long start_faults = thread_page_faults();
    g_core = open_core_or_null();
    g_core_opened.store(true);
    const Clock::time_point loaded = Clock::now();
    const long loaded_faults = thread_page_faults();
    g_load_time = loaded - start;
    g_load_faults = loaded_faults - start_faults;
    if (g_core == nullptr || !g_prepare) return nullptr;
    try {
        std::vector<char*> argv;
        for (auto& arg : g_prepare_args) argv.push_back(arg.data());
        argv.push_back(nullptr);
        g_core->prepare_step(static_cast<int>(g_prepare_args.size()), argv.data());
        g_prepare_time = Clock::now() - loaded;
        g_prepare_faults = thread_page_faults() - loaded_faults;
    } catch (...) {
        // Only the vector allocates; the tasks then read the node themselves.
    }
    return nullptr;
}

// When Slurm unloads this plugin, the thread running its code must be done.
struct LoaderJoin {
    LoaderJoin() = default;
    LoaderJoin(const LoaderJoin&) = delete;
    LoaderJoin& operator=(const LoaderJoin&) = delete;
    ~LoaderJoin() {
        if (g_loading && ::getpid() == g_loader_pid) {
            ::pthread_join(g_loader, nullptr);
            g_loading = false;
        }
    }
};
const LoaderJoin g_join_on_unload;

}  // namespace

const launchguard_core* load_core() noexcept {
    if (!g_tried) {
        g_tried = true;
        g_core = open_core_or_null();
    }
    return g_core;
}

void start_loading_core(int ac, char** av) noexcept {
    if (g_tried) return;
    g_tried = true;
    try {
        g_prepare_args.assign(av, av + ac);
        g_prepare = true;
    } catch (...) {
        g_prepare = false;  // the tasks then read the node themselves
    }
    // The thread must not take slurmstepd's signals: it inherits this mask.
    sigset_t all;
    sigset_t before;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &before);
    g_started = Clock::now();
    g_loading = ::pthread_create(&g_loader, nullptr, load_on_thread, nullptr) == 0;
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    if (g_loading) {
        g_loader_pid = ::getpid();
    } else {
        g_core = open_core_or_null();
    }
}

namespace {

// A thread left running must not return into unmapped code when Slurm
// unloads the plugin: RTLD_NODELETE keeps it mapped.
void keep_this_plugin_loaded() noexcept {
    if (const char* self = this_plugin_file())
        (void)::dlopen(self, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);  // never closed
}

// Joins the loading thread, or gives up on it after `bound` (0: no bound): a
// sysfs read that never returns must not hold the step, and the node, for good.
void join_or_abandon(long bound_seconds) noexcept {
    if (bound_seconds <= 0) {
        ::pthread_join(g_loader, nullptr);
        return;
    }
    struct timespec deadline {};
    ::clock_gettime(CLOCK_MONOTONIC, &deadline);  // a clock step must not cut the wait short
    deadline.tv_sec += bound_seconds;
    int rc = 0;
    while ((rc = ::pthread_clockjoin_np(g_loader, nullptr, CLOCK_MONOTONIC, &deadline)) == EINTR) {
    }
    if (rc != ETIMEDOUT) return;
    g_abandoned = true;
    keep_this_plugin_loaded();
    ::pthread_detach(g_loader);
    try {
        g_error = std::string("the task checks were still ") +
                  (g_core_opened.load() ? "reading the node's facts" : "loading") + " after " +
                  std::to_string(bound_seconds) +
                  " s (node-read-timeout=; a sysfs or /proc read that does not return?): this step has no "
                  "launchguard checks; see `launchguard node-check` on this node";
    } catch (...) {
    }
}

}  // namespace

const launchguard_core* wait_for_core() noexcept {
    if (!g_tried) return load_core();
    if (g_loading) {
        if (::getpid() != g_loader_pid) {
            // Forked while the core was loading: its state is unknown here.
            g_core = nullptr;
            try {
                g_error = "internal error: the task checks were still loading when slurmstepd forked this task";
            } catch (...) {
            }
        } else {
            const Clock::time_point start = Clock::now();
            g_window = start - g_started;
            const PluginConfig* config = remembered_config();
            join_or_abandon(config != nullptr ? config->node_read_timeout : 0);
            g_wait_time = Clock::now() - start;
            g_timed = true;
        }
        g_loading = false;
    }
    return loaded_core();
}

// An abandoned thread may still write g_core: never read then.
const launchguard_core* loaded_core() { return g_abandoned ? nullptr : g_core; }

std::string core_loading_times() {
    if (!g_timed) return {};
    return "load=" + std::to_string(microseconds(g_load_time)) + "us (" + std::to_string(g_load_faults) +
           " faults) prepare_step=" + std::to_string(microseconds(g_prepare_time)) + "us (" +
           std::to_string(g_prepare_faults) + " faults) set-up=" + std::to_string(microseconds(g_window)) +
           "us waited=" + std::to_string(microseconds(g_wait_time)) + "us";
}
const std::string& core_load_error() { return g_error; }

}  // namespace launchguard::slurm
