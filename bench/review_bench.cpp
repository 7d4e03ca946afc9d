// Time to judge one Kubernetes object from its spec, the work the admission
// webhook does per request besides HTTP and TLS: review_workload on real
// manifests (tests/fixtures/k8s), parsed JSON in, report and patch out.
// The JSON parse of the same object is the baseline in the same run.
// containers_per_pod: one Pod of 1 to 2,000 GPU containers, linear in their number.
// *_gate: the same objects with the launch gate added (gate_injection.h).
// Run: build/bench/review_bench
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include <boost/json.hpp>

#include "engine/profile_loader.h"
#include "kubernetes/manifest_documents.h"
#include "kubernetes/workload_review.h"
#include "profile/profile.h"

namespace {

using namespace launchguard;

// The one workload document of a fixture, as the API server would send it.
boost::json::value fixture_object(const std::string& name) {
    std::ifstream in(std::string(LAUNCHGUARD_SHARED_FIXTURES) + "/k8s/" + name);
    std::stringstream text;
    text << in.rdbuf();
    auto documents = kubernetes::read_manifest_documents(text.str(), name);
    if (!documents) return nullptr;
    for (const auto& document : *documents) {
        auto kind = document.object.as_object().if_contains("kind");
        if (kind != nullptr && (*kind == "MPIJob" || *kind == "Pod" || *kind == "PyTorchJob")) return document.object;
    }
    return nullptr;
}

const Profile& topology_profile() {
    static const Profile profile = *load_profile(std::string(LAUNCHGUARD_FIXTURES) + "/k8s/ndv5-topology-profile.yaml");
    return profile;
}

// `gate`: /mutate of a site that adds the launch gate (a profile from a
// file, so the install container carries it as --profile-yaml text).
void review(benchmark::State& state, const std::string& name, bool fix_blocking, bool gate = false) {
    const boost::json::value object = fixture_object(name);
    kubernetes::ReviewOptions options;
    options.fix_blocking = fix_blocking;
    if (gate)
        options.gate = kubernetes::GateOptions{"registry.example/launchguard:1.0", kubernetes::GateOnError::allow};
    for (auto _ : state) {
        auto result = kubernetes::review_workload(object, topology_profile(), options);
        benchmark::DoNotOptimize(result);
    }
    state.counters["json_bytes"] = static_cast<double>(boost::json::serialize(object).size());
}

void parse_only(benchmark::State& state, const std::string& name) {
    const std::string text = boost::json::serialize(fixture_object(name));
    for (auto _ : state) benchmark::DoNotOptimize(boost::json::parse(text));
    state.counters["json_bytes"] = static_cast<double>(text.size());
}

// One Pod of n GPU containers without CPU or memory limits (so every
// container is judged and every one keeps the pod out of the Guaranteed QoS
// class): the cost of one object against its number of containers, which
// must grow linearly (Complexity reports the fitted order).
boost::json::value pod_of_containers(std::int64_t count) {
    boost::json::array containers;
    for (std::int64_t i = 0; i < count; ++i) {
        containers.push_back({{"name", "c" + std::to_string(i)},
                              {"image", "trainer:1"},
                              {"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}});
    }
    return {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", "wide"}}},
            {"spec", {{"containers", std::move(containers)}}}};
}

void containers_per_pod(benchmark::State& state) {
    const boost::json::value object = pod_of_containers(state.range(0));
    kubernetes::ReviewOptions options;
    options.fix_blocking = true;
    std::size_t findings = 0;
    for (auto _ : state) {
        auto result = kubernetes::review_workload(object, topology_profile(), options);
        if (result) findings = result->report.findings.size();
        benchmark::DoNotOptimize(result);
    }
    state.SetComplexityN(state.range(0));
    state.counters["json_bytes"] = static_cast<double>(boost::json::serialize(object).size());
    state.counters["findings"] = static_cast<double>(findings);
}

BENCHMARK(containers_per_pod)
    ->Arg(1)
    ->Arg(10)
    ->Arg(100)
    ->Arg(250)
    ->Arg(500)
    ->Arg(1000)
    ->Arg(2000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();

BENCHMARK_CAPTURE(parse_only, mpijob_aks, std::string("aks-rdma-ib-rendered.yaml"));
BENCHMARK_CAPTURE(review, mpijob_aks, std::string("aks-rdma-ib-rendered.yaml"), false);
BENCHMARK_CAPTURE(review, mpijob_awsome_validate, std::string("awsome-nccl-tests.yaml"), false);
BENCHMARK_CAPTURE(review, mpijob_awsome_mutate, std::string("awsome-nccl-tests.yaml"), true);
BENCHMARK_CAPTURE(review, pod_tcpxo_mutate, std::string("gke-tcpxo-nccl-test.yaml"), true);
BENCHMARK_CAPTURE(review, mpijob_awsome_mutate_gate, std::string("awsome-nccl-tests.yaml"), true, true);
BENCHMARK_CAPTURE(review, pod_tcpxo_mutate_gate, std::string("gke-tcpxo-nccl-test.yaml"), true, true);

}  // namespace

BENCHMARK_MAIN();
