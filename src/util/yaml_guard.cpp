#include "util/yaml_guard.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <unordered_set>

#include "util/child_process.h"

namespace launchguard {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

constexpr rlim_t kYamlParseBytes = rlim_t{2} << 30;
constexpr int kExitOutOfMemory = 3;
// Without a memory bound (ASan), a looping parse is stopped sooner.
constexpr unsigned kParseSeconds = kAddressSanitizer ? 3 : kYamlParseSeconds;

// Texts already seen to finish, by hash: a profile checked once in
// slurmstepd's user_init is not forked for again in each task it forks.
std::mutex g_passed_mutex;
std::unordered_set<std::size_t> g_passed;

}  // namespace

Status check_yaml_terminates(std::string_view text, const std::string& origin) {
    const std::size_t key = std::hash<std::string_view>{}(text);
    {
        std::lock_guard lock(g_passed_mutex);
        if (g_passed.contains(key)) return Done{};
    }
    std::fflush(nullptr);  // the child leaves with _exit; keep buffers from being written twice
    pid_t child = ::fork();
    if (child < 0) return make_file_error(origin, 0, std::string("cannot fork to check the YAML: ") + std::strerror(errno));
    if (child == 0) {
        restore_default_crash_signals();
        ::alarm(kParseSeconds);
        // AddressSanitizer reserves terabytes of address space: no bound there.
        if (!kAddressSanitizer) {
            struct rlimit limit {kYamlParseBytes, kYamlParseBytes};
            (void)::setrlimit(RLIMIT_AS, &limit);
        }
        int rc = 0;
        try {
            (void)YAML::LoadAll(std::string(text));
        } catch (const std::bad_alloc&) {
            rc = kExitOutOfMemory;
        } catch (...) {
            rc = 0;  // invalid YAML the caller will report with its line
        }
        ::_exit(rc);
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) return make_file_error(origin, 0, std::string("cannot wait for the YAML check: ") + std::strerror(errno));
    }
    const std::string known = " (yaml-cpp 0.7 loops on some invalid YAML, e.g. '{a: b},'): refused";
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
        return make_file_error(origin, 0, "the YAML parser did not finish within " + std::to_string(kParseSeconds) +
                                              " s" + known);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == kExitOutOfMemory) {
        return make_file_error(origin, 0, "the YAML parser ran out of memory" + known);
    }
    if (WIFSIGNALED(status)) {
        return make_file_error(origin, 0, std::string("the YAML parser crashed (") + strsignal(WTERMSIG(status)) + ")" + known);
    }
    std::lock_guard lock(g_passed_mutex);
    g_passed.insert(key);
    return Done{};
}

}  // namespace launchguard
