#include "util/yaml_guard.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <unordered_set>
#include <vector>

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
    // In a multi-threaded process (a YAML profile in slurmd or slurmstepd)
    // the child could deadlock; that file is the site's own, and
    // `launchguard profile validate` runs this check on it.
    if (!forked_child_may_run_library_code()) return Done{};
    std::fflush(nullptr);  // the child leaves with _exit; keep buffers from being written twice
    pid_t child = ::fork();
    if (child < 0)
        return make_file_error(origin, 0, std::string("cannot fork to check the YAML: ") + std::strerror(errno));
    if (child == 0) {
        restore_default_crash_signals();
        ::alarm(kParseSeconds);
        // AddressSanitizer reserves terabytes of address space: no bound there.
        if (!kAddressSanitizer) {
            struct rlimit limit {
                kYamlParseBytes, kYamlParseBytes
            };
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
        if (errno != EINTR)
            return make_file_error(origin, 0, std::string("cannot wait for the YAML check: ") + std::strerror(errno));
    }
    const std::string known = " (yaml-cpp 0.7 loops on some invalid YAML, e.g. '{a: b},'): refused";
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
        return make_file_error(origin, 0,
                               "the YAML parser did not finish within " + std::to_string(kParseSeconds) + " s" + known);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == kExitOutOfMemory) {
        return make_file_error(origin, 0, "the YAML parser ran out of memory" + known);
    }
    if (WIFSIGNALED(status)) {
        return make_file_error(origin, 0,
                               std::string("the YAML parser crashed (") + strsignal(WTERMSIG(status)) + ")" + known);
    }
    std::lock_guard lock(g_passed_mutex);
    g_passed.insert(key);
    return Done{};
}

Status check_yaml_expansion(std::span<const YAML::Node> documents, const std::string& origin) {
    // Iterative, with an explicit stack: the expanded depth is what is being
    // bounded, so it must not be the call stack's.
    struct Pending {
        YAML::Node node;
        std::size_t depth;
    };
    std::vector<Pending> pending;
    for (auto document = documents.rbegin(); document != documents.rend(); ++document)
        pending.push_back({*document, 1});
    std::size_t nodes = 0;
    while (!pending.empty()) {
        Pending current = std::move(pending.back());
        pending.pop_back();
        const YAML::Mark mark = current.node.Mark();
        const int line = mark.line >= 0 ? mark.line + 1 : 0;
        if (++nodes > kMaxYamlNodes) {
            return make_file_error(origin, line,
                                   "the YAML expands to more than " + std::to_string(kMaxYamlNodes) +
                                       " nodes once its aliases are followed: refused");
        }
        if (current.depth > kMaxYamlDepth) {
            return make_file_error(origin, line,
                                   "the YAML nests more than " + std::to_string(kMaxYamlDepth) +
                                       " levels deep once its aliases are followed: refused");
        }
        if (current.node.IsSequence()) {
            for (const auto& item : current.node) pending.push_back({item, current.depth + 1});
        } else if (current.node.IsMap()) {
            for (const auto& entry : current.node) {
                pending.push_back({entry.first, current.depth + 1});
                pending.push_back({entry.second, current.depth + 1});
            }
        }
    }
    return Done{};
}

Error yaml_exception_error(const YAML::Exception& e, const std::string& origin, const std::string& what) {
    const int line = e.mark.line >= 0 ? e.mark.line + 1 : 0;
    if (const auto* deep = dynamic_cast<const YAML::DeepRecursion*>(&e)) {
        return make_file_error(origin, line,
                               what + ": the YAML nests too deep (yaml-cpp stops reading at " +
                                   std::to_string(deep->depth()) + " levels of nested collections): refused");
    }
    return make_file_error(origin, line, what + ": " + e.msg);
}

}  // namespace launchguard
