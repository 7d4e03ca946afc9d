// What `launchguard fleet` costs on N node records, against the baseline of
// merely parsing the same records as JSON, in the same run. Each phase runs
// in a child process of its own, so its peak memory (ru_maxrss from wait4)
// is its own. Records: tests/integration/fleet/make_node_records.py.
//
// usage: fleet_bench RECORDS.jsonl [RUNS]   (bench/fleet_bench.sh makes the records)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "fleet/fleet.h"
#include "fleet/fleet_render.h"
#include "util/input_file.h"

namespace {

using launchguard::fleet::FleetInput;

struct Sample {
    double seconds = 0;      // wall
    double cpu_seconds = 0;  // user + system: what the phase costs on a shared, busy machine
    long max_rss_kib = 0;
};

// Runs `phase` in a child; its wall time and peak resident memory.
Sample measure(const std::function<std::size_t()>& phase) {
    const auto start = std::chrono::steady_clock::now();
    const pid_t child = ::fork();
    if (child == 0) {
        const std::size_t result = phase();
        std::_Exit(result == 0 ? 3 : 0);
    }
    int status = 0;
    struct rusage usage {};
    ::wait4(child, &status, 0, &usage);
    Sample s;
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    s.max_rss_kib = usage.ru_maxrss;
    auto seconds = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
    };
    s.cpu_seconds = seconds(usage.ru_utime) + seconds(usage.ru_stime);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "phase failed (status %d)\n", status);
        std::exit(1);
    }
    return s;
}

std::string read_records(const char* path) {
    auto text = launchguard::read_text_file(path, std::size_t{1} << 34);
    if (!text) {
        std::fprintf(stderr, "%s\n", text.error().to_string().c_str());
        std::exit(2);
    }
    return std::move(*text);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: fleet_bench RECORDS.jsonl [RUNS]\n");
        return 2;
    }
    const char* path = argv[1];
    const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
    struct Phase {
        const char* name;
        std::function<std::size_t()> run;
    };
    const std::vector<Phase> phases = {
        {"parse only (baseline)",
         [path] {
             const std::string text = read_records(path);
             std::size_t records = 0;
             std::size_t start = 0;
             // One record per line, as the generator writes them.
             while (start < text.size()) {
                 std::size_t end = text.find('\n', start);
                 if (end == std::string::npos) end = text.size();
                 if (end > start) {
                     boost::json::value v = boost::json::parse(std::string_view(text).substr(start, end - start));
                     records += v.is_object() ? 1 : 0;
                 }
                 start = end + 1;
             }
             return records;
         }},
        {"fleet report, text",
         [path] {
             FleetInput input = launchguard::fleet::read_fleet({path});
             auto report = launchguard::fleet::analyze_fleet(std::move(input), 0.95);
             return launchguard::fleet::render_fleet_text(report).size();
         }},
        {"fleet report, json",
         [path] {
             auto report = launchguard::fleet::analyze_fleet(launchguard::fleet::read_fleet({path}), 0.95);
             return boost::json::serialize(launchguard::fleet::fleet_to_json(report)).size();
         }},
        {"fleet report, html",
         [path] {
             auto report = launchguard::fleet::analyze_fleet(launchguard::fleet::read_fleet({path}), 0.95);
             return launchguard::fleet::render_fleet_html(report).size();
         }},
    };
    std::printf("%-24s %12s %10s %10s %12s\n", "phase", "median CPU s", "median s", "max s", "peak RSS MiB");
    for (const auto& phase : phases) {
        std::vector<Sample> samples;
        for (int i = 0; i < runs; ++i) samples.push_back(measure(phase.run));
        std::sort(samples.begin(), samples.end(),
                  [](const Sample& a, const Sample& b) { return a.seconds < b.seconds; });
        long rss = 0;
        std::vector<double> cpu;
        for (const auto& s : samples) {
            rss = std::max(rss, s.max_rss_kib);
            cpu.push_back(s.cpu_seconds);
        }
        std::sort(cpu.begin(), cpu.end());
        std::printf("%-24s %12.3f %10.3f %10.3f %12.1f\n", phase.name, cpu[cpu.size() / 2],
                    samples[samples.size() / 2].seconds, samples.back().seconds, static_cast<double>(rss) / 1024.0);
    }
    return 0;
}
