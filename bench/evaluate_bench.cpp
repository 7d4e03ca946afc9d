// Evaluation time per launch with the node topology already loaded (the
// SPANK plugin loads it once per node from its cache; target <= 50 us).
//
// Baseline in the same run: BM_ResolveNcclConfig is the part every rule
// shares (env + conf files through the container view); BM_EvaluateLaunch is
// the whole engine over every rule. Run: build/bench/evaluate_bench
#include <benchmark/benchmark.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "context/captured_file_view.h"
#include "engine/engine.h"
#include "engine/profile_loader.h"
#include "nccl/host_topology.h"
#include "nccl/nccl_config.h"
#include "probe/hwloc_probe.h"
#include "probe/rooted_file_view.h"
#include "probe/sysfs_probe.h"
#include "profile/profile.h"
#include "rules/rule.h"
#include "support/memory_file_view.h"

namespace {

using namespace launchguard;

// A realistic container: a topology file, an /etc/nccl.conf, a job env, the
// 32em64t hwloc XML (GPUs + mlx5_0) as the node.
struct BenchLaunch {
    std::filesystem::path root;
    LaunchContext ctx;
    Profile profile;

    BenchLaunch() {
        root = std::filesystem::temp_directory_path() / ("launchguard-bench-" + std::to_string(::getpid()));
        std::filesystem::create_directories(root / "etc");
        std::filesystem::create_directories(root / "opt/microsoft");
        std::filesystem::copy_file(std::string(LAUNCHGUARD_SHARED_FIXTURES) + "/nccl-topo/ndv5-topo.xml",
                                   root / "opt/microsoft/ndv5-topo.xml",
                                   std::filesystem::copy_options::overwrite_existing);
        std::ofstream(root / "etc/nccl.conf") << "NCCL_IB_PCI_RELAXED_ORDERING=1\n"
                                                 "NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml\n"
                                                 "NCCL_IGNORE_CPU_AFFINITY=1\n";
        ctx.runtime = Runtime::pyxis;
        ctx.env = Fact<Environment>::known({{"NCCL_IB_HCA", "mlx5"},
                                            {"NCCL_IB_QPS_PER_CONNECTION", "1"},
                                            {"NCCL_SOCKET_IFNAME", "eth0"},
                                            {"CUDA_VISIBLE_DEVICES", "0"},
                                            {"HOME", "/root"},
                                            {"PATH", "/usr/bin:/bin"}});
        ctx.files = std::make_shared<RootedFileView>(root.string());
        auto topo =
            load_topology_from_xml(std::string(LAUNCHGUARD_SHARED_FIXTURES) + "/hwloc/32em64t-2n8c2t-pci-normalio.xml");
        if (!topo) std::abort();
        ctx.topology = Fact<NodeTopology>::known(topo.value(), "bench");
        ctx.interfaces = Fact<std::vector<NetInterface>>::known(topo->interfaces, "bench");
        ctx.gpus = Fact<std::vector<Gpu>>::known({topo->gpus.front()}, "bench");
        ctx.cpu_mask = Fact<CpuSet>::known(topo->numa_nodes.back().cpus, "bench");
        ctx.job.nodes = Fact<int>::known(128, "bench");
        ctx.job.total_gpus = Fact<int>::known(1024, "bench");
        ctx.container.shm_bytes = Fact<std::uint64_t>::known(64ULL << 20, "bench");
        auto loaded = load_profile("gb300-cx8");
        if (!loaded) std::abort();
        profile = loaded.value();
    }
    ~BenchLaunch() {
        std::error_code ec;
        std::filesystem::remove_all(root, ec);
    }
};

BenchLaunch& launch() {
    static BenchLaunch instance;
    return instance;
}

void BM_ResolveNcclConfig(benchmark::State& state) {
    auto& l = launch();
    for (auto _ : state) benchmark::DoNotOptimize(nccl::resolve(l.ctx));
}
BENCHMARK(BM_ResolveNcclConfig)->Unit(benchmark::kMicrosecond);

void BM_EvaluateLaunch(benchmark::State& state) {
    auto& l = launch();
    EvaluationOptions options;
    options.mode = Mode::enforce;
    options.scopes = kScopeLive;
    options.applicable = {RemediationOp::Kind::set_env, RemediationOp::Kind::unset_env};
    std::size_t findings = 0;
    for (auto _ : state) {
        Report r = evaluate(l.ctx, l.profile, options);
        findings = r.findings.size();
        benchmark::DoNotOptimize(r);
    }
    state.counters["findings"] = static_cast<double>(findings);
    state.counters["rules"] = static_cast<double>(all_rules().size());
}
BENCHMARK(BM_EvaluateLaunch)->Unit(benchmark::kMicrosecond);

// The same launch with its files held in memory: the rules' own CPU cost,
// without the system calls of looking through a real root filesystem.
void BM_EvaluateLaunchFilesInMemory(benchmark::State& state) {
    auto& l = launch();
    LaunchContext ctx = l.ctx;
    auto view = std::make_shared<testing::MemoryFileView>("bench in-memory container");
    auto conf = l.ctx.files->read("/etc/nccl.conf", 1U << 20);
    auto topo = l.ctx.files->read("/opt/microsoft/ndv5-topo.xml", 1U << 20);
    if (!conf || !topo) std::abort();
    view->add_file("/etc/nccl.conf", *conf).add_file("/opt/microsoft/ndv5-topo.xml", *topo);
    ctx.files = view;
    EvaluationOptions options;
    options.mode = Mode::enforce;
    options.scopes = kScopeLive;
    options.applicable = {RemediationOp::Kind::set_env, RemediationOp::Kind::unset_env};
    for (auto _ : state) benchmark::DoNotOptimize(evaluate(ctx, l.profile, options));
}
BENCHMARK(BM_EvaluateLaunchFilesInMemory)->Unit(benchmark::kMicrosecond);

// The Slurm plugin's host side of a pyxis launch: user_init asks the host's
// questions once per step (here: the bench root as the host, with its
// nccl.conf and the ndv5 topology file), and task_init evaluates with the
// captured view. Compare with BM_EvaluateLaunch, the same launch without it.
void BM_CaptureHostSide(benchmark::State& state) {
    auto& l = launch();
    auto host = std::make_shared<RootedFileView>(l.root.string());
    for (auto _ : state) {
        CapturedFileView captured(host, "bench host");
        nccl::ask_host_questions({}, captured, l.profile.topology.host_path);
        captured.release();
        benchmark::DoNotOptimize(captured);
    }
}
BENCHMARK(BM_CaptureHostSide)->Unit(benchmark::kMicrosecond);

// The rest of user_init's work: the profile, for its topology.host_path.
void BM_LoadEmbeddedProfile(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(load_profile("default"));
}
BENCHMARK(BM_LoadEmbeddedProfile)->Unit(benchmark::kMicrosecond);

void BM_EvaluateLaunchWithHostView(benchmark::State& state) {
    auto& l = launch();
    LaunchContext ctx = l.ctx;
    auto captured = std::make_shared<CapturedFileView>(std::make_shared<RootedFileView>(l.root.string()), "bench host");
    nccl::ask_host_questions({}, *captured, l.profile.topology.host_path);
    captured->release();
    ctx.host = HostView{Fact<Environment>::known({}, "bench"), captured};
    // The container has the host's files: the propagation rules compare the
    // two topology files and stay quiet, their most expensive path.
    EvaluationOptions options;
    options.mode = Mode::enforce;
    options.scopes = kScopeLive;
    options.applicable = {RemediationOp::Kind::set_env, RemediationOp::Kind::unset_env};
    std::size_t findings = 0;
    for (auto _ : state) {
        Report r = evaluate(ctx, l.profile, options);
        findings = r.findings.size();
        benchmark::DoNotOptimize(r);
    }
    state.counters["findings"] = static_cast<double>(findings);
}
BENCHMARK(BM_EvaluateLaunchWithHostView)->Unit(benchmark::kMicrosecond);

void BM_LoadTopologyXml(benchmark::State& state) {
    for (auto _ : state) {
        benchmark::DoNotOptimize(
            load_topology_from_xml(std::string(LAUNCHGUARD_SHARED_FIXTURES) + "/hwloc/nvidiaDGX2.xml"));
    }
}
BENCHMARK(BM_LoadTopologyXml)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
