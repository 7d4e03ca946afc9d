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
    // Not gated, so not on the gate's volume either (that would get around it).
    EXPECT_EQ(json::serialize(hooked).find("launchguard-gate"), std::string::npos) << json::serialize(hooked);
    ASSERT_EQ(out.review.gate_notes.size(), 1U);
    EXPECT_EQ(out.review.gate_notes[0],
              "not added to a container with no command (the image's ENTRYPOINT runs) and a postStart hook of its own, "
              "so only its spec was judged: spec.containers[1]");
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
    // A gate run under another policy (a weaker one a user wrote, say) is
    // not this policy's gate: added anew around the original command.
    const ReviewOptions stricter = gate_options(Mode::patch, GateOnError::block);
    Patched regated = patch_with_gate(out.object, stricter);
    EXPECT_EQ(regated.review.gate_templates, 1U);
    auto command = strings_at(regated.object, "/spec/containers/0/command");
    ASSERT_GE(command.size(), 4U);
    EXPECT_EQ(command[0], "/launchguard-2/launchguard-gate");
    EXPECT_EQ(std::vector<std::string>(command.end() - 4, command.end()),
              (std::vector<std::string>{"--", "bash", "-c", "export NCCL_SOCKET_IFNAME=eth0; exec python train.py"}));
    expect_settled(regated.object, stricter);
}

// The gate's volume, install container and folder when the pod takes the defaults itself.
void expect_gate_at(const json::value& object, const std::string& volume, const std::string& install,
                    const std::string& directory) {
    const json::value& first = at(object, "/spec/initContainers/0");
    EXPECT_EQ(first.at("name"), json::value(install));
    EXPECT_EQ(first.at("image"), "registry.example/launchguard:1.0");
    EXPECT_EQ(strings_at(first, "/command"), (std::vector<std::string>{"/usr/bin/launchguard-gate", "install", "--into",
                                                                       directory, "--profile", "default"}));
    EXPECT_EQ(json::serialize(first.at("volumeMounts")),
              R"([{"name":")" + volume + R"(","mountPath":")" + directory + R"("}])");
    bool defined = false;
    for (const auto& v : at(object, "/spec/volumes").as_array())
        defined = defined || v.at("name") == json::value(volume);
    EXPECT_TRUE(defined) << volume;
}

// One GPU container with a command, nothing else.
constexpr std::string_view kPlainGpuPod = R"(
apiVersion: v1
kind: Pod
metadata: {name: plain}
spec:
  containers:
  - {name: c, image: i, command: [python, t.py], resources: {limits: {nvidia.com/gpu: 1}}}
)";

std::vector<std::string> bypass_findings(const WorkloadReview& review) {
    std::vector<std::string> out;
    for (const auto& f : review.report.findings) {
        if (f.rule == kGateBypassRule) out.push_back(std::string(to_string(f.action)) + " " + f.message);
    }
    return out;
}

TEST(GateBypass, AUserContainerOnTheGatesVolumeGetsAGateItCannotReachAndIsRefused) {
    // The init container runs after the gate's install container and would
    // overwrite the gate in a volume it only names.
    const json::value pod = parse_yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: hostile}
spec:
  initContainers:
  - {name: evil, image: busybox, command: [sh, -c, "cp /bin/true /launchguard/launchguard-gate"], volumeMounts: [{name: launchguard-gate, mountPath: /launchguard}]}
  containers:
  - {name: c, image: i, command: [python, t.py], resources: {limits: {nvidia.com/gpu: 1}}}
)");
    Patched out = patch_with_gate(pod);
    expect_gate_at(out.object, "launchguard-gate-2", "launchguard-gate-install-2", "/launchguard-2");
    EXPECT_EQ(at(out.object, "/spec/initContainers/1/volumeMounts/0/name"), "launchguard-gate");  // not the gate's
    EXPECT_EQ(strings_at(out.object, "/spec/containers/0/command")[0], "/launchguard-2/launchguard-gate");
    ASSERT_FALSE(out.review.gate_notes.empty());
    EXPECT_EQ(out.review.gate_notes[0],
              "spec.initContainers[0] (evil) mounts a volume named launchguard-gate that the pod does not define, "
              "which would be the launch gate's: spec.initContainers[0] (evil).volumeMounts");
    EXPECT_EQ(bypass_findings(out.review).size(), 1U);
    EXPECT_EQ(out.review.report.decision, Decision::block);

    // Added after the gate, on its volume, by anything but the install
    // container: refused, and the gate added anew where it cannot reach.
    const json::value gated = parse_yaml(kPlainGpuPod);
    json::value injected = patch_with_gate(gated).object;
    EXPECT_TRUE(bypass_findings(review_workload(injected, default_profile(), gate_options()).value()).empty());
    json::array& inits = injected.at_pointer("/spec/initContainers").as_array();
    inits.push_back(json::parse(
        R"({"name":"evil","image":"busybox","command":["sh"],"volumeMounts":[{"name":"launchguard-gate","mountPath":"/x"}]})"));
    auto refused = review_workload(injected, default_profile(), gate_options());
    ASSERT_TRUE(refused);
    ASSERT_EQ(bypass_findings(*refused).size(), 1U);
    EXPECT_EQ(bypass_findings(*refused)[0],
              "block gets around the launch gate: spec.initContainers[1] (evil) mounts the launch gate's volume "
              "launchguard-gate (only the gate's install container may write it; a gated container mounts it "
              "read-only at /launchguard): spec.initContainers[1] (evil).volumeMounts");
    Patched again = patch_with_gate(injected);
    EXPECT_EQ(at(again.object, "/spec/initContainers/0/name"), "launchguard-gate-install-2");
    EXPECT_EQ(strings_at(again.object, "/spec/containers/0/command"),
              concat(concat(
                         [] {
                             auto line = run_line();
                             for (auto& word : line) {
                                 if (word.starts_with("/launchguard/")) word.replace(0, 12, "/launchguard-2");
                             }
                             return line;
                         }(),
                         {"--"}),
                     {"python", "t.py"}));
    // Only warned where the mode only warns.
    auto warned = review_workload(injected, default_profile(), gate_options(Mode::warn));
    ASSERT_TRUE(warned);
    ASSERT_EQ(bypass_findings(*warned).size(), 1U);
    EXPECT_TRUE(bypass_findings(*warned)[0].starts_with("warn ")) << bypass_findings(*warned)[0];

    // A gated container that mounts it writable is refused too.
    json::value writable = patch_with_gate(gated).object;
    for (auto& mount : writable.at_pointer("/spec/containers/0/volumeMounts").as_array()) {
        if (mount.at("name") == "launchguard-gate") mount.as_object()["readOnly"] = false;
    }
    auto refused_writable = review_workload(writable, default_profile(), gate_options());
    ASSERT_TRUE(refused_writable);
    EXPECT_EQ(bypass_findings(*refused_writable).size(), 1U);
}

TEST(GateBypass, AFakeInstallContainerDoesNotPassForTheGate) {
    // A container by the install container's name, and a command wrapped in
    // a gate of the user's that only warns: none of it is the site's gate.
    const json::value pod = parse_yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: fake}
spec:
  initContainers:
  - {name: launchguard-gate-install, image: busybox, command: [sh, -c, "true"], volumeMounts: [{name: launchguard-gate, mountPath: /launchguard}]}
  volumes: [{name: launchguard-gate, emptyDir: {}}]
  containers:
  - name: c
    image: i
    command: [/launchguard/launchguard-gate, run, --mode, warn, --, python, t.py]
    resources: {limits: {nvidia.com/gpu: 1}}
    volumeMounts: [{name: launchguard-gate, mountPath: /launchguard, readOnly: true}]
)");
    Patched out = patch_with_gate(pod);
    ASSERT_EQ(out.review.gate_templates, 1U);
    expect_gate_at(out.object, "launchguard-gate-2", "launchguard-gate-install-2", "/launchguard-2");
    auto command = strings_at(out.object, "/spec/containers/0/command");
    ASSERT_GE(command.size(), 3U);
    EXPECT_EQ(command[0], "/launchguard-2/launchguard-gate");
    EXPECT_EQ(std::vector<std::string>(command.end() - 3, command.end()),
              (std::vector<std::string>{"--", "python", "t.py"}));  // the user's wrapper is gone
    expect_settled(out.object);

    // The same shape with the site's image and command is the gate: left alone.
    const json::value plain = parse_yaml(kPlainGpuPod);
    json::value injected = patch_with_gate(plain).object;
    expect_settled(injected);
    // Another image in the install container: not the site's gate.
    injected.at_pointer("/spec/initContainers/0").as_object()["image"] = "attacker.example/gate:1";
    Patched replaced = patch_with_gate(injected);
    EXPECT_EQ(replaced.review.gate_templates, 1U);
    EXPECT_EQ(at(replaced.object, "/spec/initContainers/0/image"), "registry.example/launchguard:1.0");
    expect_settled(replaced.object);
}

TEST(GateBypass, AMountAtOrUnderTheGatesFolderMovesTheGateAndIsRefusedInAGatedContainer) {
    for (const std::string path : {"/launchguard", "/launchguard/launchguard-gate", "/launchguard/sub/dir"}) {
        const json::value pod = parse_yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: shadow}
spec:
  volumes: [{name: mine, configMap: {name: fake-gate}}]
  containers:
  - name: c
    image: i
    command: [python, t.py]
    resources: {limits: {nvidia.com/gpu: 1}}
    volumeMounts: [{name: mine, mountPath: )" +
                                           path + R"(, subPath: launchguard-gate}]
)");
        Patched out = patch_with_gate(pod);
        expect_gate_at(out.object, "launchguard-gate-2", "launchguard-gate-install-2", "/launchguard-2");
        EXPECT_EQ(strings_at(out.object, "/spec/containers/0/command")[0], "/launchguard-2/launchguard-gate") << path;
        EXPECT_TRUE(bypass_findings(out.review).empty()) << path;
        expect_settled(out.object);
    }
    // Added to a gated container afterwards: refused.
    json::value injected = patch_with_gate(parse_yaml(kPlainGpuPod)).object;
    injected.at_pointer("/spec/volumes").as_array().push_back(json::parse(R"({"name":"mine","emptyDir":{}})"));
    injected.at_pointer("/spec/containers/0/volumeMounts")
        .as_array()
        .push_back(
            json::parse(R"({"name":"mine","mountPath":"/launchguard/launchguard-gate","subPath":"launchguard-gate"})"));
    auto refused = review_workload(injected, default_profile(), gate_options());
    ASSERT_TRUE(refused);
    ASSERT_EQ(bypass_findings(*refused).size(), 1U);
    EXPECT_EQ(bypass_findings(*refused)[0],
              "block gets around the launch gate: spec.containers[0] (c) mounts volume mine at "
              "/launchguard/launchguard-gate, over the launch gate's folder /launchguard: spec.containers[0] "
              "(c).volumeMounts");
    EXPECT_EQ(refused->report.decision, Decision::block);
}

TEST(GateBypass, AnOwnVolumeOrMountByTheGatesNamesStillGetsTheGate) {
    const json::value pod = parse_yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: taken}
spec:
  volumes: [{name: launchguard-gate, emptyDir: {}}, {name: mine, emptyDir: {}}]
  containers:
  - {name: a, image: i, command: [x], resources: {limits: {nvidia.com/gpu: 1}}, volumeMounts: [{name: mine, mountPath: /launchguard}]}
  - {name: b, image: i, command: [run], resources: {limits: {nvidia.com/gpu: 1}}}
)");
    Patched out = patch_with_gate(pod);
    ASSERT_EQ(out.review.gate_templates, 1U);
    expect_gate_at(out.object, "launchguard-gate-2", "launchguard-gate-install-2", "/launchguard-2");
    for (const std::string container : {"/spec/containers/0", "/spec/containers/1"}) {
        EXPECT_EQ(strings_at(out.object, container + "/command")[0], "/launchguard-2/launchguard-gate");
    }
    ASSERT_EQ(out.review.gate_notes.size(), 1U);
    EXPECT_EQ(out.review.gate_notes[0],
              "added as volume launchguard-gate-2, init container launchguard-gate-install-2 and folder "
              "/launchguard-2, since the pod uses the default names itself: spec");
    EXPECT_TRUE(bypass_findings(out.review).empty());
    expect_settled(out.object);
}

TEST(GateBypass, AGpuNativeSidecarIsJudgedAndGated) {
    const json::value pod = parse_yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: sidecar}
spec:
  initContainers:
  - {name: setup, image: busybox, command: [sh, -c, "true"]}
  - name: side
    image: i
    restartPolicy: Always
    command: [python, serve.py]
    env: [{name: NCCL_DEBUG, value: INFO}]
    resources: {limits: {nvidia.com/gpu: 1}}
  containers:
  - {name: app, image: busybox, command: [sleep, "1"]}
)");
    Patched out = patch_with_gate(pod);
    EXPECT_TRUE(out.review.requests_gpus);
    bool judged = false;
    for (const auto& f : out.review.report.findings) {
        for (const auto& [key, value] : f.evidence) judged = judged || value == "spec.initContainers[1]";
    }
    EXPECT_TRUE(judged) << "no finding names the sidecar";
    ASSERT_EQ(out.review.gate_templates, 1U);
    expect_installed(out.object, "/spec", 3);
    EXPECT_EQ(at(out.object, "/spec/initContainers/2/name"), "side");
    EXPECT_EQ(strings_at(out.object, "/spec/initContainers/2/command"),
              concat(concat(run_line(), {"--"}), {"python", "serve.py"}));
    expect_mounted(at(out.object, "/spec/initContainers/2"));
    EXPECT_EQ(strings_at(out.object, "/spec/initContainers/1/command"),
              (std::vector<std::string>{"sh", "-c", "true"}));  // a plain init container: not a launch
    EXPECT_EQ(strings_at(out.object, "/spec/containers/0/command"), (std::vector<std::string>{"sleep", "1"}));
    expect_settled(out.object);
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
