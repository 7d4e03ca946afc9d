// gate_bench GATE EXEC_ONLY [RUNS] [-- GATE_RUN_OPTIONS...]: what the launch
// gate adds to a container's start. Each run spawns
//   gate:      GATE run --profile default [OPTIONS] -- EXEC_ONLY
//   baseline:  EXEC_ONLY EXEC_ONLY
// and times it from spawn to exit: both exec two static programs, so the
// difference is the gate's judgement (its forked child, the profile, the
// live context, the rules) and nothing else. The two alternate, so load on
// the machine falls on both alike. Then the install step (`GATE install
// --into DIR --profile default`, what the init container runs) and the
// size of the installed copy are measured. Prints median, p90 and mean per
// line, in wall time and in CPU time (user + system, the gate's judging
// child included), which load on the machine does not stretch
// (docs/performance.md).
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

// CPU time (user + system) of the children reaped so far, in ms: what a run
// costs whatever the load on the machine, which stretches only its wall time.
double children_cpu_ms() {
    struct rusage usage {};
    ::getrusage(RUSAGE_CHILDREN, &usage);
    const auto ms = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e3 + t.tv_usec / 1e3; };
    return ms(usage.ru_utime) + ms(usage.ru_stime);
}

double run_once(const std::vector<std::string>& argv) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    // The workload's and the gate's output would flood the figures.
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", 01, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", 01, 0);
    const auto start = Clock::now();
    pid_t pid = 0;
    if (posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ) != 0) {
        std::perror("posix_spawn");
        std::exit(2);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    const auto end = Clock::now();
    posix_spawn_file_actions_destroy(&actions);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "gate_bench: %s exited with status %d\n", argv[0].c_str(), status);
        std::exit(2);
    }
    return std::chrono::duration<double, std::milli>(end - start).count();
}

void print(const char* what, std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    double sum = 0;
    for (double m : ms) sum += m;
    const auto at = [&ms](double q) { return ms[std::min(ms.size() - 1, static_cast<std::size_t>(q * ms.size()))]; };
    std::printf("%-34s n=%zu  median %7.2f ms  p90 %7.2f ms  mean %7.2f ms\n", what, ms.size(), at(0.5), at(0.9),
                sum / static_cast<double>(ms.size()));
}

double median(std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: gate_bench GATE EXEC_ONLY [RUNS] [-- GATE_RUN_OPTIONS...]\n");
        return 2;
    }
    const std::string gate = std::filesystem::absolute(argv[1]).string();
    const std::string exec_only = std::filesystem::absolute(argv[2]).string();
    int runs = 200;
    int next = 3;
    if (argc > next && std::string(argv[next]) != "--") runs = std::max(1, std::atoi(argv[next++]));
    std::vector<std::string> gate_line{gate, "run", "--profile", "default"};
    if (argc > next && std::string(argv[next]) == "--") {
        for (int i = next + 1; i < argc; ++i) gate_line.emplace_back(argv[i]);
    }
    gate_line.insert(gate_line.end(), {"--", exec_only});
    const std::vector<std::string> baseline_line{exec_only, exec_only};

    for (int i = 0; i < 5; ++i) {  // warm the page cache
        run_once(gate_line);
        run_once(baseline_line);
    }
    std::vector<double> with_gate;
    std::vector<double> baseline;
    std::vector<double> gate_cpu;
    std::vector<double> baseline_cpu;
    const auto timed = [](const std::vector<std::string>& line, std::vector<double>& wall, std::vector<double>& cpu) {
        const double before = children_cpu_ms();
        wall.push_back(run_once(line));
        cpu.push_back(children_cpu_ms() - before);
    };
    for (int i = 0; i < runs; ++i) {
        if (i % 2 == 0) {
            timed(gate_line, with_gate, gate_cpu);
            timed(baseline_line, baseline, baseline_cpu);
        } else {
            timed(baseline_line, baseline, baseline_cpu);
            timed(gate_line, with_gate, gate_cpu);
        }
    }
    print("baseline (exec only), wall", baseline);
    print("launchguard-gate run, wall", with_gate);
    print("baseline (exec only), CPU", baseline_cpu);
    print("launchguard-gate run, CPU", gate_cpu);
    std::printf("%-34s median %7.2f ms\n", "gate overhead (difference)", median(with_gate) - median(baseline));

    char dir_template[] = "/tmp/gate-bench-XXXXXX";
    const std::string dir = ::mkdtemp(dir_template) == nullptr ? std::string() : dir_template;
    if (dir.empty()) {
        std::perror("mkdtemp");
        return 2;
    }
    std::vector<double> install;
    const int install_runs = std::max(1, runs / 4);
    for (int i = 0; i < install_runs; ++i)
        install.push_back(run_once({gate, "install", "--into", dir, "--profile", "default"}));
    print("launchguard-gate install", install);
    struct stat st {};
    const std::string installed = dir + "/launchguard-gate";
    if (::stat(installed.c_str(), &st) == 0)
        std::printf("%-34s %lld bytes (as built; the image carries it stripped)\n", "installed executable",
                    static_cast<long long>(st.st_size));
    std::filesystem::remove_all(dir);
    return 0;
}
