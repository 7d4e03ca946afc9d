// The Kubernetes adapter: a manifest becomes launches whose unknowns stay
// unknown, every K-context rule fires on a small manifest written for it and
// stays quiet on its fixed form, and the patch applies and settles.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <boost/json.hpp>

#include "engine/profile_loader.h"
#include "kubernetes/json_patch.h"
#include "kubernetes/manifest_documents.h"
#include "kubernetes/workload_review.h"
#include "support/launch_fixture.h"
#include "unit/kubernetes/manifest_test_support.h"
#include "unit/rules/node_rules_test_support.h"

namespace launchguard::kubernetes {
namespace {

namespace json = boost::json;

const Profile& profile_named(const std::string& name) {
    static std::map<std::string, Profile> cache;
    auto it = cache.find(name);
    if (it == cache.end()) {
        auto loaded = load_profile(name);
        EXPECT_TRUE(loaded) << loaded.error().to_string();
        it = cache.emplace(name, loaded ? *loaded : default_profile()).first;
    }
    return it->second;
}

// The example of docs/kubernetes.md, "What is patched": a node class whose
// topology file must be mounted.
const Profile& topology_profile() {
    static const Profile profile = [] {
        auto parsed = parse_profile(
            "name: ndv5-site\n"
            "topology:\n  required: true\n  host_path: /opt/microsoft/ndv5-topo.xml\n",
            "test profile");
        EXPECT_TRUE(parsed) << parsed.error().to_string();
        return parsed ? *parsed : default_profile();
    }();
    return profile;
}

WorkloadReview review(const json::value& object, const Profile& profile, ReviewOptions options = {}) {
    auto result = review_workload(object, profile, options);
    EXPECT_TRUE(result) << result.error().to_string();
    return result ? *result : WorkloadReview{};
}

std::set<std::string> fired(const WorkloadReview& review) {
    std::set<std::string> ids;
    for (const auto& finding : review.report.findings) ids.insert(finding.rule);
    return ids;
}

bool undecided(const WorkloadReview& review, const std::string& rule) {
    return std::any_of(review.report.unknowns.begin(), review.report.unknowns.end(),
                       [&](const Unknown& u) { return u.rule == rule; });
}

const Finding* finding_of(const WorkloadReview& review, const std::string& rule) {
    for (const auto& finding : review.report.findings) {
        if (finding.rule == rule) return &finding;
    }
    return nullptr;
}

std::string evidence(const Finding& finding, const std::string& key) { return testing::evidence_of(finding, key); }

// A single 8-GPU pod that passes every K rule under the h100-cx7-ib profile:
// Guaranteed with integer CPUs, 64 GiB /dev/shm, root with IPC_LOCK.
json::value good_pod() {
    return parse_yaml(R"(
apiVersion: v1
kind: Pod
metadata:
  name: trainer
  namespace: ml
spec:
  securityContext:
    runAsUser: 0
  containers:
  - name: trainer
    image: nvcr.io/nvidia/pytorch:24.05-py3
    resources:
      limits:
        nvidia.com/gpu: 8
        cpu: "32"
        memory: 256Gi
    securityContext:
      capabilities:
        add: ["IPC_LOCK"]
    volumeMounts:
    - name: dshm
      mountPath: /dev/shm
  volumes:
  - name: dshm
    emptyDir:
      medium: Memory
      sizeLimit: 64Gi
)");
}

json::object& first_container(json::value& object, const std::string& pod_pointer = "/spec") {
    return object.at_pointer(pod_pointer + "/containers/0").as_object();
}

void add_env(json::value& object, const std::string& name, const std::string& value,
             const std::string& pod_pointer = "/spec") {
    json::object& container = first_container(object, pod_pointer);
    if (!container.contains("env")) container["env"] = json::array{};
    container["env"].as_array().push_back(json::object{{"name", name}, {"value", value}});
}

// The good pod as a two-pod Job: a multi-node launch.
json::value good_job(int parallelism = 2) {
    json::value pod = good_pod();
    json::value job = json::object{{"apiVersion", "batch/v1"},
                                   {"kind", "Job"},
                                   {"metadata", json::object{{"name", "train"}}},
                                   {"spec", json::object{{"parallelism", parallelism},
                                                         {"completions", parallelism},
                                                         {"template", json::object{{"spec", pod.at("spec")}}}}}};
    return job;
}

constexpr const char* kJobPod = "/spec/template/spec";

// The image may carry a net plugin (libnccl-net.so), which would make
// NCCL_NET=IB wrong; NCCL_NET_PLUGIN=none says it does not.
void without_net_plugin(json::value& object, const std::string& pod_pointer = "/spec") {
    add_env(object, "NCCL_NET_PLUGIN", "none", pod_pointer);
}

// ---------------------------------------------------------------- each K rule fires, and stays quiet when fixed

struct EnvCase {
    const char* rule;
    const char* profile;
    const char* name;
    const char* bad;
    const char* good;  // nullptr: the variable left out
};

class EnvRuleTest : public ::testing::TestWithParam<EnvCase> {};

TEST_P(EnvRuleTest, FiresOnTheBadValueAndStaysQuietOnTheGoodOne) {
    const EnvCase& c = GetParam();
    json::value bad = good_job();
    add_env(bad, c.name, c.bad, kJobPod);
    WorkloadReview fired_review = review(bad, profile_named(c.profile));
    ASSERT_TRUE(fired(fired_review).count(c.rule)) << c.rule << " did not fire on " << c.name << "=" << c.bad;
    const Finding* finding = finding_of(fired_review, c.rule);
    EXPECT_EQ(evidence(*finding, "template"), "spec.template.spec.containers[0]");
    EXPECT_EQ(evidence(*finding, "container"), "trainer");

    json::value good = good_job();
    if (c.good != nullptr) add_env(good, c.name, c.good, kJobPod);
    WorkloadReview quiet = review(good, profile_named(c.profile));
    EXPECT_FALSE(fired(quiet).count(c.rule)) << c.rule << " fired on the fixed manifest";
    EXPECT_FALSE(undecided(quiet, c.rule)) << c.rule << " could not decide on the fixed manifest";
}

INSTANTIATE_TEST_SUITE_P(
    KubernetesRules, EnvRuleTest,
    ::testing::Values(EnvCase{"nccl.p2p-disabled", "h100-cx7-ib", "NCCL_P2P_DISABLE", "1", "0"},
                      EnvCase{"nccl.shm-disabled", "h100-cx7-ib", "NCCL_SHM_DISABLE", "1", nullptr},
                      EnvCase{"nccl.nvls-disabled", "h100-cx7-ib", "NCCL_NVLS_ENABLE", "0", nullptr},
                      EnvCase{"nccl.cumem-disabled", "gb200-nvl72", "NCCL_CUMEM_ENABLE", "0", nullptr},
                      EnvCase{"nccl.algo-restricted", "h100-cx7-ib", "NCCL_ALGO", "Ring", nullptr},
                      EnvCase{"nccl.proto-restricted", "h100-cx7-ib", "NCCL_PROTO", "Simple", nullptr},
                      EnvCase{"nccl.channels-capped", "h100-cx7-ib", "NCCL_MAX_NCHANNELS", "2", nullptr},
                      EnvCase{"nccl.buffsize-suspicious", "h100-cx7-ib", "NCCL_BUFFSIZE", "8M", nullptr},
                      EnvCase{"conf.lint", "h100-cx7-ib", "NCCL_IB_TIMEOUT", "22s", "22"},
                      EnvCase{"net.ib-disabled", "h100-cx7-ib", "NCCL_IB_DISABLE", "1", "0"},
                      EnvCase{"net.gdr-level-low", "h100-cx7-ib", "NCCL_NET_GDR_LEVEL", "LOC", nullptr},
                      EnvCase{"net.gdr-read-off", "h100-cx7-ib", "NCCL_NET_GDR_READ", "0", nullptr}),
    [](const ::testing::TestParamInfo<EnvCase>& param) {
        std::string name = param.param.rule;
        std::replace_if(
            name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
        return name;
    });

TEST(KubernetesRules, FallbackUnguardedFiresOnAMultiNodeJobWithoutNcclNet) {
    json::value job = good_job();
    // A net plugin in the image would be in charge: unknown, not a finding.
    EXPECT_TRUE(undecided(review(job, profile_named("h100-cx7-ib")), "net.fallback-unguarded"));
    without_net_plugin(job, kJobPod);
    // good_job sets no NCCL_NET; the h100 profile says the nodes have IB.
    EXPECT_TRUE(fired(review(job, profile_named("h100-cx7-ib"))).count("net.fallback-unguarded"));
    add_env(job, "NCCL_NET", "IB", kJobPod);
    EXPECT_FALSE(fired(review(job, profile_named("h100-cx7-ib"))).count("net.fallback-unguarded"));
    // One pod is one node: no inter-node fallback to guard against.
    json::value single = good_job(1);
    without_net_plugin(single, kJobPod);
    EXPECT_FALSE(fired(review(single, profile_named("h100-cx7-ib"))).count("net.fallback-unguarded"));
}

// ---------------------------------------------------------------- unknowns, per variable

const Unknown* unknown_of(const WorkloadReview& review, const std::string& rule) {
    for (const auto& u : review.report.unknowns) {
        if (u.rule == rule) return &u;
    }
    return nullptr;
}

TEST(KubernetesUnknowns, AValueFromMakesOnlyItsOwnVariableUnknown) {
    json::value job = good_job();
    without_net_plugin(job, kJobPod);
    json::object& container = first_container(job, kJobPod);
    container["env"].as_array().push_back(json::object{
        {"name", "NCCL_SOCKET_IFNAME"},
        {"valueFrom", json::object{{"fieldRef", json::object{{"fieldPath", "metadata.annotations['net']"}}}}}});
    container["env"].as_array().push_back(
        json::object{{"name", "NCCL_IB_QPS_PER_CONNECTION"},
                     {"valueFrom", json::object{{"configMapKeyRef", json::object{{"name", "x"}, {"key", "qps"}}}}}});
    const WorkloadReview reviewed = review(job, profile_named("h100-cx7-ib"));
    // The unset-NCCL_NET warning still fires next to them.
    EXPECT_TRUE(fired(reviewed).count("net.fallback-unguarded"));
    const Unknown* qps = unknown_of(reviewed, "net.qps-low");
    if (qps != nullptr) {
        EXPECT_NE(qps->reason.find("spec.template.spec.containers[0].env[2] (NCCL_IB_QPS_PER_CONNECTION): "
                                   "valueFrom.configMapKeyRef is read when the pod starts"),
                  std::string::npos)
            << qps->reason;
    }
}

TEST(KubernetesUnknowns, OnlyWhatMaySetAnyVariableWidensTheUnknown) {
    for (const std::string construct :
         {"source /etc/nccl.sh", ". /etc/nccl.sh", "module load nccl", "eval \"$X\"", "export $(cat /etc/nccl.env)"}) {
        json::value job = good_job();
        without_net_plugin(job, kJobPod);
        first_container(job, kJobPod)["command"] =
            json::array{"/bin/bash", "-c", "export NCCL_IB_HCA=mlx5_0\n" + construct + "\npython train.py"};
        const WorkloadReview reviewed = review(job, profile_named("h100-cx7-ib"));
        EXPECT_FALSE(fired(reviewed).count("net.fallback-unguarded")) << construct;
        const Unknown* u = unknown_of(reviewed, "net.fallback-unguarded");
        ASSERT_NE(u, nullptr) << construct;
        EXPECT_NE(u->reason.find("spec.template.spec.containers[0] command and args, line 2: "), std::string::npos)
            << u->reason;
        EXPECT_NE(u->reason.find("may set any variable"), std::string::npos) << u->reason;
    }
    // envFrom of a ConfigMap the review does not have.
    json::value job = good_job();
    without_net_plugin(job, kJobPod);
    first_container(job, kJobPod)["envFrom"] =
        json::array{json::object{{"configMapRef", json::object{{"name", "nccl-env"}}}}};
    const WorkloadReview with_env_from = review(job, profile_named("h100-cx7-ib"));
    const Unknown* u = unknown_of(with_env_from, "net.fallback-unguarded");
    ASSERT_NE(u, nullptr);
    EXPECT_NE(u->reason.find("spec.template.spec.containers[0].envFrom[0]: ConfigMap nccl-env (envFrom) may set any "
                             "variable"),
              std::string::npos)
        << u->reason;
}

TEST(KubernetesRules, RdmaResourcesAreEvidenceOfAnRdmaNode) {
    // The default profile names no RDMA NICs; an rdma/ib device does.
    json::value job = good_job();
    without_net_plugin(job, kJobPod);
    first_container(job, kJobPod)["resources"].as_object()["limits"].as_object()["rdma/ib"] = 1;
    const WorkloadReview reviewed = review(job, default_profile());
    ASSERT_TRUE(fired(reviewed).count("net.fallback-unguarded"));
    EXPECT_EQ(evidence(*finding_of(reviewed, "net.fallback-unguarded"), "rdma_devices"), "rdma/ib");
    first_container(job, kJobPod)["resources"].as_object()["limits"].as_object().erase("rdma/ib");
    EXPECT_TRUE(undecided(review(job, default_profile()), "net.fallback-unguarded"));
}

TEST(KubernetesRules, QpsLowAtScale) {
    // 64 Jobs x 1 pod x 8 GPUs = 512 GPUs on 800 Gb/s ConnectX-8.
    json::value jobset = parse_yaml(R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: pretrain}
spec:
  replicatedJobs:
  - name: workers
    replicas: 64
    template:
      spec:
        parallelism: 1
        completions: 1
        template:
          spec:
            containers:
            - name: trainer
              image: trainer:1
              env:
              - {name: NCCL_NET, value: IB}
              resources:
                limits: {nvidia.com/gpu: 8, cpu: "32", memory: 256Gi}
)");
    const WorkloadReview low = review(jobset, profile_named("b300-cx8"));
    ASSERT_TRUE(fired(low).count("net.qps-low"));
    EXPECT_EQ(evidence(*finding_of(low, "net.qps-low"), "template"),
              "spec.replicatedJobs[0].template.spec.template.spec.containers[0]");
    add_env(jobset, "NCCL_IB_QPS_PER_CONNECTION", "4", "/spec/replicatedJobs/0/template/spec/template/spec");
    EXPECT_FALSE(fired(review(jobset, profile_named("b300-cx8"))).count("net.qps-low"));
    // Eight Jobs are 64 GPUs: below the threshold.
    jobset.at_pointer("/spec/replicatedJobs/0").as_object()["replicas"] = 8;
    EXPECT_FALSE(fired(review(jobset, profile_named("b300-cx8"))).count("net.qps-low"));
}

TEST(KubernetesShape, AGpuTotalPast2To31SaturatesInsteadOfWrapping) {
    json::value jobset = parse_yaml(R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: pretrain}
spec:
  replicatedJobs:
  - name: workers
    replicas: 268435456
    template:
      spec:
        template:
          spec:
            containers:
            - name: trainer
              image: trainer:1
              env:
              - {name: NCCL_NET, value: IB}
              resources:
                limits: {nvidia.com/gpu: 8, cpu: "32", memory: 256Gi}
)");
    // 2^28 Jobs x 8 GPUs = 2^31 GPUs: one past the largest int.
    EXPECT_TRUE(fired(review(jobset, profile_named("b300-cx8"))).count("net.qps-low"));
    // Replicas x parallelism past 2^63 too.
    json::object& entry = jobset.at_pointer("/spec/replicatedJobs/0").as_object();
    entry["replicas"] = std::int64_t{4611686018427387904};
    entry["template"].as_object()["spec"].as_object()["parallelism"] = 4;
    EXPECT_TRUE(fired(review(jobset, profile_named("b300-cx8"))).count("net.qps-low"));
}

TEST(KubernetesRules, ShmSmallWithoutAMemoryVolume) {
    json::value pod = good_pod();
    EXPECT_FALSE(fired(review(pod, default_profile())).count("shm.small"));
    first_container(pod).erase("volumeMounts");
    const WorkloadReview reviewed = review(pod, default_profile());
    ASSERT_TRUE(fired(reviewed).count("shm.small"));
    EXPECT_NE(evidence(*finding_of(reviewed, "shm.small"), "shm_size").find("64 MiB"), std::string::npos);
    // hostIPC shares the node's /dev/shm, whose size the spec does not give.
    pod.at("spec").as_object()["hostIPC"] = true;
    const WorkloadReview host_ipc = review(pod, default_profile());
    EXPECT_FALSE(fired(host_ipc).count("shm.small"));
    EXPECT_TRUE(undecided(host_ipc, "shm.small"));
}

TEST(KubernetesRules, MemlockNeedsIpcLockAsRoot) {
    json::value pod = good_pod();
    const Profile& rdma = profile_named("h100-cx7-ib");
    EXPECT_FALSE(fired(review(pod, rdma)).count("mem.memlock"));
    pod.at("spec").as_object()["securityContext"].as_object()["runAsUser"] = 1000;
    const WorkloadReview non_root = review(pod, rdma);
    ASSERT_TRUE(fired(non_root).count("mem.memlock"));
    EXPECT_EQ(evidence(*finding_of(non_root, "mem.memlock"), "runs_as_root"), "no");
    json::value no_cap = good_pod();
    first_container(no_cap).erase("securityContext");
    EXPECT_TRUE(fired(review(no_cap, rdma)).count("mem.memlock"));
}

TEST(KubernetesRules, NotPinnableUnlessGuaranteedWithWholeCpus) {
    json::value pod = good_pod();
    EXPECT_FALSE(fired(review(pod, default_profile())).count("cpu.k8s-not-pinnable"));
    first_container(pod)["resources"].as_object()["limits"].as_object()["cpu"] = "31500m";
    const WorkloadReview fractional = review(pod, default_profile());
    ASSERT_TRUE(fired(fractional).count("cpu.k8s-not-pinnable"));
    EXPECT_EQ(evidence(*finding_of(fractional, "cpu.k8s-not-pinnable"), "fractional_cpus"),
              "spec.containers[0] (trainer): 31500m CPU");

    // A sidecar without resources demotes the pod to Burstable.
    json::value sidecar = good_pod();
    sidecar.at("spec").as_object()["containers"].as_array().push_back(
        json::object{{"name", "proxy"}, {"image", "envoy:1"}});
    const WorkloadReview burstable = review(sidecar, default_profile());
    ASSERT_TRUE(fired(burstable).count("cpu.k8s-not-pinnable"));
    EXPECT_EQ(evidence(*finding_of(burstable, "cpu.k8s-not-pinnable"), "breaks_guaranteed"),
              "spec.containers[1] (proxy): no CPU limit, no memory limit");
}

// Each GPU container of a pod gets the QoS finding: naming every container
// of the pod in each made the report grow with the square of their number.
TEST(KubernetesRules, NotPinnableNamesABoundedNumberOfContainers) {
    json::value pod = good_pod();
    json::array& containers = pod.at("spec").as_object()["containers"].as_array();
    for (int i = 1; i < 200; ++i) {
        containers.push_back(json::object{{"name", "gpu" + std::to_string(i)},
                                          {"image", "trainer:1"},
                                          {"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}});
    }
    const WorkloadReview reviewed = review(pod, default_profile());
    std::size_t findings = 0;
    for (const auto& finding : reviewed.report.findings) {
        if (finding.rule != "cpu.k8s-not-pinnable") continue;
        ++findings;
        std::size_t named = 0;
        for (const auto& [key, value] : finding.evidence) named += key == "breaks_guaranteed" ? 1 : 0;
        EXPECT_LE(named, 9U);
        EXPECT_LT(finding.message.size(), 2000U);
    }
    EXPECT_EQ(findings, 200U);
    EXPECT_EQ(evidence(*finding_of(reviewed, "cpu.k8s-not-pinnable"), "breaks_guaranteed"),
              "spec.containers[1] (gpu1): no CPU limit, no memory limit");
    const Finding& first = *finding_of(reviewed, "cpu.k8s-not-pinnable");
    EXPECT_EQ(first.evidence.back().second, "and 191 more containers");
}

TEST(KubernetesErrors, AnObjectWithMoreContainersThanTheBoundIsRefused) {
    json::value pod = good_pod();
    json::array& containers = pod.at("spec").as_object()["containers"].as_array();
    while (containers.size() < kMaxContainersPerObject) containers.push_back(containers.front());
    EXPECT_TRUE(review_workload(pod, default_profile(), {}));
    pod.at("spec").as_object()["initContainers"] = json::array{json::object{{"name", "init"}, {"image", "busybox"}}};
    auto refused = review_workload(pod, default_profile(), {});
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().to_string().find("more than 4096 containers"), std::string::npos)
        << refused.error().to_string();
    EXPECT_EQ(refused.error().field, "spec.containers");
}

// ---------------------------------------------------------------- topology: files from volumes

TEST(KubernetesRules, TopoFileMissingWhenTheConfigMapDoesNotProjectIt) {
    json::value pod = parse_yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    image: i
    env:
    - {name: NCCL_TOPO_FILE, value: /opt/nvidia-topology/topo.xml}
    resources: {limits: {nvidia.com/gpu: 8}}
    volumeMounts:
    - {name: topo, mountPath: /opt/nvidia-topology}
  volumes:
  - name: topo
    configMap:
      name: nvidia-topology
      items:
      - {key: ndv4, path: ndv4-topo.xml}
)");
    const WorkloadReview missing = review(pod, default_profile());
    ASSERT_TRUE(fired(missing).count("topo.file-missing"));
    EXPECT_EQ(evidence(*finding_of(missing, "topo.file-missing"), "found"), "missing");

    pod.at_pointer("/spec/volumes/0/configMap/items/0").as_object()["path"] = "topo.xml";
    const WorkloadReview present = review(pod, default_profile());
    EXPECT_FALSE(fired(present).count("topo.file-missing"));
    EXPECT_FALSE(undecided(present, "topo.file-missing"));
    // Its content is in the ConfigMap, not in the spec.
    EXPECT_TRUE(undecided(present, "topo.silently-ignored"));
}

std::string fixture_file(const std::string& relative) {
    std::ifstream in(testing::fixture_path(relative));
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// A ConfigMap among the reviewed objects carries the file itself.
json::value pod_with_topology_config_map() {
    json::value pod = good_pod();
    add_env(pod, "NCCL_TOPO_FILE", "/etc/nccl/topo.xml");
    first_container(pod)["volumeMounts"].as_array().push_back(
        json::object{{"name", "topo"}, {"mountPath", "/etc/nccl/topo.xml"}, {"subPath", "topo.xml"}});
    pod.at("spec").as_object()["volumes"].as_array().push_back(
        json::object{{"name", "topo"}, {"configMap", json::object{{"name", "nccl-topology"}}}});
    return pod;
}

TEST(KubernetesRules, SilentlyIgnoredReadsAnInlineConfigMap) {
    json::value pod = pod_with_topology_config_map();
    EXPECT_TRUE(undecided(review(pod, default_profile()), "topo.silently-ignored"));

    ReviewOptions with_data;
    // An hwloc export is not an NCCL topology file: NCCL reads it and ignores it.
    with_data.config_maps["ml"]["nccl-topology"] = {
        {"topo.xml", "<topology version=\"2.0\">\n  <object type=\"Machine\"/>\n</topology>\n"}};
    const WorkloadReview ignored = review(pod, default_profile(), with_data);
    ASSERT_TRUE(fired(ignored).count("topo.silently-ignored"));
    EXPECT_EQ(evidence(*finding_of(ignored, "topo.silently-ignored"), "template"), "spec.containers[0]");

    with_data.config_maps["ml"]["nccl-topology"] = {{"topo.xml", fixture_file("nccl-topo/ndv5-topo.xml")}};
    const WorkloadReview good = review(pod, default_profile(), with_data);
    EXPECT_FALSE(fired(good).count("topo.silently-ignored"));
    EXPECT_FALSE(undecided(good, "topo.silently-ignored"));

    // A key the ConfigMap does not have is not there.
    with_data.config_maps["ml"]["nccl-topology"] = {{"other.xml", "x"}};
    EXPECT_TRUE(fired(review(pod, default_profile(), with_data)).count("topo.file-missing"));
}

TEST(KubernetesEnvironment, AnEnvFromConfigMapTheReviewHasIsRead) {
    json::value job = good_job();
    first_container(job, kJobPod)["envFrom"] =
        json::array{json::object{{"configMapRef", json::object{{"name", "nccl-env"}}}}};
    ReviewOptions with_data;
    with_data.fix_blocking = true;
    with_data.config_maps[""]["nccl-env"] = {{"NCCL_IB_DISABLE", "1"}, {"NCCL_NET", "IB"}};
    const WorkloadReview reviewed = review(job, profile_named("h100-cx7-ib"), with_data);
    ASSERT_TRUE(fired(reviewed).count("net.ib-disabled"));
    EXPECT_FALSE(undecided(reviewed, "net.fallback-unguarded"));
    // Removing an env entry cannot unset what the ConfigMap sets: still a block.
    EXPECT_EQ(finding_of(reviewed, "net.ib-disabled")->action, Action::block);
}

TEST(KubernetesEnvironment, AnEnvEntryWithoutANameIsRefusedNamingItNeverSkipped) {
    // The API server requires a name, but validates only after the mutating
    // webhook: the review refuses the object (the webhook denies it at
    // /validate), never judges the container as if it had no such entry.
    json::value pod = good_pod();
    first_container(pod)["env"] = json::array{json::object{{"name", ""}, {"value", "x"}}};
    auto refused = review_workload(pod, default_profile(), {});
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().field, "spec.containers[0].env[0].name") << refused.error().to_string();
}

TEST(KubernetesEnvironment, AConfigMapOfAnotherNamespaceIsNotApplied) {
    json::value pod = good_job();
    pod.at("metadata").as_object()["namespace"] = "ml";
    first_container(pod, kJobPod)["envFrom"] =
        json::array{json::object{{"configMapRef", json::object{{"name", "nccl-env"}}}}};
    ReviewOptions other;
    other.config_maps["team-b"]["nccl-env"] = {{"NCCL_IB_DISABLE", "1"}};
    other.config_maps[""]["nccl-env"] = {{"NCCL_IB_DISABLE", "1"}};
    const WorkloadReview unread = review(pod, profile_named("h100-cx7-ib"), other);
    EXPECT_FALSE(fired(unread).count("net.ib-disabled"));
    EXPECT_TRUE(undecided(unread, "net.ib-disabled"));

    ReviewOptions same;
    same.config_maps["ml"]["nccl-env"] = {{"NCCL_IB_DISABLE", "1"}};
    EXPECT_TRUE(fired(review(pod, profile_named("h100-cx7-ib"), same)).count("net.ib-disabled"));
}

TEST(KubernetesRules, APathUnderNoVolumeIsUnknownNeverMissing) {
    json::value pod = good_pod();
    add_env(pod, "NCCL_TOPO_FILE", "/opt/topo.xml");
    const WorkloadReview reviewed = review(pod, default_profile());
    EXPECT_FALSE(fired(reviewed).count("topo.file-missing"));
    EXPECT_TRUE(undecided(reviewed, "topo.file-missing"));
}

TEST(KubernetesRules, IssueExampleTopologyRequiredBlocksThenPatchesThenPasses) {
    json::value pod = good_pod();
    // Under enforce, without fixing: a block naming topo.required.
    const WorkloadReview validate = review(pod, topology_profile());
    EXPECT_EQ(validate.report.decision, Decision::block);
    ASSERT_TRUE(fired(validate).count("topo.required"));
    EXPECT_EQ(finding_of(validate, "topo.required")->action, Action::block);
    EXPECT_TRUE(validate.patch.empty());

    // The mutating side fixes it: volume, mount and NCCL_TOPO_FILE.
    ReviewOptions mutate;
    mutate.fix_blocking = true;
    const WorkloadReview patched_review = review(pod, topology_profile(), mutate);
    EXPECT_EQ(patched_review.report.decision, Decision::patch);
    const json::value expected = json::parse(R"([
      {"op":"add","path":"/spec/volumes/-","value":{"name":"launchguard-ndv5-topo-xml",
        "hostPath":{"path":"/opt/microsoft/ndv5-topo.xml","type":"File"}}},
      {"op":"add","path":"/spec/containers/0/volumeMounts/-","value":{"name":"launchguard-ndv5-topo-xml",
        "mountPath":"/opt/microsoft/ndv5-topo.xml","readOnly":true}},
      {"op":"add","path":"/spec/containers/0/env","value":[{"name":"NCCL_TOPO_FILE",
        "value":"/opt/microsoft/ndv5-topo.xml"}]}
    ])");
    EXPECT_EQ(json::value(patched_review.patch), expected) << json::serialize(patched_review.patch);

    auto patched = apply_json_patch(pod, patched_review.patch);
    ASSERT_TRUE(patched) << patched.error().to_string();
    const WorkloadReview again = review(*patched, topology_profile());
    EXPECT_EQ(again.report.decision, Decision::allow) << json::serialize(*patched);
    EXPECT_TRUE(fired(again).empty());
    EXPECT_TRUE(review(*patched, topology_profile(), mutate).patch.empty());

    // The same pod under the default profile is allowed untouched.
    const WorkloadReview lax = review(pod, default_profile(), mutate);
    EXPECT_EQ(lax.report.decision, Decision::allow);
    EXPECT_TRUE(lax.patch.empty());
}

TEST(KubernetesRules, TopoNotPropagatedOnAzureWithoutTheMount) {
    const WorkloadReview reviewed = review(good_pod(), profile_named("azure-ndv5"));
    ASSERT_TRUE(fired(reviewed).count("topo.not-propagated"));
    EXPECT_EQ(evidence(*finding_of(reviewed, "topo.not-propagated"), "profile_host_path"),
              "/opt/microsoft/ndv5-topo.xml");
    ReviewOptions mutate;
    mutate.fix_blocking = true;
    auto patched = apply_json_patch(good_pod(), review(good_pod(), profile_named("azure-ndv5"), mutate).patch);
    ASSERT_TRUE(patched);
    const WorkloadReview fixed = review(*patched, profile_named("azure-ndv5"));
    EXPECT_FALSE(fired(fixed).count("topo.not-propagated"));
    EXPECT_FALSE(fired(fixed).count("topo.required"));
}

// ---------------------------------------------------------------- where the environment comes from

TEST(KubernetesEnvironment, EnvFromMakesAbsentVariablesUnknownNotUnset) {
    json::value job = good_job();
    first_container(job, kJobPod)["envFrom"] =
        json::array{json::object{{"configMapRef", json::object{{"name", "nccl-env"}}}}};
    const WorkloadReview reviewed = review(job, profile_named("h100-cx7-ib"));
    EXPECT_FALSE(fired(reviewed).count("net.fallback-unguarded"));
    ASSERT_TRUE(undecided(reviewed, "net.fallback-unguarded"));
    bool names_config_map =
        std::any_of(reviewed.report.unknowns.begin(), reviewed.report.unknowns.end(),
                    [](const Unknown& u) { return u.reason.find("ConfigMap nccl-env") != std::string::npos; });
    EXPECT_TRUE(names_config_map);
    // What env sets explicitly beats envFrom, so it is still decided.
    add_env(job, "NCCL_IB_DISABLE", "1", kJobPod);
    EXPECT_TRUE(fired(review(job, profile_named("h100-cx7-ib"))).count("net.ib-disabled"));
}

TEST(KubernetesEnvironment, ShellExportsInArgsCount) {
    json::value pod = good_pod();
    first_container(pod)["command"] = json::array{"/bin/bash", "-c"};
    first_container(pod)["args"] = json::array{"set -e\nexport NCCL_ALGO=Tree NCCL_DEBUG=INFO\npython train.py\n"};
    const WorkloadReview reviewed = review(pod, profile_named("h100-cx7-ib"));
    ASSERT_TRUE(fired(reviewed).count("nccl.algo-restricted"));
    EXPECT_EQ(evidence(*finding_of(reviewed, "nccl.algo-restricted"), "NCCL_ALGO"), "Tree");
}

TEST(KubernetesEnvironment, ASourcedScriptMayHoldAnything) {
    json::value job = good_job();
    first_container(job, kJobPod)["command"] =
        json::array{"bash", "-c", "source /usr/local/gib/scripts/set_nccl_env.sh && python t.py"};
    const WorkloadReview reviewed = review(job, profile_named("h100-cx7-ib"));
    EXPECT_FALSE(fired(reviewed).count("net.fallback-unguarded"));
    EXPECT_TRUE(undecided(reviewed, "net.fallback-unguarded"));
}

json::value mpi_job(const std::string& launcher_command) {
    json::value job = parse_yaml(R"(
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: nccl-tests}
spec:
  slotsPerWorker: 8
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - name: launcher
            image: nccl-tests:1
            env:
            - {name: NCCL_ALGO, value: Ring}
    Worker:
      replicas: 4
      template:
        spec:
          containers:
          - name: worker
            image: nccl-tests:1
            env:
            - {name: NCCL_NET, value: IB}
            resources:
              limits: {nvidia.com/gpu: 8, cpu: "32", memory: 256Gi}
            volumeMounts:
            - {name: dshm, mountPath: /dev/shm}
          volumes:
          - name: dshm
            emptyDir: {medium: Memory}
)");
    job.at_pointer("/spec/mpiReplicaSpecs/Launcher/template/spec/containers/0").as_object()["command"] =
        json::array{"/bin/sh", "-c", launcher_command};
    return job;
}

TEST(KubernetesEnvironment, WhatTheLauncherPassesWithMinusXReachesTheWorkers) {
    const WorkloadReview reviewed = review(mpi_job("mpirun --allow-run-as-root -np 32 -x NCCL_IB_DISABLE=1 -x "
                                                   "NCCL_ALGO -x LD_LIBRARY_PATH all_reduce_perf -b 8 -n 100"),
                                           profile_named("h100-cx7-ib"));
    ASSERT_TRUE(fired(reviewed).count("net.ib-disabled"));
    EXPECT_EQ(evidence(*finding_of(reviewed, "net.ib-disabled"), "template"),
              "spec.mpiReplicaSpecs.Worker.template.spec.containers[0]");
    // `-x NCCL_ALGO` forwards the launcher's own value.
    ASSERT_TRUE(fired(reviewed).count("nccl.algo-restricted"));
    EXPECT_EQ(evidence(*finding_of(reviewed, "nccl.algo-restricted"), "NCCL_ALGO"), "Ring");
    // The launcher requests no GPU: only the worker is judged.
    for (const auto& finding : reviewed.report.findings) {
        EXPECT_NE(evidence(finding, "template").find("Worker"), std::string::npos) << finding.rule;
    }
}

TEST(KubernetesEnvironment, TheLaunchersShellExpandsItsOwnVariables) {
    // aks-rdma-infiniband's pattern: a ConfigMap in the launcher's envFrom,
    // passed on with -x NAME=${NAME}.
    json::value job = mpi_job("mpirun -np 32 -x NCCL_IB_DISABLE=${NCCL_IB_DISABLE} all_reduce_perf");
    job.at_pointer("/spec/mpiReplicaSpecs/Launcher/template/spec/containers/0").as_object()["envFrom"] =
        json::array{json::object{{"configMapRef", json::object{{"name", "nccl-env-vars"}}}}};
    const WorkloadReview unread = review(job, profile_named("h100-cx7-ib"));
    EXPECT_FALSE(fired(unread).count("net.ib-disabled"));
    EXPECT_TRUE(undecided(unread, "net.ib-disabled"));

    ReviewOptions with_data;
    with_data.config_maps[""]["nccl-env-vars"] = {{"NCCL_IB_DISABLE", "1"}};
    const WorkloadReview expanded = review(job, profile_named("h100-cx7-ib"), with_data);
    ASSERT_TRUE(fired(expanded).count("net.ib-disabled"));
    EXPECT_EQ(evidence(*finding_of(expanded, "net.ib-disabled"), "NCCL_IB_DISABLE"), "1");
}

TEST(KubernetesEnvironment, AVariableTheLauncherSetsIsNotPatchedInTheWorkerEnv) {
    ReviewOptions mutate;
    mutate.fix_blocking = true;
    // net.ib-disabled's fix unsets a variable mpirun -x sets: no env patch can do it.
    const WorkloadReview reviewed =
        review(mpi_job("mpirun -np 32 -x NCCL_IB_DISABLE=1 all_reduce_perf"), profile_named("h100-cx7-ib"), mutate);
    ASSERT_TRUE(fired(reviewed).count("net.ib-disabled"));
    EXPECT_EQ(finding_of(reviewed, "net.ib-disabled")->action, Action::block);
    EXPECT_EQ(reviewed.report.decision, Decision::block);
}

// ---------------------------------------------------------------- the shape of the job

TEST(KubernetesShape, ReplicaCountsGiveNodesAndGpus) {
    const WorkloadReview mpi = review(mpi_job("mpirun -np 32 all_reduce_perf"), profile_named("h100-cx7-ib"));
    // 4 workers: multi-node, so the IB fallback guard matters (NCCL_NET is set: quiet, decided).
    EXPECT_FALSE(undecided(mpi, "net.fallback-unguarded"));

    json::value pytorch = parse_yaml(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: ddp}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - {name: pytorch, image: t, env: [{name: NCCL_NET_PLUGIN, value: none}], resources: {limits: {nvidia.com/gpu: 8}}}
    Worker:
      replicas: 1
      template:
        spec:
          containers:
          - {name: pytorch, image: t, env: [{name: NCCL_NET_PLUGIN, value: none}], resources: {limits: {nvidia.com/gpu: 8}}}
)");
    // Master + Worker = 2 nodes: the fallback guard applies to both templates.
    const WorkloadReview ddp = review(pytorch, profile_named("h100-cx7-ib"));
    int fallback = 0;
    for (const auto& finding : ddp.report.findings) fallback += finding.rule == "net.fallback-unguarded" ? 1 : 0;
    EXPECT_EQ(fallback, 2);
}

TEST(KubernetesShape, ABarePodRevealsItsShapeOnlyThroughWhatItsControllerWrote) {
    json::value pod = good_pod();
    without_net_plugin(pod);
    const WorkloadReview alone = review(pod, profile_named("h100-cx7-ib"));
    EXPECT_TRUE(undecided(alone, "net.fallback-unguarded"));
    add_env(pod, "PET_NNODES", "4");
    EXPECT_TRUE(fired(review(pod, profile_named("h100-cx7-ib"))).count("net.fallback-unguarded"));

    json::value torchrun = good_pod();
    without_net_plugin(torchrun);
    first_container(torchrun)["command"] =
        json::array{"torchrun", "--nnodes=2", "--nproc-per-node=8", "train.py", "--nnodes", "9"};
    EXPECT_TRUE(fired(review(torchrun, profile_named("h100-cx7-ib"))).count("net.fallback-unguarded"));
}

// Pods of a JobSet carry the number of its Jobs; each Job starts at least
// one pod, so two Jobs make a multi-node job, one Job says nothing more.
TEST(KubernetesShape, AJobSetPodIsMultiNodeWhenItsJobSetHasSeveralJobs) {
    json::value pod = good_pod();
    without_net_plugin(pod);
    auto& metadata = pod.as_object()["metadata"].as_object();
    metadata["labels"] = json::object{{"jobset.sigs.k8s.io/global-replicas", "1"}};
    EXPECT_TRUE(undecided(review(pod, profile_named("h100-cx7-ib")), "net.fallback-unguarded"));

    metadata["labels"] = json::object{{"jobset.sigs.k8s.io/global-replicas", "4"}};
    const WorkloadReview four = review(pod, profile_named("h100-cx7-ib"));
    ASSERT_TRUE(fired(four).count("net.fallback-unguarded"));
    bool evidence_counts_jobs = false;
    for (const auto& f : four.report.findings) {
        for (const auto& [key, value] : f.evidence) evidence_counts_jobs |= key == "job_nodes" && value == "4";
    }
    EXPECT_TRUE(evidence_counts_jobs);
    // Pods per Job are not on the Pod: a GPU total (which b300-cx8 compares
    // with 512 for its queue-pair rule) stays unknown, never "4 x 8".
    const WorkloadReview b300 = review(pod, profile_named("b300-cx8"));
    EXPECT_TRUE(undecided(b300, "net.qps-low"));

    // The controller also writes it as an annotation; the per-replicated-job
    // count is the fallback. Garbage is ignored, not trusted.
    metadata.erase("labels");
    metadata["annotations"] = json::object{{"jobset.sigs.k8s.io/replicatedjob-replicas", "2"}};
    EXPECT_TRUE(fired(review(pod, profile_named("h100-cx7-ib"))).count("net.fallback-unguarded"));
    metadata["annotations"] = json::object{{"jobset.sigs.k8s.io/global-replicas", "two"}};
    EXPECT_TRUE(undecided(review(pod, profile_named("h100-cx7-ib")), "net.fallback-unguarded"));
    metadata["annotations"] = json::object{{"jobset.sigs.k8s.io/global-replicas", "-3"}};
    EXPECT_TRUE(undecided(review(pod, profile_named("h100-cx7-ib")), "net.fallback-unguarded"));
}

TEST(KubernetesShape, APodWithoutGpusIsAllowedUntouched) {
    json::value pod = good_pod();
    first_container(pod)["resources"].as_object()["limits"].as_object().erase("nvidia.com/gpu");
    first_container(pod).erase("volumeMounts");  // would be shm.small on a GPU pod
    ReviewOptions mutate;
    mutate.fix_blocking = true;
    const WorkloadReview reviewed = review(pod, topology_profile(), mutate);
    EXPECT_TRUE(reviewed.supported);
    EXPECT_FALSE(reviewed.requests_gpus);
    EXPECT_TRUE(reviewed.report.findings.empty());
    EXPECT_EQ(reviewed.report.decision, Decision::allow);
    EXPECT_TRUE(reviewed.patch.empty());
    EXPECT_FALSE(reviewed.note.empty());
}

TEST(KubernetesShape, AmdGpusCountToo) {
    json::value pod = good_pod();
    auto& limits = first_container(pod)["resources"].as_object()["limits"].as_object();
    limits.erase("nvidia.com/gpu");
    limits["amd.com/gpu"] = "8";
    EXPECT_TRUE(review(pod, default_profile()).requests_gpus);
}

TEST(KubernetesShape, UnsupportedKindsAreSkippedNotErrors) {
    const WorkloadReview service =
        review(parse_yaml("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {}\n"), default_profile());
    EXPECT_FALSE(service.supported);
    EXPECT_NE(service.note.find("Service"), std::string::npos);
    EXPECT_TRUE(service.patch.empty());
    // A Volcano Job is not a batch/v1 Job.
    EXPECT_FALSE(review(parse_yaml("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nspec: {}\n"), default_profile())
                     .supported);
}

// ---------------------------------------------------------------- malformed input

TEST(KubernetesErrors, MalformedFieldsAreErrorsNamingTheField) {
    struct Case {
        const char* yaml;
        const char* field;
    };
    const Case cases[] = {
        {"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    env: [\"NCCL_ALGO=Ring\"]\n",
         "spec.containers[0].env[0]"},
        {"apiVersion: v1\nkind: Pod\nspec: {}\n", "spec.containers"},
        {"apiVersion: v1\nkind: Pod\nspec:\n  containers: {name: c}\n", "spec.containers"},
        {"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    volumeMounts: [{name: x, mountPath: /x}]\n",
         "spec.containers[0].volumeMounts[0].name"},
        {"apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nspec:\n  mpiReplicaSpecs:\n    Worker:\n      replicas: two\n"
         "      template: {spec: {containers: [{name: c}]}}\n",
         "spec.mpiReplicaSpecs.Worker.replicas"},
        {"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    resources: {limits: {nvidia.com/gpu: "
         "lots}}\n",
         "spec.containers[0].resources.limits.nvidia.com/gpu"},
        {"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    resources: {limits: {cpu: fast}}\n",
         "spec.containers[0].resources.limits.cpu"},
        {"kind: Pod\nspec: {}\n", "apiVersion"},
        {"apiVersion: batch/v1\nkind: Job\nspec: {}\n", "spec.template"},
    };
    for (const auto& c : cases) {
        auto result = review_workload(parse_yaml(c.yaml), default_profile(), {});
        ASSERT_FALSE(result) << c.yaml;
        EXPECT_EQ(result.error().field, c.field) << c.yaml << "\n" << result.error().to_string();
    }
    EXPECT_FALSE(review_workload(json::value("a string"), default_profile(), {}));
}

TEST(KubernetesDocuments, YamlScalarsResolveAsKubectlReadsThem) {
    auto documents = read_manifest_documents(
        "a: 8\nb: \"8\"\nc: yes\nd: ~\ne: 1.5\nf: 0x10\ng: 5120Mi\n---\n---\nkind: List\nitems: [{kind: Pod}, {kind: "
        "Service}]\n",
        "t.yaml");
    ASSERT_TRUE(documents);
    ASSERT_EQ(documents->size(), 3U);
    const json::object& first = documents->at(0).object.as_object();
    EXPECT_EQ(first.at("a"), json::value(8));
    EXPECT_EQ(first.at("b"), json::value("8"));
    EXPECT_EQ(first.at("c"), json::value(true));
    EXPECT_TRUE(first.at("d").is_null());
    EXPECT_EQ(first.at("e"), json::value(1.5));
    EXPECT_EQ(first.at("f"), json::value(16));
    EXPECT_EQ(first.at("g"), json::value("5120Mi"));
    EXPECT_EQ(documents->at(2).where, "document 3, items[1]");

    auto review_doc = read_manifest_documents(
        R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","object":{"kind":"Pod"}}})",
        "r.json");
    ASSERT_TRUE(review_doc);
    ASSERT_EQ(review_doc->size(), 1U);
    EXPECT_TRUE(review_doc->front().admission_review);

    auto bad = read_manifest_documents("a: [1, 2\n", "bad.yaml");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().file, "bad.yaml");
    EXPECT_FALSE(read_manifest_documents(R"({"kind":"AdmissionReview"})", "r.json"));
}

// Seven levels of ten aliases each: 560 bytes that expand to 10^7 nodes.
std::string alias_bomb(int levels) {
    std::string yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (int level = 1; level <= levels; ++level) {
        std::string previous = "*a" + std::to_string(level - 1);
        yaml += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
        for (int i = 0; i < 10; ++i) yaml += (i == 0 ? "" : ", ") + previous;
        yaml += "]\n";
    }
    return yaml;
}

TEST(KubernetesDocuments, AnAliasBombIsRefusedBeforeItExpands) {
    auto refused = read_manifest_documents(alias_bomb(7), "bomb.yaml");
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().file, "bomb.yaml");
    EXPECT_NE(refused.error().message.find("expands to more than 1000000 nodes"), std::string::npos)
        << refused.error().to_string();
    // Within the bound, aliases read as the values they name.
    auto small = read_manifest_documents(alias_bomb(2), "small.yaml");
    ASSERT_TRUE(small) << small.error().to_string();
    EXPECT_EQ(small->front().object.at("a2").as_array().size(), 10U);
    // The bound is over the whole file, not each document.
    std::string many;
    for (int i = 0; i < 12; ++i) many += "---\n" + alias_bomb(5);
    EXPECT_FALSE(read_manifest_documents(many, "many.yaml"));
    // An alias of a node inside its own anchor is a cycle: refused, not a crash.
    auto cycle = read_manifest_documents("a: &a [*a]\n", "cycle.yaml");
    ASSERT_FALSE(cycle);
    EXPECT_NE(cycle.error().message.find("levels deep"), std::string::npos) << cycle.error().to_string();
}

TEST(KubernetesDocuments, DeepNestingSaysItNestsTooDeep) {
    const std::string yaml = "spec:\n  a: " + std::string(1000, '[') + "1" + std::string(1000, ']') + "\n";
    auto refused = read_manifest_documents(yaml, "deep.yaml");
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().file, "deep.yaml");
    EXPECT_EQ(refused.error().line, 2);
    EXPECT_NE(refused.error().message.find("nests too deep"), std::string::npos) << refused.error().to_string();
}

TEST(KubernetesDocuments, MergeKeysAreResolvedAsKubectlDoes) {
    auto documents = read_manifest_documents(R"(
defaults: &defaults {nvidia.com/gpu: 8, cpu: "4"}
more: &more {memory: 1Gi, cpu: "8"}
single: {<<: *defaults, cpu: "2"}
list: {<<: [*defaults, *more]}
quoted: {"<<": *defaults}
)",
                                             "merge.yaml");
    ASSERT_TRUE(documents) << documents.error().to_string();
    const json::object& root = documents->front().object.as_object();
    // An explicit key wins over the merged one, wherever `<<` stands.
    EXPECT_EQ(root.at("single"), (json::value{{"nvidia.com/gpu", 8}, {"cpu", "2"}}));
    // Of a list of mappings, the earlier one wins.
    EXPECT_EQ(root.at("list"), (json::value{{"nvidia.com/gpu", 8}, {"cpu", "4"}, {"memory", "1Gi"}}));
    // A quoted "<<" is an ordinary key.
    EXPECT_TRUE(root.at("quoted").as_object().contains("<<"));
    auto bad = read_manifest_documents("a: {<<: 3}\n", "bad.yaml");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("merge key"), std::string::npos) << bad.error().to_string();
}

TEST(KubernetesDocuments, AGpuLimitGivenThroughAMergeKeyIsJudged) {
    auto documents = read_manifest_documents(R"(
apiVersion: v1
kind: Pod
metadata: {name: merged}
spec:
  containers:
  - name: trainer
    image: trainer:1
    resources:
      limits:
        <<: &gpus {nvidia.com/gpu: 8}
)",
                                             "merged.yaml");
    ASSERT_TRUE(documents) << documents.error().to_string();
    const WorkloadReview reviewed = review(documents->front().object, default_profile());
    EXPECT_TRUE(reviewed.requests_gpus);
}

TEST(KubernetesNodeLabels, SelectorAndSingleValueAffinity) {
    json::value job = mpi_job("mpirun all_reduce_perf");
    json::object& spec = job.at_pointer("/spec/mpiReplicaSpecs/Worker/template/spec").as_object();
    spec["nodeSelector"] = json::object{{"node.kubernetes.io/instance-type", "Standard_ND96isr_H100_v5"}};
    spec["affinity"] = json::parse(R"({"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{
        "nodeSelectorTerms":[{"matchExpressions":[
          {"key":"nvidia.com/gpu.product","operator":"In","values":["NVIDIA-H100-80GB-HBM3"]},
          {"key":"zone","operator":"In","values":["a","b"]}]}]}}})");
    auto labels = requested_node_labels(job);
    EXPECT_EQ(labels.size(), 2U);
    EXPECT_EQ(labels["node.kubernetes.io/instance-type"], "Standard_ND96isr_H100_v5");
    EXPECT_EQ(labels["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3");
    EXPECT_TRUE(requested_node_labels(json::value("x")).empty());
}

TEST(KubernetesUnknowns, MpirunMinusXOfAnUnknownValueSetsOnlyThatName) {
    // LD_LIBRARY_PATH is not in the launcher's env: only it is unknown.
    json::value job = mpi_job(
        "mpirun -np 32 -x NCCL_NET_PLUGIN=none -x LD_LIBRARY_PATH=/opt/extra/lib:$LD_LIBRARY_PATH "
        "all_reduce_perf");
    job.at_pointer("/spec/mpiReplicaSpecs/Worker/template/spec/containers/0/env").as_array().clear();
    const WorkloadReview reviewed = review(job, profile_named("h100-cx7-ib"));
    EXPECT_TRUE(fired(reviewed).count("net.fallback-unguarded")) << reviewed.report.unknowns.size();
}

}  // namespace
}  // namespace launchguard::kubernetes
