// `launchguard review` on Kubernetes manifests, as users and CI run it: the
// real manifests of tests/fixtures/k8s with their findings pinned (each judged
// by hand, see the comments), patches applied by python3-jsonpatch and
// reviewed again, exit codes, and malformed input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "support/launch_fixture.h"
#include "support/run_command.h"

namespace launchguard {
namespace {

using testing::cli;
using testing::fixture_path;
using testing::quote_arg;
using testing::run_command;

namespace json = boost::json;

std::string k8s(const std::string& name) { return quote_arg(fixture_path("k8s/" + name)); }
std::string ndv5_profile() { return " --profile " + k8s("ndv5-topology-profile.yaml"); }

// Per document: "Kind: rule=action rule=action" (sorted), or "Kind: skipped" / "Kind: no GPU".
std::vector<std::string> summarize(const std::string& out) {
    boost::system::error_code ec;
    json::value value = json::parse(out, ec);
    EXPECT_FALSE(ec) << "not JSON: " << out;
    std::vector<std::string> lines;
    if (ec) return lines;
    for (const auto& doc : value.at("documents").as_array()) {
        std::string line = std::string(doc.at("kind").as_string()) + ":";
        if (!doc.at("supported").as_bool()) {
            line += " skipped";
        } else if (!doc.at("requests_gpus").as_bool()) {
            line += " no GPU";
        } else {
            std::multiset<std::string> findings;
            for (const auto& f : doc.at("report").at("findings").as_array()) {
                findings.insert(std::string(f.at("rule").as_string()) + "=" + std::string(f.at("action").as_string()));
            }
            for (const auto& f : findings) line += " " + f;
        }
        lines.push_back(line);
    }
    return lines;
}

struct PinnedFixture {
    const char* file;
    int exit_default;
    std::vector<std::string> with_default;
    int exit_ndv5;
    std::vector<std::string> with_ndv5;
};

// Judged by hand:
// - aks-rdma-ib-rendered: the workers request only GPUs and RDMA devices, so
//   their pod is not Guaranteed; the launcher passes NCCL_TOPO_FILE with -x
//   and the workers mount that file from a ConfigMap, so a required topology
//   file is in effect. Its other NCCL values come from an envFrom ConfigMap
//   through -x NAME=${NAME}: unknown, not findings.
// - awsome-nccl-tests: memory but no CPU limit (not Guaranteed); /dev/shm is
//   the node's (hostPath), so its size is unknown; EFA is not IB. No topology
//   file: under the ndv5 profile topo.required and topo.not-propagated block.
// - gke-rdma-nccl-test: two Services skipped; each pod requests CPU but has
//   no limits; its NCCL settings come from a sourced script, so a required
//   topology file cannot be judged: unknown, never a block.
// - gke-tcpxo-nccl-test: the TCPXO daemon sidecar has no resources; no
//   topology file anywhere (the heredoc in the command is data).
// - kubeflow-pytorch_job_mnist_nccl: Master and Worker each get 64 MiB of
//   /dev/shm (no volume): shm.small patches both.
// - kubeflow-simple: no GPU.
const std::vector<PinnedFixture>& pinned() {
    static const std::vector<PinnedFixture> fixtures = {
        {"aks-rdma-ib-rendered.yaml",
         0,
         {"ConfigMap: skipped", "MPIJob: cpu.k8s-not-pinnable=warn"},
         0,
         {"ConfigMap: skipped", "MPIJob: cpu.k8s-not-pinnable=warn"}},
        {"awsome-nccl-tests.yaml",
         0,
         {"MPIJob: cpu.k8s-not-pinnable=warn nccl.debug-verbose=warn"},
         1,
         {"MPIJob: cpu.k8s-not-pinnable=warn nccl.debug-verbose=warn topo.not-propagated=block topo.required=block"}},
        {"gke-rdma-nccl-test.yaml",
         0,
         {"Service: skipped", "Service: skipped", "Pod: cpu.k8s-not-pinnable=warn", "Pod: cpu.k8s-not-pinnable=warn"},
         0,
         {"Service: skipped", "Service: skipped", "Pod: cpu.k8s-not-pinnable=warn", "Pod: cpu.k8s-not-pinnable=warn"}},
        {"gke-tcpxo-nccl-test.yaml",
         0,
         {"Service: skipped", "Service: skipped", "Pod: cpu.k8s-not-pinnable=warn", "Pod: cpu.k8s-not-pinnable=warn"},
         1,
         {"Service: skipped", "Service: skipped",
          "Pod: cpu.k8s-not-pinnable=warn topo.not-propagated=block topo.required=block",
          "Pod: cpu.k8s-not-pinnable=warn topo.not-propagated=block topo.required=block"}},
        {"kubeflow-pytorch_job_mnist_nccl.yaml",
         3,
         {"PyTorchJob: cpu.k8s-not-pinnable=warn cpu.k8s-not-pinnable=warn shm.small=patch shm.small=patch"},
         1,
         {"PyTorchJob: cpu.k8s-not-pinnable=warn cpu.k8s-not-pinnable=warn shm.small=patch shm.small=patch "
          "topo.not-propagated=block topo.not-propagated=block topo.required=block topo.required=block"}},
        {"kubeflow-simple.yaml", 0, {"PyTorchJob: no GPU"}, 0, {"PyTorchJob: no GPU"}},
        {"gpu-pod-without-topology.yaml", 0, {"Pod:"}, 1, {"Pod: topo.not-propagated=block topo.required=block"}},
    };
    return fixtures;
}

TEST(ReviewCli, EveryFixtureHasItsPinnedFindings) {
    for (const auto& fixture : pinned()) {
        auto lax = run_command(cli() + " review --format json " + k8s(fixture.file));
        EXPECT_EQ(lax.exit_code, fixture.exit_default) << fixture.file << "\n" << lax.err;
        EXPECT_EQ(summarize(lax.out), fixture.with_default) << fixture.file;

        auto strict = run_command(cli() + " review --format json" + ndv5_profile() + " " + k8s(fixture.file));
        EXPECT_EQ(strict.exit_code, fixture.exit_ndv5) << fixture.file << "\n" << strict.err;
        EXPECT_EQ(summarize(strict.out), fixture.with_ndv5) << fixture.file;

        auto text = run_command(cli() + " review " + k8s(fixture.file));
        EXPECT_EQ(text.exit_code, fixture.exit_default) << fixture.file;
        EXPECT_NE(text.out.find("== "), std::string::npos) << fixture.file;
    }
}

std::string temp_path(const std::string& name) {
    return ::testing::TempDir() + "launchguard-review-" + std::to_string(::getpid()) + "-" + name;
}

// The patch of every document, applied by python3-jsonpatch (not by
// launchguard), reviewed again: nothing left to patch, nothing blocks.
TEST(ReviewCli, PatchesApplyIndependentlyAndSettle) {
    const std::string apply = quote_arg(std::string(LAUNCHGUARD_SOURCE_DIR) + "/tests/support/apply_json_patches.py");
    int patched_documents = 0;
    for (const auto& fixture : pinned()) {
        for (const std::string& profile : {std::string(), ndv5_profile()}) {
            const std::string lines = temp_path("patch.lines");
            const std::string patched = temp_path("patched.json");
            auto patch = run_command(cli() + " review --patch" + profile + " " + k8s(fixture.file));
            ASSERT_NE(patch.exit_code, 2) << fixture.file << patch.err;
            std::ofstream(lines) << patch.out;
            auto applied = run_command("python3 " + apply + " " + k8s(fixture.file) + " " + quote_arg(lines));
            ASSERT_EQ(applied.exit_code, 0) << fixture.file << profile << ": " << applied.err;
            std::ofstream(patched) << applied.out;
            auto again = run_command(cli() + " review --patch" + profile + " " + quote_arg(patched));
            EXPECT_EQ(again.exit_code, 0) << fixture.file << profile << "\n" << again.err;
            std::istringstream out(again.out);
            for (std::string line; std::getline(out, line);) EXPECT_EQ(line, "[]") << fixture.file << profile;
            if (patch.exit_code == 3) ++patched_documents;
        }
    }
    EXPECT_GE(patched_documents, 4);  // awsome, tcpxo and the two pytorch runs at least
}

// The same with the launch gate (--gate-image, as the mutating webhook of a
// site that enables it): the patches apply with python3-jsonpatch, the
// patched manifests (and `--patched` output) reviewed again patch nothing.
TEST(ReviewCli, GatePatchesApplyIndependentlyAndSettle) {
    const std::string apply = quote_arg(std::string(LAUNCHGUARD_SOURCE_DIR) + "/tests/support/apply_json_patches.py");
    const std::string gate = " --gate-image registry.example/launchguard:1.0";
    std::vector<std::string> files = {"gate-workloads.yaml"};
    for (const auto& fixture : pinned()) files.emplace_back(fixture.file);
    int gated = 0;
    for (const auto& file : files) {
        for (const std::string& profile : {std::string(), ndv5_profile()}) {
            const std::string lines = temp_path("gate-patch.lines");
            const std::string patched = temp_path("gate-patched.json");
            auto patch = run_command(cli() + " review --patch" + gate + profile + " " + k8s(file));
            ASSERT_NE(patch.exit_code, 2) << file << patch.err;
            if (patch.out.find("launchguard-gate-install") != std::string::npos) ++gated;
            std::ofstream(lines) << patch.out;
            auto applied = run_command("python3 " + apply + " " + k8s(file) + " " + quote_arg(lines));
            ASSERT_EQ(applied.exit_code, 0) << file << profile << ": " << applied.err;
            std::ofstream(patched) << applied.out;
            auto again = run_command(cli() + " review --patch" + gate + profile + " " + quote_arg(patched));
            EXPECT_EQ(again.exit_code, 0) << file << profile << "\n" << again.err;
            std::istringstream out(again.out);
            for (std::string line; std::getline(out, line);) EXPECT_EQ(line, "[]") << file << profile;

            const std::string written = temp_path("gate-written.yaml");
            auto whole = run_command(cli() + " review --patched" + gate + profile + " " + k8s(file));
            ASSERT_NE(whole.exit_code, 2) << file << whole.err;
            std::ofstream(written) << whole.out;
            auto settled = run_command(cli() + " review --patch" + gate + profile + " " + quote_arg(written));
            EXPECT_EQ(settled.exit_code, 0) << file << profile << "\n" << settled.err;
            std::istringstream settled_out(settled.out);
            for (std::string line; std::getline(settled_out, line);) EXPECT_EQ(line, "[]") << file << profile;
        }
    }
    EXPECT_GE(gated, 10);  // every fixture with a GPU container, under both profiles
}

TEST(ReviewCli, TheGateIsNamedInTheReport) {
    auto text = run_command(cli() + " review --patched --gate-image r/lg:1 --gate-on-error block " +
                            k8s("gate-workloads.yaml"));
    EXPECT_NE(text.exit_code, 2) << text.err;
    EXPECT_NE(text.err.find("launch gate: added to 1 pod template(s)"), std::string::npos) << text.err;
    EXPECT_NE(text.err.find("launch gate: not added to a container with no command (the image's ENTRYPOINT runs) "
                            "and a postStart hook of its own, so only its spec was judged: spec.containers[2]"),
              std::string::npos)
        << text.err;
    EXPECT_NE(text.out.find("--on-error"), std::string::npos);
    auto bad =
        run_command(cli() + " review --gate-image r/lg:1 --gate-on-error sometimes " + k8s("gate-workloads.yaml"));
    EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

TEST(ReviewCli, AContainerOnTheGatesVolumeFailsTheReviewNamingIt) {
    const std::string pod = temp_path("gate-volume-pod.yaml");
    std::ofstream(pod) << "apiVersion: v1\nkind: Pod\nmetadata: {name: hostile}\nspec:\n"
                          "  initContainers:\n  - {name: evil, image: busybox, command: [sh], volumeMounts: "
                          "[{name: launchguard-gate, mountPath: /launchguard}]}\n"
                          "  containers:\n  - {name: c, image: i, command: [python], resources: {limits: "
                          "{nvidia.com/gpu: 1}}}\n";
    for (const std::string gate : {"", " --gate-image r/lg:1"}) {
        auto r = run_command(cli() + " review" + gate + " " + quote_arg(pod));
        EXPECT_EQ(r.exit_code, 1) << gate << r.out << r.err;
        EXPECT_NE((r.out + r.err).find("k8s.gate-bypass"), std::string::npos) << r.out << r.err;
        EXPECT_NE((r.out + r.err).find("spec.initContainers[0] (evil)"), std::string::npos) << r.out << r.err;
    }
}

TEST(ReviewCli, IssueExampleBlocksThenPatchesThenPasses) {
    const std::string pod = k8s("gpu-pod-without-topology.yaml");
    auto validate = run_command(cli() + " review" + ndv5_profile() + " " + pod);
    EXPECT_EQ(validate.exit_code, 1);
    EXPECT_NE(validate.out.find("topo.required"), std::string::npos) << validate.out;

    auto mutate = run_command(cli() + " review --patch" + ndv5_profile() + " " + pod);
    EXPECT_EQ(mutate.exit_code, 3) << mutate.err;
    json::value patch = json::parse(mutate.out);
    const json::value expected = json::parse(R"([
      {"op":"add","path":"/spec/volumes/-","value":{"name":"launchguard-ndv5-topo-xml",
        "hostPath":{"path":"/opt/microsoft/ndv5-topo.xml","type":"File"}}},
      {"op":"add","path":"/spec/containers/0/volumeMounts/-","value":{"name":"launchguard-ndv5-topo-xml",
        "mountPath":"/opt/microsoft/ndv5-topo.xml","readOnly":true}},
      {"op":"add","path":"/spec/containers/0/env","value":[{"name":"NCCL_TOPO_FILE","value":"/opt/microsoft/ndv5-topo.xml"}]}
    ])");
    EXPECT_EQ(patch, expected) << mutate.out;

    auto passes = run_command(cli() + " review --patched" + ndv5_profile() + " " + pod + " | " + cli() + " review" +
                              ndv5_profile() + " -");
    EXPECT_EQ(passes.exit_code, 0) << passes.out << passes.err;
    // YAML in, YAML out, with the comments before the pod.
    auto patched = run_command(cli() + " review --patched" + ndv5_profile() + " " + pod);
    EXPECT_EQ(patched.out.rfind("# Written for launchguard", 0), 0U) << patched.out;
    EXPECT_NE(patched.out.find("\napiVersion: v1\nkind: Pod\n"), std::string::npos) << patched.out;

    EXPECT_EQ(run_command(cli() + " review " + pod).exit_code, 0);
}

TEST(ReviewCli, AnAdmissionReviewIsJudgedByItsObject) {
    const std::string path = temp_path("review.json");
    {
        std::ifstream pod_yaml(fixture_path("k8s/gpu-pod-without-topology.yaml"));
        std::ofstream out(path);
        // A pod in JSON, wrapped as the API server sends it.
        out << R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"7",
          "kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE",
          "object":{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"t-"},"spec":{"containers":[
            {"name":"t","image":"i","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}}})";
    }
    auto result = run_command(cli() + " review --format json " + quote_arg(path));
    EXPECT_EQ(result.exit_code, 3) << result.out << result.err;  // shm.small patches
    EXPECT_EQ(summarize(result.out), std::vector<std::string>{"Pod: cpu.k8s-not-pinnable=warn shm.small=patch"});
    EXPECT_NE(result.out.find("request.object"), std::string::npos);
}

// A ConfigMap reviewed with the workload gives its data: here a topology
// file NCCL would ignore (an hwloc export), which blocks.
TEST(ReviewCli, ConfigMapsAmongTheInputsAreRead) {
    const std::string path = temp_path("with-config-map.yaml");
    std::ofstream(path) << R"(apiVersion: v1
kind: ConfigMap
metadata: {name: nccl-topology}
data:
  topo.xml: |
    <topology version="2.0">
      <object type="Machine"/>
    </topology>
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    image: i
    env: [{name: NCCL_TOPO_FILE, value: /opt/topo/topo.xml}]
    resources: {limits: {nvidia.com/gpu: 8, cpu: "8", memory: 64Gi}}
    volumeMounts:
    - {name: topo, mountPath: /opt/topo}
    - {name: dshm, mountPath: /dev/shm}
  volumes:
  - {name: topo, configMap: {name: nccl-topology}}
  - {name: dshm, emptyDir: {medium: Memory, sizeLimit: 8Gi}}
)";
    auto result = run_command(cli() + " review --format json " + quote_arg(path));
    EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
    EXPECT_EQ(summarize(result.out),
              (std::vector<std::string>{"ConfigMap: skipped", "Pod: topo.silently-ignored=block"}));
}

// A kind: List is one document of its file: its --patch line addresses the
// items inside it, so python3-jsonpatch applies it to the List as written.
TEST(ReviewCli, APatchOfAListAddressesItsItems) {
    const std::string path = temp_path("list.yaml");
    std::ofstream(path) << R"(apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata: {name: s}
- apiVersion: v1
  kind: Pod
  metadata: {name: p}
  spec:
    containers:
    - name: c
      image: i
      resources: {limits: {nvidia.com/gpu: 8, cpu: "8", memory: 64Gi}}
---
apiVersion: v1
kind: Service
metadata: {name: after}
)";
    auto patch = run_command(cli() + " review --patch " + quote_arg(path));
    ASSERT_EQ(patch.exit_code, 3) << patch.out << patch.err;  // shm.small patches
    std::vector<std::string> lines;
    std::istringstream out(patch.out);
    for (std::string line; std::getline(out, line);) lines.push_back(line);
    ASSERT_EQ(lines.size(), 2U) << patch.out;  // the List, then the Service
    EXPECT_NE(lines[0].find("\"path\":\"/items/1/spec/"), std::string::npos) << lines[0];
    EXPECT_EQ(lines[1], "[]");

    const std::string apply = quote_arg(std::string(LAUNCHGUARD_SOURCE_DIR) + "/tests/support/apply_json_patches.py");
    const std::string patch_lines = temp_path("list.lines");
    const std::string patched = temp_path("list-patched.json");
    std::ofstream(patch_lines) << patch.out;
    auto applied = run_command("python3 " + apply + " " + quote_arg(path) + " " + quote_arg(patch_lines));
    ASSERT_EQ(applied.exit_code, 0) << applied.err;
    std::ofstream(patched) << applied.out;
    auto again = run_command(cli() + " review --patch " + quote_arg(patched));
    EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
    EXPECT_EQ(again.out, "[]\n[]\n");
}

// A pod reads ConfigMaps of its own namespace only: NCCL_IB_DISABLE=1 from
// another namespace's ConfigMap must not decide net.ib-disabled.
TEST(ReviewCli, AConfigMapOfAnotherNamespaceIsNotRead) {
    const std::string path = temp_path("other-namespace.yaml");
    std::ofstream(path) << R"(apiVersion: v1
kind: ConfigMap
metadata: {name: nccl-env, namespace: team-b}
data: {NCCL_IB_DISABLE: "1"}
---
apiVersion: batch/v1
kind: Job
metadata: {name: p, namespace: team-a}
spec:
  parallelism: 2
  completions: 2
  template:
    spec:
      containers:
      - name: c
        image: i
        envFrom: [{configMapRef: {name: nccl-env}}]
        env: [{name: NCCL_NET_PLUGIN, value: none}]
        resources: {limits: {nvidia.com/gpu: 8, cpu: "8", memory: 64Gi}}
        volumeMounts: [{name: dshm, mountPath: /dev/shm}]
      volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 8Gi}}]
)";
    auto other = run_command(cli() + " review --format json --profile h100-cx7-ib " + quote_arg(path));
    auto fires_ib_disabled = [](const std::string& out) {
        for (const auto& line : summarize(out)) {
            if (line.find("net.ib-disabled=") != std::string::npos) return true;
        }
        return false;
    };
    EXPECT_FALSE(fires_ib_disabled(other.out)) << other.out;
    EXPECT_NE(other.exit_code, 2) << other.err;

    // In the pod's namespace it is read.
    std::string same_text;
    {
        std::ifstream in(path);
        std::stringstream text;
        text << in.rdbuf();
        same_text = text.str();
    }
    same_text.replace(same_text.find("team-b"), 6, "team-a");
    const std::string same = temp_path("same-namespace.yaml");
    std::ofstream(same) << same_text;
    auto read = run_command(cli() + " review --format json --profile h100-cx7-ib " + quote_arg(same));
    EXPECT_TRUE(fires_ib_disabled(read.out)) << read.out;
}

// Hostile YAML is refused quickly, naming the file and what is wrong.
TEST(ReviewCli, AnAliasBombAndDeepNestingAreRefusedNamingTheFile) {
    std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (int level = 1; level <= 7; ++level) {
        bomb += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
        for (int i = 0; i < 10; ++i) bomb += (i == 0 ? "*a" : ", *a") + std::to_string(level - 1);
        bomb += "]\n";
    }
    const std::string bomb_path = temp_path("bomb.yaml");
    std::ofstream(bomb_path) << bomb;
    auto refused = run_command("timeout 30 " + cli() + " review " + quote_arg(bomb_path));
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
    EXPECT_NE(refused.err.find(bomb_path), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("expands to more than 1000000 nodes"), std::string::npos) << refused.err;

    const std::string deep_path = temp_path("deep.yaml");
    std::ofstream(deep_path) << "kind: Pod\nspec: " + std::string(1000, '[') + std::string(1000, ']') + "\n";
    auto deep = run_command(cli() + " review " + quote_arg(deep_path));
    EXPECT_EQ(deep.exit_code, 2) << deep.err;
    EXPECT_NE(deep.err.find(deep_path + ":2:"), std::string::npos) << deep.err;
    EXPECT_NE(deep.err.find("nests too deep"), std::string::npos) << deep.err;
}

// Judging each GPU container listed every container of the pod in its
// finding: 2,000 containers made a report of 4 million lines (1.2 GB).
TEST(ReviewCli, AWidePodCostsLinearlyAndBeyondTheBoundIsRefused) {
    auto wide_pod = [](int containers) {
        std::string yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: wide}\nspec:\n  containers:\n";
        for (int i = 0; i < containers; ++i) {
            yaml += "  - {name: c" + std::to_string(i) + ", image: i, resources: {limits: {nvidia.com/gpu: 1}}}\n";
        }
        return yaml;
    };
    const std::string path = temp_path("wide.yaml");
    std::ofstream(path) << wide_pod(2000);
    auto wide = run_command("timeout 60 " + cli() + " review --format json " + quote_arg(path));
    EXPECT_NE(wide.exit_code, 2) << wide.err;
    EXPECT_NE(wide.exit_code, 124) << "did not finish within 60 s";
    EXPECT_LT(wide.out.size(), 40U << 20);

    std::ofstream(path) << wide_pod(4097);
    auto refused = run_command(cli() + " review " + quote_arg(path));
    EXPECT_EQ(refused.exit_code, 2);
    EXPECT_NE(refused.err.find("more than 4096 containers"), std::string::npos) << refused.err;
}

TEST(ReviewCli, MalformedInputIsExitTwoNamingTheField) {
    struct Case {
        const char* text;
        const char* named;
    };
    const Case cases[] = {
        {"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    env: [NCCL_ALGO=Ring]\n",
         "spec.containers[0].env[0]"},
        {"apiVersion: v1\nkind: Pod\nspec:\n  containers: [}\n", "not YAML or JSON"},
        {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{}}", "request.object"},
        {"apiVersion: v1\nkind: Pod\nspec:\n  volumes: [{name: v, emptyDir: {sizeLimit: huge}}]\n  containers: [{name: "
         "c}]\n",
         "spec.volumes[0].emptyDir.sizeLimit"},
    };
    for (const auto& c : cases) {
        const std::string path = temp_path("bad.yaml");
        std::ofstream(path) << c.text;
        auto result = run_command(cli() + " review " + quote_arg(path));
        EXPECT_EQ(result.exit_code, 2) << c.text;
        EXPECT_NE(result.err.find(c.named), std::string::npos) << result.err;
    }
    EXPECT_EQ(run_command(cli() + " review /no/such/file.yaml").exit_code, 2);
    EXPECT_EQ(run_command(cli() + " review --patch --patched " + k8s("kubeflow-simple.yaml")).exit_code, 2);
}

// --patched writes every file or nothing: a document that cannot be
// reviewed after one that is patched leaves stdout empty.
TEST(ReviewCli, PatchedWritesNothingWhenAnyDocumentFails) {
    const std::string path = temp_path("half.yaml");
    std::ofstream(path) << R"(apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: c, image: i, resources: {limits: {nvidia.com/gpu: 8}}}
---
apiVersion: v1
kind: Pod
metadata: {name: q}
spec:
  containers:
  - {name: c, image: i, env: [NCCL_ALGO=Ring], resources: {limits: {nvidia.com/gpu: 8}}}
)";
    auto result = run_command(cli() + " review --patched " + quote_arg(path));
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_EQ(result.out, "");
    EXPECT_NE(result.err.find("document 2"), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("nothing written"), std::string::npos) << result.err;
}

// JSON in, JSON out: a JSON stream (as kubectl reads one) stays a stream,
// which review reads again with nothing left to patch.
TEST(ReviewCli, PatchedJsonStaysAJsonStream) {
    const std::string path = temp_path("stream.json");
    std::ofstream(path) << R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}}
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[
  {"name":"c","image":"i","resources":{"limits":{"nvidia.com/gpu":"8"}}}]}}
)";
    auto result = run_command(cli() + " review --patched " + quote_arg(path));
    ASSERT_EQ(result.exit_code, 3) << result.err;  // shm.small patches
    EXPECT_EQ(result.out.rfind("{", 0), 0U) << result.out;
    EXPECT_EQ(result.out.find("---"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("/dev/shm"), std::string::npos) << result.out;
    const std::string patched = temp_path("stream-patched.json");
    std::ofstream(patched) << result.out;
    auto again = run_command(cli() + " review --patch " + quote_arg(patched));
    EXPECT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(again.out, "[]\n[]\n");
}

// A key written twice is read last-wins, as kubectl reads it, and said.
TEST(ReviewCli, ADuplicateKeyIsNamedWithItsLine) {
    auto result = run_command(cli() + " review " + k8s("gke-rdma-nccl-test.yaml"));
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_NE(result.err.find("gke-rdma-nccl-test.yaml:81: document 3: duplicate key \"resources\""), std::string::npos)
        << result.err;
    EXPECT_EQ(run_command(cli() + " review " + k8s("kubeflow-simple.yaml")).err, "");
}

// Every prefix of every fixture: a truncated manifest is reviewed or
// refused, never a crash.
TEST(ReviewCli, TruncatedManifestsNeverCrash) {
    for (const auto& fixture : pinned()) {
        std::ifstream in(fixture_path(std::string("k8s/") + fixture.file));
        std::stringstream text;
        text << in.rdbuf();
        const std::string whole = text.str();
        for (std::size_t cut = 0; cut < whole.size(); cut += whole.size() / 23 + 1) {
            const std::string path = temp_path("cut.yaml");
            std::ofstream(path) << whole.substr(0, cut);
            auto result = run_command(cli() + " review " + quote_arg(path));
            EXPECT_TRUE(result.exit_code >= 0 && result.exit_code <= 3)
                << fixture.file << " cut at " << cut << ": " << result.exit_code << result.err;
        }
    }
}

}  // namespace
}  // namespace launchguard
