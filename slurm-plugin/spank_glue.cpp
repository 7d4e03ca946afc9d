#include "spank_glue.h"

#include <sys/resource.h>
#include <unistd.h>

#include <exception>

#include "probe/environment_entries.h"
#include "util/text_escape.h"

namespace launchguard::slurm {
namespace {

// Per-process state: a SPANK plugin is loaded once per srun, sbatch,
// slurmstepd or prolog process; these are only written from their hooks.
std::optional<Mode> g_requested_mode;
std::optional<PluginConfig> g_config;

}  // namespace

std::vector<std::string> plugin_args(int ac, char** av) {
    std::vector<std::string> args;
    for (int i = 0; i < ac; ++i) {
        if (av[i] != nullptr) args.emplace_back(av[i]);
    }
    return args;
}

Environment job_environment(spank_t sp) {
    char** envp = nullptr;
    if (spank_get_item(sp, S_JOB_ENV, &envp) != ESPANK_SUCCESS || envp == nullptr) return {};
    return environment_from_entries(envp);
}

std::optional<std::uint32_t> item_u32(spank_t sp, spank_item_t item) {
    std::uint32_t value = 0;
    if (spank_get_item(sp, item, &value) != ESPANK_SUCCESS) return std::nullopt;
    return value;
}

std::optional<int> local_task_id(spank_t sp) {
    int id = -1;
    if (spank_get_item(sp, S_TASK_ID, &id) != ESPANK_SUCCESS) return std::nullopt;
    return id;
}

void tell_user(const std::string& text) {
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        const std::string line = printable_text(std::string_view(text).substr(start, end - start));
        if (!line.empty()) slurm_spank_log("%s: %s", kPluginName, line.c_str());
        start = end + 1;
    }
}

// Lines carry values from the job (environment entries, paths, names): one
// line each, with no control byte reaching the log or the user's terminal.
void log_info(const std::string& line) { slurm_info("%s: %s", kPluginName, printable_text(line).c_str()); }
void log_error(const std::string& line) { slurm_error("%s: %s", kPluginName, printable_text(line).c_str()); }

std::optional<Mode> requested_user_mode() { return g_requested_mode; }
void set_requested_user_mode(Mode mode) { g_requested_mode = mode; }

int guarded_hook(const char* hook, int ac, char** av, const std::function<int(const PluginConfig&)>& body) {
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

int recording_hook(const char* hook, int ac, char** av, const std::function<void(const PluginConfig&)>& body) {
    try {
        auto config = parse_plugin_args(plugin_args(ac, av));
        if (config) body(config.value());
    } catch (const std::exception& e) {
        log_error(std::string(hook) + ": internal error: " + e.what());
    } catch (...) {
        log_error(std::string(hook) + ": internal error");
    }
    return 0;
}

void remember_config(const PluginConfig& config) { g_config = config; }
const PluginConfig* remembered_config() { return g_config ? &*g_config : nullptr; }

long process_page_faults() {
    struct rusage usage {};
    return ::getrusage(RUSAGE_SELF, &usage) == 0 ? usage.ru_minflt + usage.ru_majflt : -1;
}

int apply_task_answer(spank_t sp, const TaskAnswer& answer) {
    for (const auto& line : answer.log_error) log_error(line);
    for (const auto& line : answer.log_info) log_info(line);
    for (const auto& text : answer.tell_user) tell_user(text);
    if (answer.block) return -1;
    for (const auto& change : answer.env_patch) {
        const spank_err_t rc = change.value ? spank_setenv(sp, change.name.c_str(), change.value->c_str(), 1)
                                            : spank_unsetenv(sp, change.name.c_str());
        if (rc != ESPANK_SUCCESS) {
            log_error("cannot apply " + change.name + ": " + spank_strerror(rc));
            return -1;
        }
    }
    return 0;
}

}  // namespace launchguard::slurm
