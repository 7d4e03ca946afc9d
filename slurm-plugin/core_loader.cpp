#include "core_loader.h"

#include <dlfcn.h>

namespace launchguard::slurm {
namespace {

const launchguard_core* g_core = nullptr;
bool g_tried = false;
std::string g_error;

// Beside this plugin: Slurm loads plugins by absolute path (plugstack.conf
// or PluginDir), and installing both files into one directory is what keeps
// a plugin and its core of the same build together.
std::string core_path() {
    Dl_info self{};
    if (::dladdr(reinterpret_cast<const void*>(&core_path), &self) == 0 || self.dli_fname == nullptr) {
        return LAUNCHGUARD_CORE_FILE;
    }
    std::string path(self.dli_fname);
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) return LAUNCHGUARD_CORE_FILE;
    return path.substr(0, slash + 1) + LAUNCHGUARD_CORE_FILE;
}

const launchguard_core* open_core() {
    const std::string path = core_path();
    // RTLD_LOCAL: the core's symbols stay out of slurmstepd's namespace.
    // RTLD_LAZY, as Slurm loads plugins: the core itself is linked with
    // -z now, so a symbol it lacks still fails here, while the libraries it
    // brings (libstdc++, yaml-cpp, Boost.JSON) bind only what is called;
    // RTLD_NOW made the load 0.25 ms slower (bench/dlopen_cost.c).
    // Never closed: tasks forked from this process run its code.
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

}  // namespace

const launchguard_core* load_core() {
    if (!g_tried) {
        g_tried = true;
        g_core = open_core();
    }
    return g_core;
}

const launchguard_core* loaded_core() { return g_core; }
const std::string& core_load_error() { return g_error; }

}  // namespace launchguard::slurm
