// Manifests judged by what the spec shows about the communication backend
// (NCCL rules are not applicable to a gloo or mpi job) and by what the
// profile says the node class provides (the kubelet's CPU Manager policy,
// the container runtime's memlock limit).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include <boost/json.hpp>

#include "engine/profile_loader.h"
#include "kubernetes/manifest_documents.h"
#include "kubernetes/workload_review.h"
#include "unit/kubernetes/manifest_test_support.h"

namespace launchguard::kubernetes {
namespace {

namespace json = boost::json;

Profile profile_from(const std::string& yaml) {
    auto parsed = parse_profile(yaml, "test profile");
    EXPECT_TRUE(parsed) << parsed.error().to_string();
    return parsed ? *parsed : default_profile();
}

WorkloadReview review(const json::value& object, const Profile& profile) {
    auto result = review_workload(object, profile, {});
    EXPECT_TRUE(result) << result.error().to_string();
    return result ? *result : WorkloadReview{};
}

const Finding* finding_of(const WorkloadReview& r, const std::string& rule) {
    for (const auto& f : r.report.findings) {
        if (f.rule == rule) return &f;
    }
    return nullptr;
}

std::set<std::string> fired(const WorkloadReview& r) {
    std::set<std::string> ids;
    for (const auto& f : r.report.findings) ids.insert(f.rule);
    return ids;
}

bool not_applicable(const WorkloadReview& r, const std::string& rule) {
    return std::any_of(r.report.not_applicable.begin(), r.report.not_applicable.end(),
                       [&](const Unknown& n) { return n.rule == rule; });
}

// A PyTorchJob of one-GPU pods, no /dev/shm volume (64 MiB), the command
// given in `command` (a YAML flow sequence).
json::value pytorch_job(const std::string& command, const std::string& env = "[]") {
    std::string container =
        "          - name: pytorch\n"
        "            image: pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime\n"
        "            command: " +
        command +
        "\n"
        "            env: " +
        env +
        "\n"
        "            resources: {limits: {nvidia.com/gpu: 1}}\n";
    return parse_yaml(
        "apiVersion: kubeflow.org/v1\n"
        "kind: PyTorchJob\n"
        "metadata: {name: mnist}\n"
        "spec:\n"
        "  pytorchReplicaSpecs:\n"
        "    Master:\n"
        "      replicas: 1\n"
        "      template:\n"
        "        spec:\n"
        "          containers:\n" +
        container +
        "    Worker:\n"
        "      replicas: 2\n"
        "      template:\n"
        "        spec:\n"
        "          containers:\n" +
        container);
}

TEST(CommBackendReview, GlooJobGetsNoNcclRules) {
    const WorkloadReview gloo = review(
        pytorch_job(R"(["python", "/opt/mnist/src/mnist.py", "--epochs=1", "--backend", "gloo"])"), default_profile());
    EXPECT_FALSE(fired(gloo).count("shm.small"));
    EXPECT_TRUE(not_applicable(gloo, "shm.small"));
    EXPECT_TRUE(not_applicable(gloo, "net.fallback-unguarded"));
    const auto& reason = gloo.report.not_applicable.front().reason;
    EXPECT_NE(reason.find("the launch uses gloo, not NCCL"), std::string::npos) << reason;
    EXPECT_NE(reason.find("--backend gloo"), std::string::npos) << reason;
    // Rules about the pod itself still run.
    EXPECT_FALSE(not_applicable(gloo, "cpu.k8s-not-pinnable"));
}

TEST(CommBackendReview, NcclOrUnstatedBackendKeepsTheNcclRules) {
    const WorkloadReview nccl =
        review(pytorch_job(R"(["python", "mnist.py", "--backend", "nccl"])"), default_profile());
    EXPECT_TRUE(fired(nccl).count("shm.small"));
    EXPECT_TRUE(nccl.report.not_applicable.empty());
    const WorkloadReview unstated = review(pytorch_job(R"(["python", "mnist.py"])"), default_profile());
    EXPECT_TRUE(fired(unstated).count("shm.small"));
}

TEST(CommBackendReview, BackendFromPythonCodeAndFromAVariable) {
    const WorkloadReview code = review(
        pytorch_job(R"j(["python", "-c", "import torch.distributed as dist; dist.init_process_group('mpi'); run()"])j"),
        default_profile());
    EXPECT_FALSE(fired(code).count("shm.small"));
    EXPECT_TRUE(not_applicable(code, "shm.small"));
    const WorkloadReview variable = review(
        pytorch_job(R"(["sh", "-c", "python mnist.py --backend $BACKEND"])", R"([{name: BACKEND, value: gloo}])"),
        default_profile());
    EXPECT_FALSE(fired(variable).count("shm.small"));
}

// ---------------------------------------------------------------- node class

json::value burstable_pod() {
    return parse_yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: trainer}
spec:
  containers:
  - name: trainer
    image: nvcr.io/nvidia/pytorch:24.05-py3
    resources: {limits: {nvidia.com/gpu: 8}}
    volumeMounts: [{name: dshm, mountPath: /dev/shm}]
  volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 64Gi}}]
)");
}

TEST(NodeClass, NotPinnableIsInformationWhereTheProfileDoesNotStateThePolicy) {
    const WorkloadReview silent = review(burstable_pod(), default_profile());
    const Finding* info = finding_of(silent, "cpu.k8s-not-pinnable");
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->severity, Severity::info);
    EXPECT_NE(info->message.find("node.cpu_manager_policy"), std::string::npos) << info->message;

    const WorkloadReview statics =
        review(burstable_pod(), profile_from("name: s\nnode: {cpu_manager_policy: static}\n"));
    const Finding* warning = finding_of(statics, "cpu.k8s-not-pinnable");
    ASSERT_NE(warning, nullptr);
    EXPECT_EQ(warning->severity, Severity::warning);

    const WorkloadReview none = review(burstable_pod(), profile_from("name: n\nnode: {cpu_manager_policy: none}\n"));
    EXPECT_FALSE(fired(none).count("cpu.k8s-not-pinnable"));
}

TEST(NodeClass, MemlockJudgedAgainstTheRuntimesLimit) {
    const std::string rdma = "name: r\nnode: {rdma_nics: 8";
    const WorkloadReview silent = review(burstable_pod(), profile_from(rdma + "}\n"));
    const Finding* info = finding_of(silent, "mem.memlock");
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->severity, Severity::info);

    const WorkloadReview unlimited = review(burstable_pod(), profile_from(rdma + ", runtime_memlock: unlimited}\n"));
    EXPECT_FALSE(fired(unlimited).count("mem.memlock"));

    const WorkloadReview small = review(burstable_pod(), profile_from(rdma + ", runtime_memlock: 64KiB}\n"));
    const Finding* warning = finding_of(small, "mem.memlock");
    ASSERT_NE(warning, nullptr);
    EXPECT_EQ(warning->severity, Severity::warning);
    EXPECT_NE(warning->message.find("RLIMIT_MEMLOCK is 64 KiB"), std::string::npos) << warning->message;
}

TEST(NodeClass, ProfileKnobsAreCheckedAndRoundTrip) {
    EXPECT_FALSE(parse_profile("name: x\nnode: {cpu_manager_policy: dynamic}\n", "p"));
    EXPECT_FALSE(parse_profile("name: x\nnode: {runtime_memlock: lots}\n", "p"));
    Profile profile = profile_from("name: x\nnode: {cpu_manager_policy: static, runtime_memlock: 8MiB}\n");
    auto again = parse_profile_json(profile_to_json(profile), "json");
    ASSERT_TRUE(again) << again.error().to_string();
    EXPECT_EQ(*again, profile);
    Profile unlimited = profile_from("name: x\nnode: {runtime_memlock: unlimited}\n");
    ASSERT_TRUE(unlimited.node.runtime_memlock.has_value());
    EXPECT_FALSE(unlimited.node.runtime_memlock->has_value());
    auto unlimited_again = parse_profile_json(profile_to_json(unlimited), "json");
    ASSERT_TRUE(unlimited_again) << unlimited_again.error().to_string();
    EXPECT_EQ(*unlimited_again, unlimited);
}

}  // namespace
}  // namespace launchguard::kubernetes
