// The launch gate's injection (kubernetes/gate_injection.h): for every
// workload kind the review reads, each GPU container gets the volume, the
// mount and the gate around its command (or beside its entrypoint), the pod
// template the install container first; a patched object patches nothing
// more. The patches are also applied by python3-jsonpatch and validated
// against the Kubernetes schemas in tests/integration/webhook (webhook.tls).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <boost/json.hpp>

#include "engine/profile_loader.h"
#include "kubernetes/gate_injection.h"
#include "kubernetes/json_patch.h"
#include "kubernetes/manifest_documents.h"
#include "kubernetes/workload_review.h"
#include "unit/kubernetes/manifest_test_support.h"

namespace launchguard::kubernetes {
namespace {

namespace json = boost::json;

ReviewOptions gate_options(Mode mode = Mode::enforce, GateOnError on_error = GateOnError::allow) {
    ReviewOptions options;
    options.mode = mode;
    options.fix_blocking = true;
    options.gate = GateOptions{"registry.example/launchguard:1.0", on_error};
    return options;
}

struct Patched {
    WorkloadReview review;
    json::value object;
};

Patched patch_with_gate(const json::value& object, const ReviewOptions& options = gate_options(),
                        const Profile& profile = default_profile()) {
    auto reviewed = review_workload(object, profile, options);
    EXPECT_TRUE(reviewed) << reviewed.error().to_string();
    if (!reviewed) return {};
    auto applied = apply_json_patch(object, reviewed->patch);
    EXPECT_TRUE(applied) << applied.error().to_string();
    return {*reviewed, applied ? *applied : object};
}

const json::value& at(const json::value& value, const std::string& pointer) {
    static const json::value null;
    boost::system::error_code ec;
    const json::value* found = value.find_pointer(pointer, ec);
    EXPECT_NE(found, nullptr) << pointer << " in " << json::serialize(value);
    return found != nullptr ? *found : null;
}

bool has(const json::value& value, const std::string& pointer) {
    boost::system::error_code ec;
    return value.find_pointer(pointer, ec) != nullptr;
}

std::vector<std::string> strings_at(const json::value& value, const std::string& pointer) {
    std::vector<std::string> out;
    const json::value& list = at(value, pointer);
    if (!list.is_array()) return out;
    for (const auto& item : list.get_array()) out.emplace_back(item.is_string() ? item.get_string() : "?");
    return out;
}

std::vector<std::string> run_line(std::string mode = "enforce", std::string on_error = "allow",
                                  std::string log = "/dev/termination-log") {
    return {"/launchguard/launchguard-gate",
            "run",
            "--profile",
            "/launchguard/profile.yaml",
            "--mode",
            mode,
            "--on-error",
            on_error,
            "--termination-log",
            log};
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// The pod template at `spec` has the volume, and the install container first.
void expect_installed(const json::value& object, const std::string& spec, std::size_t init_containers = 1) {
    const json::value& volumes = at(object, spec + "/volumes");
    ASSERT_TRUE(volumes.is_array());
    int gate_volumes = 0;
    for (const auto& volume : volumes.get_array()) {
        if (volume.at("name") != "launchguard-gate") continue;
        ++gate_volumes;
        EXPECT_EQ(json::serialize(volume.at("emptyDir")), R"({"sizeLimit":"32Mi"})");
    }
    EXPECT_EQ(gate_volumes, 1) << spec;
    ASSERT_EQ(at(object, spec + "/initContainers").as_array().size(), init_containers) << spec;
    const json::value& install = at(object, spec + "/initContainers/0");
    EXPECT_EQ(install.at("name"), "launchguard-gate-install");
    EXPECT_EQ(install.at("image"), "registry.example/launchguard:1.0");
    EXPECT_EQ(strings_at(install, "/command"),
              (std::vector<std::string>{"/usr/bin/launchguard-gate", "install", "--into", "/launchguard", "--profile",
                                        "default"}));
    EXPECT_EQ(json::serialize(install.at("volumeMounts")),
              R"([{"name":"launchguard-gate","mountPath":"/launchguard"}])");
    EXPECT_EQ(json::serialize(install.at("securityContext")),
              R"({"runAsNonRoot":true,"runAsUser":65532,"allowPrivilegeEscalation":false,)"
              R"("capabilities":{"drop":["ALL"]},"readOnlyRootFilesystem":true,)"
              R"("seccompProfile":{"type":"RuntimeDefault"}})");
    EXPECT_EQ(json::serialize(install.at("resources")),
              R"({"requests":{"cpu":"100m","memory":"32Mi"},"limits":{"cpu":"100m","memory":"32Mi"}})");
}

void expect_mounted(const json::value& container) {
    int mounts = 0;
    for (const auto& mount : container.at("volumeMounts").as_array()) {
        if (mount.at("name") != "launchguard-gate") continue;
        ++mounts;
        EXPECT_EQ(mount.at("mountPath"), "/launchguard");
        EXPECT_EQ(mount.at("readOnly"), true);
    }
    EXPECT_EQ(mounts, 1);
}

void expect_settled(const json::value& patched, const ReviewOptions& options = gate_options(),
                    const Profile& profile = default_profile()) {
    auto again = review_workload(patched, profile, options);
    ASSERT_TRUE(again) << again.error().to_string();
    EXPECT_TRUE(again->patch.empty()) << json::serialize(again->patch);
    EXPECT_EQ(again->gate_templates, 0U);
}

constexpr std::string_view kPodWithCommand = R"(
apiVersion: v1
kind: Pod
metadata: {name: trainer}
spec:
  containers:
  - name: trainer
    image: nvcr.io/nvidia/pytorch:24.05-py3
    command: ["torchrun", "--nproc-per-node=8"]
    args: ["train.py", "--epochs", "3"]
    resources: {limits: {nvidia.com/gpu: 8}}
  - name: logger
    image: busybox
    command: ["sh", "-c", "tail -f /dev/null"]
)";

TEST(GateInjection, APodCommandIsWrappedWithItsArgsUnchangedAndOnlyGpuContainersGetIt) {
    const json::value pod = parse_yaml(kPodWithCommand);
    Patched out = patch_with_gate(pod);
    EXPECT_EQ(out.review.gate_templates, 1U);
    EXPECT_TRUE(out.review.gate_notes.empty());
    // The volume, the install container, the mount and the command; before them the rules' own fix (/dev/shm).
    EXPECT_EQ(out.review.gate_operations, 4U);
    EXPECT_GT(out.review.patch.size(), out.review.gate_operations);
    expect_installed(out.object, "/spec");
    const json::value& trainer = at(out.object, "/spec/containers/0");
    expect_mounted(trainer);
    EXPECT_EQ(strings_at(trainer, "/command"), concat(run_line(), {"--", "torchrun", "--nproc-per-node=8"}));
    EXPECT_EQ(strings_at(trainer, "/args"), (std::vector<std::string>{"train.py", "--epochs", "3"}));
    EXPECT_FALSE(has(trainer, "/lifecycle"));
    // The CPU-only sidecar is not judged: untouched.
    EXPECT_EQ(at(out.object, "/spec/containers/1"), at(pod, "/spec/containers/1"));
    expect_settled(out.object);
}

TEST(GateInjection, TheModeThePolicyAndTheTerminationMessagePathReachTheRunLine) {
    json::value pod = parse_yaml(kPodWithCommand);
    pod.at_pointer("/spec/containers/0").as_object()["terminationMessagePath"] = "/tmp/why";
    Patched out = patch_with_gate(pod, gate_options(Mode::warn, GateOnError::block));
    EXPECT_EQ(strings_at(out.object, "/spec/containers/0/command"),
              concat(run_line("warn", "block", "/tmp/why"), {"--", "torchrun", "--nproc-per-node=8"}));
    expect_settled(out.object, gate_options(Mode::warn, GateOnError::block));
    // Mode off: launchguard stays out, the gate too.
    auto off = review_workload(pod, default_profile(), gate_options(Mode::off));
    ASSERT_TRUE(off);
    EXPECT_TRUE(off->patch.empty());
}

TEST(GateInjection, WithoutACommandTheGateChecksFromPostStartAndAnOwnHookIsLeftAlone) {
    const json::value pod = parse_yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: two}
spec:
  initContainers:
  - {name: fetch, image: busybox, command: ["true"]}
  containers:
  - name: entrypoint
    image: nvcr.io/nvidia/pytorch:24.05-py3
    args: ["python", "train.py"]
    resources: {limits: {nvidia.com/gpu: 4}}
  - name: hooked
    image: nvcr.io/nvidia/pytorch:24.05-py3
    resources: {limits: {nvidia.com/gpu: 4}}
    lifecycle:
      postStart: {exec: {command: ["/bin/warm-cache"]}}
      preStop: {exec: {command: ["/bin/drain"]}}
)");
    Patched out = patch_with_gate(pod);
    expect_installed(out.object, "/spec", 2);
    EXPECT_EQ(at(out.object, "/spec/initContainers/1/name"), "fetch");  // the gate first, the others after it
    const json::value& entrypoint = at(out.object, "/spec/containers/0");
    expect_mounted(entrypoint);
    EXPECT_FALSE(has(entrypoint, "/command"));
    EXPECT_EQ(strings_at(entrypoint, "/args"), (std::vector<std::string>{"python", "train.py"}));
    EXPECT_EQ(strings_at(entrypoint, "/lifecycle/postStart/exec/command"), concat(run_line(), {"--check-only"}));
    const json::value& hooked = at(out.object, "/spec/containers/1");
    EXPECT_EQ(at(hooked, "/lifecycle"), at(pod, "/spec/containers/1/lifecycle"));
    ASSERT_EQ(out.review.gate_notes.size(), 1U);
    EXPECT_EQ(out.review.gate_notes[0],
              "spec.containers[1]: no command (the image's ENTRYPOINT runs) and a postStart hook of its own: the "
              "launch gate cannot run in it; only the spec was judged");
    expect_settled(out.object);
}

TEST(GateInjection, EveryWorkloadKindGetsItInEachGpuTemplate) {
    struct Case {
        std::string yaml;
        std::vector<std::string> gpu_templates;  // pointers of the PodSpecs with GPU containers
        std::vector<std::string> cpu_templates;
    };
    const std::vector<Case> cases = {
        {R"(
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: c, image: i, command: [python, t.py], resources: {limits: {nvidia.com/gpu: 8}}}
)",
         {"/spec/template/spec"},
         {}},
        {R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js}
spec:
  replicatedJobs:
  - name: driver
    template:
      spec:
        template:
          spec:
            containers: [{name: d, image: i, command: [sleep, "1"]}]
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 2
        template:
          spec:
            containers:
            - {name: w, image: i, resources: {limits: {nvidia.com/gpu: 8}}}
)",
         {"/spec/replicatedJobs/1/template/spec/template/spec"},
         {"/spec/replicatedJobs/0/template/spec/template/spec"}},
        {R"(
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: m}
spec:
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers: [{name: l, image: i, command: [mpirun, -np, "16", ./all_reduce_perf]}]
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: w, image: i, command: [/usr/sbin/sshd, -De], resources: {limits: {nvidia.com/gpu: 8}}}
)",
         {"/spec/mpiReplicaSpecs/Worker/template/spec"},
         {"/spec/mpiReplicaSpecs/Launcher/template/spec"}},
        {R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - {name: pytorch, image: i, command: [torchrun, t.py], resources: {limits: {nvidia.com/gpu: 8}}}
    Worker:
      replicas: 3
      template:
        spec:
          containers:
          - {name: pytorch, image: i, resources: {limits: {nvidia.com/gpu: 8}}}
)",
         {"/spec/pytorchReplicaSpecs/Master/template/spec", "/spec/pytorchReplicaSpecs/Worker/template/spec"},
         {}},
    };
    for (const auto& c : cases) {
        const json::value object = parse_yaml(c.yaml);
        Patched out = patch_with_gate(object);
        SCOPED_TRACE(json::serialize(object.at("kind")));
        EXPECT_EQ(out.review.gate_templates, c.gpu_templates.size());
        for (const auto& spec : c.gpu_templates) {
            expect_installed(out.object, spec);
            const json::value& container = at(out.object, spec + "/containers/0");
            expect_mounted(container);
            EXPECT_TRUE(has(container, "/command") || has(container, "/lifecycle/postStart")) << spec;
        }
        for (const auto& spec : c.cpu_templates) EXPECT_EQ(at(out.object, spec), at(object, spec)) << spec;
        expect_settled(out.object);
    }
}

TEST(GateInjection, AnInjectedTemplateIsLeftAloneAndAReviewSeesThroughTheWrapper) {
    const json::value pod = parse_yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: w}
spec:
  containers:
  - name: c
    image: i
    command: [bash, -c, "export NCCL_SOCKET_IFNAME=eth0; exec python train.py"]
    resources: {limits: {nvidia.com/gpu: 8}}
    volumeMounts: [{name: dshm, mountPath: /dev/shm}]
  volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 16Gi}}]
)");
    Patched out = patch_with_gate(pod);
    ASSERT_EQ(out.review.gate_templates, 1U);
    // The same findings on the wrapped pod: its shell is read after the gate.
    auto plain = review_workload(pod, default_profile(), ReviewOptions{});
    auto wrapped = review_workload(out.object, default_profile(), ReviewOptions{});
    ASSERT_TRUE(plain && wrapped);
    std::vector<std::string> before, after;
    for (const auto& f : plain->report.findings) before.push_back(f.rule + ": " + f.message);
    for (const auto& f : wrapped->report.findings) after.push_back(f.rule + ": " + f.message);
    EXPECT_EQ(before, after);
    EXPECT_EQ(unwrap_gate_command(strings_at(out.object, "/spec/containers/0/command")),
              (std::vector<std::string>{"bash", "-c", "export NCCL_SOCKET_IFNAME=eth0; exec python train.py"}));
    EXPECT_EQ(unwrap_gate_command({"python", "run", "--", "x"}), std::nullopt);
    // Twice through the webhook (the API server's reinvocation): nothing more.
    expect_settled(out.object);
    expect_settled(out.object, gate_options(Mode::patch, GateOnError::block));
}

TEST(GateInjection, ATakenVolumeNameOrMountPointIsSaidNotOverwritten) {
    const json::value pod = parse_yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: taken}
spec:
  volumes: [{name: launchguard-gate, emptyDir: {}}]
  containers:
  - {name: c, image: i, command: [x], resources: {limits: {nvidia.com/gpu: 1}}}
)");
    Patched out = patch_with_gate(pod);
    EXPECT_EQ(json::serialize(out.review.patch).find("launchguard-gate"), std::string::npos);
    ASSERT_EQ(out.review.gate_notes.size(), 1U);
    EXPECT_NE(out.review.gate_notes[0].find("a volume is already named launchguard-gate"), std::string::npos);

    const json::value mounted = parse_yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: mounted}
spec:
  volumes: [{name: mine, emptyDir: {}}]
  containers:
  - {name: a, image: i, command: [x], resources: {limits: {nvidia.com/gpu: 1}}, volumeMounts: [{name: mine, mountPath: /launchguard}]}
  - {name: b, image: i, command: [run], resources: {limits: {nvidia.com/gpu: 1}}}
)");
    Patched both = patch_with_gate(mounted);
    EXPECT_EQ(at(both.object, "/spec/containers/0/command"), at(mounted, "/spec/containers/0/command"));
    EXPECT_EQ(json::serialize(at(both.object, "/spec/containers/0")).find("launchguard-gate"), std::string::npos);
    expect_mounted(at(both.object, "/spec/containers/1"));
    ASSERT_EQ(both.review.gate_notes.size(), 1U);
    EXPECT_EQ(both.review.gate_notes[0],
              "spec.containers[0].volumeMounts: /launchguard is mounted already: the launch gate is not added to this "
              "container");
}

TEST(GateInjection, TheProfileTravelsByNameWhenEmbeddedElseAsItsSettings) {
    EXPECT_EQ(gate_profile_arguments(default_profile()), (std::vector<std::string>{"--profile", "default"}));
    auto site = parse_profile("name: site\ntopology:\n  host_path: /opt/t.xml\n", "/etc/launchguard/site.yaml");
    ASSERT_TRUE(site) << site.error().to_string();
    auto arguments = gate_profile_arguments(*site);
    ASSERT_EQ(arguments.size(), 2U);
    EXPECT_EQ(arguments[0], "--profile-yaml");
    // What the install container writes reads back as the same profile.
    auto back = parse_profile(arguments[1], "/launchguard/profile.yaml");
    ASSERT_TRUE(back) << back.error().to_string();
    EXPECT_EQ(*back, *site);
    // A file that names itself like an embedded profile is still sent whole.
    auto renamed = parse_profile("name: default\n", "/etc/launchguard/default.yaml");
    ASSERT_TRUE(renamed);
    EXPECT_EQ(gate_profile_arguments(*renamed)[0], "--profile-yaml");
}

TEST(GateInjection, WithoutGatePatchesStayAsTheyWere) {
    const json::value pod = parse_yaml(kPodWithCommand);
    ReviewOptions options = gate_options();
    options.gate.reset();
    auto reviewed = review_workload(pod, default_profile(), options);
    ASSERT_TRUE(reviewed);
    EXPECT_EQ(json::serialize(reviewed->patch).find("launchguard-gate"), std::string::npos);
    EXPECT_EQ(reviewed->gate_templates, 0U);
}

// ---------------------------------------------------------------- what the webhook can fix

const Profile& ndv5_site() {
    static const Profile profile = [] {
        auto parsed = parse_profile("name: ndv5-site\ntopology:\n  host_path: /opt/microsoft/ndv5-topo.xml\n", "test");
        EXPECT_TRUE(parsed) << parsed.error().to_string();
        return parsed ? *parsed : default_profile();
    }();
    return profile;
}

json::value topology_pod(const std::string& extra_volume = "") {
    return parse_yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: t}
spec:
  containers:
  - name: c
    image: i
    command: [torchrun, t.py]
    env: [{name: NCCL_TOPO_FILE, value: /opt/microsoft/ndv5-topo.xml}]
    resources: {limits: {nvidia.com/gpu: 8}}
)" + extra_volume);
}

const Finding* not_propagated(const WorkloadReview& review) {
    for (const auto& f : review.report.findings) {
        if (f.rule == "topo.not-propagated") return &f;
    }
    return nullptr;
}

TEST(KubernetesTopologyInImage, AFileUnderNoVolumeGetsTheProfilesFileMountedThereAtMutate) {
    const json::value pod = topology_pod();
    ReviewOptions mutate;
    mutate.fix_blocking = true;
    auto reviewed = review_workload(pod, ndv5_site(), mutate);
    ASSERT_TRUE(reviewed) << reviewed.error().to_string();
    const Finding* finding = not_propagated(*reviewed);
    ASSERT_NE(finding, nullptr);
    EXPECT_EQ(finding->action, Action::patch);
    EXPECT_NE(finding->message.find("cannot see the image"), std::string::npos) << finding->message;
    EXPECT_NE(finding->message.find("launch gate"), std::string::npos) << finding->message;
    ASSERT_GE(reviewed->patch.size(), 2U);  // then /dev/shm (shm.small)
    EXPECT_EQ(json::serialize(reviewed->patch[0]),
              R"({"op":"add","path":"/spec/volumes","value":[{"name":"launchguard-ndv5-topo-xml",)"
              R"("hostPath":{"path":"/opt/microsoft/ndv5-topo.xml","type":"File"}}]})");
    EXPECT_EQ(json::serialize(reviewed->patch[1]),
              R"({"op":"add","path":"/spec/containers/0/volumeMounts","value":[{"name":"launchguard-ndv5-topo-xml",)"
              R"("mountPath":"/opt/microsoft/ndv5-topo.xml","readOnly":true}]})");
    auto patched = apply_json_patch(pod, reviewed->patch);
    ASSERT_TRUE(patched);
    auto again = review_workload(*patched, ndv5_site(), mutate);
    ASSERT_TRUE(again);
    EXPECT_EQ(not_propagated(*again), nullptr);
    EXPECT_TRUE(again->patch.empty()) << json::serialize(again->patch);
}

TEST(KubernetesTopologyInImage, ValidateWarnsAndAllowsNeverBlocks) {
    for (Mode mode : {Mode::enforce, Mode::patch, Mode::warn}) {
        ReviewOptions validate;
        validate.mode = mode;
        auto reviewed = review_workload(topology_pod(), ndv5_site(), validate);
        ASSERT_TRUE(reviewed);
        const Finding* finding = not_propagated(*reviewed);
        ASSERT_NE(finding, nullptr) << to_string(mode);
        EXPECT_NE(finding->action, Action::block) << to_string(mode);
        EXPECT_NE(reviewed->report.decision, Decision::block) << to_string(mode);
    }
}

TEST(KubernetesTopologyInImage, QuietWhereAVolumeHoldsThePathOrTheProfileNamesNoFile) {
    const json::value mounted = topology_pod(R"(
  volumes: [{name: topo, configMap: {name: topo}}]
)");
    json::value with_mount = mounted;
    with_mount.at_pointer("/spec/containers/0").as_object()["volumeMounts"] =
        json::array{json::object{{"name", "topo"}, {"mountPath", "/opt/microsoft"}}};
    auto under_volume = review_workload(with_mount, ndv5_site(), ReviewOptions{});
    ASSERT_TRUE(under_volume) << under_volume.error().to_string();
    EXPECT_EQ(not_propagated(*under_volume), nullptr);
    // No host_path: nothing to mount, so the rule stays unknown, as before.
    auto no_file = review_workload(topology_pod(), default_profile(), ReviewOptions{});
    ASSERT_TRUE(no_file);
    EXPECT_EQ(not_propagated(*no_file), nullptr);
    bool unknown = false;
    for (const auto& u : no_file->report.unknowns) unknown = unknown || u.rule == "topo.not-propagated";
    EXPECT_TRUE(unknown);
}

}  // namespace
}  // namespace launchguard::kubernetes
