// What launchguard-task-service spends on one task's request, start to end:
// reading the request from its socket, decoding it, the check, and writing
// the answer (receive_message, as the service's loop reads a request already
// there, and TaskService::answer_request). On a machine with few vCPUs
// the service's CPU time is added to the launch almost one for one
// (docs/performance.md, twelfth round), and a launch's paired figure cannot
// resolve a change of tens of microseconds; this can.
//
// A forked child that only waits is the task: its /proc entry is what the
// service reads. Each request is a real one, encoded as the plugin encodes
// it (this process's environment as the task's and as the host's, the
// plugstack arguments given), written whole into a socket pair before the
// service reads it, so no wait is timed. The figure is the answering
// thread's CPU time (CLOCK_THREAD_CPUTIME_ID) and its wall time per request;
// the kernel's accept and wake-ups are not in it.
//
// Usage: service_round_trip [--runs N] [--cold-mb M] [--tasks-per-step T]
//                           [PLUGSTACK_ARG...]
//   PLUGSTACK_ARG  the plugin's arguments (default: profile=default
//                  mode=enforce); add topology-cache=FILE as operators run it
//   --cold-mb M    touch M MiB between requests, so that caches and TLB are
//                  cold as they are in a service between launches (default 0)
//   --tasks-per-step T
//                  T requests per step before the step number changes, as a
//                  node with T tasks of a step sends them (default 1: every
//                  request is a step's first); the step's first task and its
//                  later ones are reported apart
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "mount_namespace.h"
#include "service_client.h"
#include "task_service.h"
#include "task_service_protocol.h"

extern char** environ;

namespace {

using namespace launchguard;
using namespace launchguard::slurm;

[[noreturn]] void fail(const std::string& why) {
    std::fprintf(stderr, "service_round_trip: %s\n", why.c_str());
    std::exit(1);
}

double thread_cpu_micros() {
    timespec now{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) * 1e6 + static_cast<double>(now.tv_nsec) / 1e3;
}

double percentile(std::vector<double> values, double fraction) {
    std::sort(values.begin(), values.end());
    return values[static_cast<std::size_t>(fraction * static_cast<double>(values.size() - 1))];
}

// The request the plugin's task_init sends (dispatch.cpp), for a task that
// did not move into a container.
std::string plugin_request(const std::vector<std::string>& args, std::uint32_t step, std::size_t& entries) {
    TaskRequestWriter writer;
    for (const auto& arg : args) writer.plugin_arg(arg);
    writer.mode(Mode::enforce);
    entries = 0;
    for (char** entry = environ; *entry != nullptr; ++entry, ++entries) writer.env_entry(*entry);
    writer.host_env_kept();
    for (char** entry = environ; *entry != nullptr; ++entry) writer.host_env_entry(*entry);
    if (auto ns = current_mount_namespace()) writer.forked_namespace(*ns);
    writer.number("job", 7);
    writer.number("step", step);
    writer.number("nodes", 1);
    writer.first_task(false);
    return std::move(writer).finish();
}

}  // namespace

int main(int argc, char** argv) {
    int runs = 300;
    std::size_t cold_mb = 0;
    long tasks_per_step = 1;
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if ((arg == "--runs" || arg == "--cold-mb" || arg == "--tasks-per-step") && i + 1 < argc) {
            const long value = std::atol(argv[++i]);
            if (arg == "--runs")
                runs = static_cast<int>(value);
            else if (arg == "--cold-mb")
                cold_mb = static_cast<std::size_t>(value);
            else
                tasks_per_step = value;
        } else {
            args.push_back(arg);
        }
    }
    if (runs < 10) fail("--runs must be at least 10");
    if (tasks_per_step < 1) fail("--tasks-per-step must be at least 1");
    if (args.empty()) args = {"profile=default", "mode=enforce"};
    std::signal(SIGPIPE, SIG_IGN);

    const pid_t task = ::fork();
    if (task < 0) fail(std::string("fork: ") + std::strerror(errno));
    if (task == 0) {
        ::pause();
        ::_exit(0);
    }
    std::size_t entries = 0;
    std::vector<char> cold(cold_mb << 20);

    TaskService service;
    // On the stack, as the service's leader thread keeps its receive buffer.
    std::array<char, 65536> scratch;
    // [0]: a step's first task; [1]: its later ones.
    std::vector<double> cpu[2];
    std::vector<double> wall[2];
    std::size_t request_bytes = 0;
    std::string first_problem;
    bool blocked = false;
    for (int run = 0; run <= runs; ++run) {
        // Run 0 warms up, and is a step of its own.
        const auto step = static_cast<std::uint32_t>(run == 0 ? 1'000'000 : (run - 1) / tasks_per_step);
        const bool later_task = run > 0 && (run - 1) % tasks_per_step != 0;
        const std::string request = plugin_request(args, step, entries);
        request_bytes = request.size();
        for (std::size_t at = 0; at < cold.size(); at += 64) cold[at] = static_cast<char>(cold[at] + 1);
        int ends[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) fail("socketpair failed");
        if (!send_message(ends[0], request)) fail("the request does not fit the socket's buffer");
        ::shutdown(ends[0], SHUT_WR);
        const auto started = std::chrono::steady_clock::now();
        const double cpu_before = thread_cpu_micros();
        std::optional<std::string> problem;
        const ReceivedMessage received = receive_message(ends[1], kMaxTaskRequestBytes, scratch);
        if (received.error != 0 || received.too_large)
            problem = "the service could not read the request";
        else
            problem = service.answer_request(ends[1], task, received.bytes);
        const double cpu_spent = thread_cpu_micros() - cpu_before;
        const auto elapsed = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started);
        ::shutdown(ends[1], SHUT_WR);
        std::string answer;
        char piece[4096];
        for (ssize_t n; (n = ::recv(ends[0], piece, sizeof piece, 0)) > 0;)
            answer.append(piece, static_cast<std::size_t>(n));
        ::close(ends[0]);
        ::close(ends[1]);
        if (problem && first_problem.empty()) first_problem = *problem;
        if (auto decoded = decode_task_answer(answer)) blocked = decoded->block;
        // The first request reads the profile and the node: not a task's cost.
        if (run == 0) continue;
        cpu[later_task].push_back(cpu_spent);
        wall[later_task].push_back(elapsed.count());
    }
    ::kill(task, SIGKILL);
    ::waitpid(task, nullptr, 0);
    if (!first_problem.empty()) fail(first_problem);

    std::printf(
        "request: %zu bytes, %zu variables (task and host each); answer: %s; cold: %zu MiB; tasks per "
        "step: %ld\n",
        request_bytes, entries, blocked ? "block" : "allow", cold_mb, tasks_per_step);
    std::printf("%-32s %8s %10s %10s\n", "per request", "requests", "median us", "p90 us");
    const char* const kinds[2] = {"a step's first task", "a step's later tasks"};
    for (int later = 0; later < 2; ++later) {
        if (cpu[later].empty()) continue;
        const std::string cpu_name = std::string("thread CPU, ") + kinds[later];
        const std::string wall_name = std::string("wall, ") + kinds[later];
        std::printf("%-32s %8zu %10.1f %10.1f\n", cpu_name.c_str(), cpu[later].size(), percentile(cpu[later], 0.5),
                    percentile(cpu[later], 0.9));
        std::printf("%-32s %8zu %10.1f %10.1f\n", wall_name.c_str(), wall[later].size(), percentile(wall[later], 0.5),
                    percentile(wall[later], 0.9));
    }
    return 0;
}
