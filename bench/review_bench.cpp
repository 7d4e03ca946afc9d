// Time to judge one Kubernetes object from its spec, the work the admission
// webhook does per request besides HTTP and TLS: review_workload on real
// manifests (tests/fixtures/k8s), parsed JSON in, report and patch out.
// The JSON parse of the same object is the baseline in the same run.
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
    std::ifstream in(std::string(LAUNCHGUARD_FIXTURES) + "/k8s/" + name);
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

void review(benchmark::State& state, const std::string& name, bool fix_blocking) {
    const boost::json::value object = fixture_object(name);
    kubernetes::ReviewOptions options;
    options.fix_blocking = fix_blocking;
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

BENCHMARK_CAPTURE(parse_only, mpijob_aks, std::string("aks-rdma-ib-rendered.yaml"));
BENCHMARK_CAPTURE(review, mpijob_aks, std::string("aks-rdma-ib-rendered.yaml"), false);
BENCHMARK_CAPTURE(review, mpijob_awsome_validate, std::string("awsome-nccl-tests.yaml"), false);
BENCHMARK_CAPTURE(review, mpijob_awsome_mutate, std::string("awsome-nccl-tests.yaml"), true);
BENCHMARK_CAPTURE(review, pod_tcpxo_mutate, std::string("gke-tcpxo-nccl-test.yaml"), true);

}  // namespace

BENCHMARK_MAIN();
