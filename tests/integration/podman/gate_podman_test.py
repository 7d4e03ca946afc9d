#!/usr/bin/python3
"""The launch gate end to end: launchguard-webhook patches a GPU pod, a real
container runtime (podman kube play, runc) runs the patched pod, and the gate
decides inside the container.

Usage: gate_podman_test.py SOURCE_DIR WORK_DIR GATE WEBHOOK LAUNCHGUARD

For each run the real launchguard-webhook answers an AdmissionReview of the
pod on /mutate over TLS, as the API server calls it (the helpers of
tests/integration/webhook); the JSON Patch is applied with python3-jsonpatch
and `podman kube play` runs the result: the init container
launchguard-gate-install copies the gate and the profile into the emptyDir
launchguard-gate, and the GPU container's command is the gate wrapping the
original one. The profile (topology-profile.yaml beside this file) requires
the topology file the pod's NCCL_TOPO_FILE names, which the webhook cannot
see (it is in the image or not), so only the gate can tell:

  missing   an image without the file: the container exits 78, and its
            termination message and stderr name topo.file-missing and the fix
  carries   an image with the file: the workload runs with exactly the argv
            and environment it runs with when the webhook is not involved
  nonroot   the same as UID 1000, runAsNonRoot, readOnlyRootFilesystem,
            capabilities dropped, the command found through the image's PATH

Then pods that try to get around the gate, each after the real /mutate
(hostile_pods): a user init container on a volume named launchguard-gate
installing a permissive profile, a fake launchguard-gate-install with the
workload "wrapped" in the gate it installs, a file of the user's at
/launchguard/launchguard-gate, a folder of the user's at /launchguard, and
the GPU container as a native sidecar. Each runs the image without the
topology file and must exit 78, and /validate must find nothing in the
patched pod that gets around the gate; a container on the gate's volume that
the pod leaves undefined is denied at /validate, naming it.

A first run of the unpatched pod gives the runtime's own argv and environment
and the pod start time without an init container. The workload is a static C
program (show_launch.c) alone in its image: no shell, as in a distroless
image. Images come from `podman import` of root filesystem directories (no
registry): the launchguard image from deploy/image/make-rootfs.sh with this
build's binaries, user 65532.

Everything podman keeps (storage, run state, events, volumes) lives under a
fresh directory in WORK_DIR, with the configuration this needs in a
containers.conf given by CONTAINERS_CONF: runc (crun cannot create containers
in this machine's cgroup v1 layout), cgroupfs (no systemd), explicit nofile and
nproc ulimits at this process's hard limits (podman's default nofile of
1048576 is above them, and runc then fails with "error setting rlimits"),
events to a file, no network (`--network none`). Nothing on the machine is
changed; the directory is removed at the end, and kept with the podman logs
when a check failed.

Kubernetes writes a container's termination message to a file on the node
that it bind-mounts at terminationMessagePath; podman has no such file, so
the pod mounts a hostPath file at /dev/termination-log to play that part.

Needs root, podman, runc and catatonit (podman's pause image), python3-yaml,
python3-jsonpatch and a C compiler that links static (gcc, libc6-dev): see
scripts/install-deps.sh --with-test-tools. Exits 77 (ctest: skipped) only
when podman or the public fixtures (LAUNCHGUARD_SHARED_FIXTURES) are missing;
fails on anything else that is missing. Prints
PASS/FAIL lines, the init container's time, and "N passed, M failed".
"""
import base64
import copy
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime

import jsonpatch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "webhook"))
import webhook_test  # noqa: E402  (its check() keeps the counts)
from webhook_test import Certificates, Client, Webhook, check, review, response_of  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GATE_DIR = "/launchguard"
GATE = GATE_DIR + "/launchguard-gate"
BLOCK_EXIT = 78  # kGateBlockExitCode (EX_CONFIG)
TOPO = "/opt/microsoft/ndv5-topo.xml"
NONROOT = 65532
TAG = f"{os.getpid()}-{int(time.time())}"
LAUNCHGUARD_IMAGE = f"localhost/launchguard-e2e:{TAG}"
WORKLOAD_MISSING = f"localhost/lg-e2e-workload:missing-{TAG}"
WORKLOAD_CARRIES = f"localhost/lg-e2e-workload:carries-{TAG}"
# What the workload is started with: spaces, quotes, an empty argument,
# non-ASCII bytes and something that looks like a variable, all to be passed
# through unchanged.
COMMAND = ["/usr/bin/show-launch", "--nproc-per-node=8", "two  words", "it's \"quoted\" $HOME"]
ARGS = ["train.py", "--lr=3e-4", "", "gr\u00fc\u00df \u2713"]
ENV = [
    {"name": "NCCL_TOPO_FILE", "value": TOPO},
    {"name": "NCCL_DEBUG", "value": "WARN"},
    {"name": "WITH_SPACES", "value": "a b  c "},
    {"name": "EMPTY", "value": ""},
    {"name": "UNICODE", "value": "\u00fc\u2192\u2713"},
    {"name": "LOOKS_LIKE_A_SUBSTITUTION", "value": "${NCCL_DEBUG} $1 `x`"},
]


class Podman:
    """podman with this test's own storage, run state, events and
    configuration, so it never touches the machine's containers or images."""

    def __init__(self, work):
        self.work = work
        conf = os.path.join(work, "containers.conf")
        with open(conf, "w") as f:
            f.write(containers_conf())
        self.env = dict(os.environ, CONTAINERS_CONF=conf)
        # podman refuses a run root longer than 50 characters, and its sockets
        # live there and in the tmpdir: both in a short directory of /tmp.
        self.state = tempfile.mkdtemp(prefix=f"lgpodman.{os.getpid()}.", dir="/tmp")
        self.base = ["podman", "--root", os.path.join(work, "storage"), "--runroot", os.path.join(self.state, "run"),
                     "--tmpdir", os.path.join(self.state, "tmp"), "--storage-driver", "vfs"]

    def run(self, *args, check_rc=True, stdin=None, timeout=120):
        result = subprocess.run(self.base + list(args), input=stdin, capture_output=True, env=self.env,
                                timeout=timeout)
        if check_rc and result.returncode != 0:
            raise RuntimeError(f"podman {' '.join(args)}: exit {result.returncode}\n"
                               f"{result.stdout.decode(errors='replace')[-2000:]}"
                               f"{result.stderr.decode(errors='replace')[-3000:]}")
        return result

    def text(self, *args, **kwargs):
        return self.run(*args, **kwargs).stdout.decode(errors="replace")

    def import_rootfs(self, rootfs, image, *changes):
        """The directory ROOTFS as the only layer of IMAGE."""
        tar = subprocess.run(["tar", "-C", rootfs, "--numeric-owner", "-cf", "-", "."], capture_output=True,
                             check=True).stdout
        args = ["import", "--quiet"]
        for change in changes:
            args += ["--change", change]
        self.run(*args, "-", image, stdin=tar)


def containers_conf():
    """nofile and nproc given explicitly: podman's defaults are above this
    machine's hard limits (nofile 1048576), and runc then fails with "error
    setting rlimits". podman itself runs with nproc lowered to 32768, and the
    container cannot get more than podman has."""
    def limit(which, most):
        hard = resource.getrlimit(which)[1]
        value = most if hard == resource.RLIM_INFINITY else min(hard, most)
        return f"{value}:{value}"
    return ("# Written by gate_podman_test.py for its own podman storage.\n"
            "[containers]\n"
            f'default_ulimits = ["nofile={limit(resource.RLIMIT_NOFILE, 1048576)}", '
            f'"nproc={limit(resource.RLIMIT_NPROC, 32768)}"]\n'
            "[engine]\n"
            'runtime = "runc"\n'
            'cgroup_manager = "cgroupfs"\n'
            'events_logger = "file"\n')


def build_images(podman, source, work, gate, webhook, launchguard):
    started = time.monotonic()
    rootfs = os.path.join(work, "launchguard-rootfs")
    subprocess.run([os.path.join(source, "deploy", "image", "make-rootfs.sh"), rootfs, launchguard, webhook, gate],
                   check=True)
    check(os.access(os.path.join(rootfs, "usr/bin/launchguard-gate"), os.X_OK),
          "the launchguard image has /usr/bin/launchguard-gate (make-rootfs.sh)")
    podman.import_rootfs(rootfs, LAUNCHGUARD_IMAGE, f"USER {NONROOT}:{NONROOT}",
                         'ENTRYPOINT ["/usr/bin/launchguard-webhook"]')
    # The image's copy (stripped) is what the init container runs: timed below.
    shutil.copy(os.path.join(rootfs, "usr/bin/launchguard-gate"), os.path.join(work, "launchguard-gate"))
    shutil.rmtree(rootfs)
    show_launch = os.path.join(work, "show-launch")
    subprocess.run([os.environ.get("CC", "cc"), "-static", "-O2", "-Wall", "-Wextra", "-Werror", "-o", show_launch,
                    os.path.join(HERE, "show_launch.c")], check=True)
    for image, topology in ((WORKLOAD_MISSING, None), (WORKLOAD_CARRIES, os.path.join(shared_fixtures(),
                                                                                        "nccl-topo", "ndv5-topo.xml"))):
        tree = os.path.join(work, "workload-rootfs")
        os.makedirs(os.path.join(tree, "usr/bin"))
        shutil.copy(show_launch, os.path.join(tree, "usr/bin/show-launch"))
        if topology:
            os.makedirs(os.path.join(tree, os.path.dirname(TOPO[1:])))
            shutil.copy(topology, os.path.join(tree, TOPO[1:]))
        podman.import_rootfs(tree, image, "ENV PATH=/usr/local/bin:/usr/bin", 'ENTRYPOINT ["/usr/bin/show-launch"]')
        shutil.rmtree(tree)
    print(f"podman: images imported in {time.monotonic() - started:.1f} s")


def base_pod(name, image, term_file, nonroot=False):
    """The GPU pod as a user writes it. The emptyDir at /dev/shm keeps
    shm.small quiet (the webhook would otherwise add one itself)."""
    container = {
        "name": "trainer", "image": image, "command": list(COMMAND), "args": list(ARGS), "env": copy.deepcopy(ENV),
        "resources": {"limits": {"nvidia.com/gpu": 1}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"},
                         {"name": "termination-log", "mountPath": "/dev/termination-log"}],
    }
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        # podman removes an init container once it has run unless told to keep
        # it; kept, its log and exit code can be shown when a run fails.
        "metadata": {"name": name, "namespace": "default",
                     "annotations": {"io.podman.annotations.init.container.type": "always"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [container],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
                        {"name": "termination-log", "hostPath": {"path": term_file, "type": "File"}}],
        },
    }
    if nonroot:
        pod["spec"]["securityContext"] = {"runAsUser": 1000, "runAsGroup": 1000, "runAsNonRoot": True}
        container["securityContext"] = {"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                                        "capabilities": {"drop": ["ALL"]}}
        container["command"] = ["show-launch"] + COMMAND[1:]  # found through the image's PATH
    return pod


def mutate(client, pod, uid, gate_names=("launchguard-gate", "launchguard-gate-install", GATE_DIR),
           container=lambda spec: spec["containers"][0]):
    """The webhook's JSON Patch for POD, applied; None when there is none.
    GATE_NAMES: the gate's volume, install container and folder the patch
    must use (the pod's own names never); CONTAINER: the GPU container."""
    volume_name, install_name, gate_dir = gate_names
    status, body, _ = client.post("/mutate?timeout=10s", review(pod, uid))
    resp = response_of(status, body) or {}
    if resp.get("allowed") is not True or "patch" not in resp:
        check(False, f"[{uid}] /mutate allows the pod with a JSON Patch", body[:600])
        return None
    ops = json.loads(base64.b64decode(resp["patch"]))
    try:
        patched = jsonpatch.apply_patch(copy.deepcopy(pod), ops)
    except Exception as e:  # noqa: BLE001 - any failure to apply is the finding
        check(False, f"[{uid}] the patch applies (python3-jsonpatch)", f"{e}: {ops}")
        return None
    spec = patched["spec"]
    inits = spec.get("initContainers", [])
    volume = next((v for v in spec.get("volumes", []) if v.get("name") == volume_name), {})
    container = container(spec)
    original = container_of(pod, container["name"])
    command = container.get("command", [])
    check(inits[:1] and inits[0].get("name") == install_name and inits[0].get("image") == LAUNCHGUARD_IMAGE
          and inits[0]["volumeMounts"] == [{"name": volume_name, "mountPath": gate_dir}] and "emptyDir" in volume,
          f"[{uid}] the patch adds the init container {install_name} ({LAUNCHGUARD_IMAGE}) and the emptyDir "
          f"{volume_name} at {gate_dir}", json.dumps(ops)[:1500])
    added = {v.get("name") for v in spec.get("volumes", [])} - {v["name"] for v in pod["spec"]["volumes"]}
    check(added == {volume_name}, f"[{uid}] the only volume added is {volume_name} (the image decides)",
          str(added))
    wrapped = command[:2] == [gate_dir + "/launchguard-gate", "run"] and "--" in command
    unwrapped = original["command"]
    if unwrapped[:1] == [GATE] and "--" in unwrapped:
        unwrapped = unwrapped[unwrapped.index("--") + 1:]  # the user's own wrapper is not kept
    check(wrapped and command[command.index("--") + 1:] == unwrapped
          and container.get("args") == original["args"]
          and container.get("env") == original["env"],
          f"[{uid}] the GPU container's command is the gate wrapping the original; args and env unchanged",
          json.dumps(container)[:1500])
    return patched


def container_of(pod, name):
    spec = pod["spec"]
    return next(c for c in spec.get("initContainers", []) + spec["containers"] if c["name"] == name)


def event_times(podman, pod_name):
    """{(container, event): seconds} from podman's event log for the
    containers of POD_NAME; its infra container is called "infra"."""
    pod_id = podman.text("pod", "inspect", pod_name, "--format", "{{.ID}}", check_rc=False).strip()
    times = {}
    for line in podman.text("events", "--stream=false", "--format", "json", check_rc=False).splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        name = event.get("Name", "")
        # "died" events carry no PodID: the names tell (the infra container's
        # is the pod id's first 12 digits and "-infra").
        infra = bool(pod_id) and name == pod_id[:12] + "-infra"
        if not (infra or name.startswith(pod_name + "-")) or not isinstance(event.get("Time"), str):
            continue
        name = "infra" if infra else name
        times.setdefault((name, event.get("Status")), parse_time(event["Time"]))
    return times


def parse_time(text):
    text = text.replace("Z", "+00:00")
    if "." in text:  # Python before 3.11 takes at most microseconds
        head, _, rest = text.partition(".")
        digits = "".join(c for c in rest if c.isdigit())
        zone = rest[len(digits):]
        text = f"{head}.{digits[:6]}{zone}"
    return datetime.fromisoformat(text).timestamp()


class PodRun:
    """One pod played and waited for; what it left behind."""

    def __init__(self, podman, work, label, pod, play_may_fail=False):
        self.podman, self.label, self.name = podman, label, pod["metadata"]["name"]
        self.work_container = f"{self.name}-trainer"
        self.path = os.path.join(work, f"{label}.json")
        with open(self.path, "w") as f:
            json.dump(pod, f, indent=1)
        self.started = time.monotonic()
        play = podman.run("kube", "play", "--network", "none", self.path, check_rc=False)
        self.play_output = (play.stdout + play.stderr).decode(errors="replace")
        self.exit_code, self.stdout, self.stderr = None, "", ""
        if play.returncode != 0 and not play_may_fail:
            check(False, f"[{label}] podman kube play starts the pod", self.play_output[-3000:])
            return
        waited = podman.run("wait", self.work_container, check_rc=False, timeout=60)
        self.elapsed = time.monotonic() - self.started
        if waited.returncode == 0:
            self.exit_code = int(waited.stdout.decode().strip().splitlines()[-1])
        logs = podman.run("logs", self.work_container, check_rc=False)
        self.stdout, self.stderr = logs.stdout.decode(errors="replace"), logs.stderr.decode(errors="replace")

    def diagnose(self):
        """Everything podman knows about the pod, for a failed check."""
        print(f"---- podman, pod {self.name} ({self.label}): kube play said:\n{self.play_output[-2000:]}")
        print(self.podman.text("ps", "-a", "--pod", "--filter", f"pod={self.name}", check_rc=False))
        names = self.podman.text("ps", "-a", "--filter", f"pod={self.name}", "--format", "{{.Names}}",
                                 check_rc=False).split()
        for name in names:
            state = self.podman.text("inspect", name, "--format",
                                     "{{.State.Status}} exit {{.State.ExitCode}} {{.State.Error}}", check_rc=False)
            logs = self.podman.run("logs", name, check_rc=False)
            print(f"---- {name}: {state.strip()}\n{logs.stdout.decode(errors='replace')[-3000:]}"
                  f"{logs.stderr.decode(errors='replace')[-3000:]}")
        print(f"---- the pod played: {self.path}")

    def seconds(self, first, second):
        """Seconds from event FIRST to event SECOND, (container, status)
        each. Read when asked: podman logs a container's "died" a little
        after the container has exited."""
        events = event_times(self.podman, self.name)
        a, b = events.get(first), events.get(second)
        return None if a is None or b is None else b - a

    def remove(self):
        self.podman.run("pod", "rm", "--force", self.name, check_rc=False)
        for volume in ("launchguard-gate", "launchguard-gate-2", "dshm", "user-volume"):
            self.podman.run("volume", "rm", "--force", volume, check_rc=False)


def launch(stdout):
    """(uid line, argv, env) from show-launch's output."""
    uid, argv, env = None, [], []
    for line in stdout.splitlines():
        kind, _, value = line.partition(" ")
        if kind == "uid":
            uid = line
        elif kind in ("argv", "env"):
            (argv if kind == "argv" else env).append(bytes.fromhex(value).decode("utf-8", errors="replace"))
    return uid, argv, env


def expected_env(control_env, pod_name, control_name):
    """The control run's environment for POD_NAME, sorted: podman orders
    the environment differently from one container to the next (a Go map),
    so only the entries can be compared, not their order."""
    return sorted(e.replace(f"HOSTNAME={control_name}", f"HOSTNAME={pod_name}") for e in control_env)


def term_file(work, label):
    path = os.path.join(work, f"termination-log-{label}")
    with open(path, "w"):
        pass
    os.chmod(path, 0o666)  # as the kubelet makes it: any container user writes its message
    return path


def remove_stale(work_root):
    """What earlier runs that were killed (their process is gone) left: the
    podman storage in WORK_ROOT and the run state in /tmp. A failed run's
    kept directory has no storage left and stays."""
    for parent, prefix, marker in ((work_root, "gate", "storage"), ("/tmp", "lgpodman", "run")):
        for entry in os.listdir(parent):
            parts = entry.split(".")
            if len(parts) == 3 and parts[0] == prefix and parts[1].isdigit() \
                    and os.path.isdir(os.path.join(parent, entry, marker)) and not os.path.exists(f"/proc/{parts[1]}"):
                shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


def shared_fixtures():
    return os.environ.get("LAUNCHGUARD_SHARED_FIXTURES", "")


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    source, work_root, gate, webhook, launchguard = sys.argv[1:]
    if shutil.which("podman") is None:
        print("SKIP: podman is not installed (scripts/install-deps.sh --with-test-tools installs podman, runc "
              "and catatonit)")
        return 77
    if not os.path.isdir(os.path.join(shared_fixtures(), "nccl-topo")):
        print(f"SKIP: needs the public fixtures: LAUNCHGUARD_SHARED_FIXTURES not found ({shared_fixtures()!r})")
        return 77
    if os.getuid() != 0:
        print(f"FAIL: must run as root (uid {os.getuid()}): the test runs rootful podman")
        return 1
    for tool in ("runc", "catatonit"):
        if shutil.which(tool) is None and not os.path.exists(f"/usr/libexec/podman/{tool}"):
            print(f"FAIL: {tool} not found (Debian package {tool}; scripts/install-deps.sh --with-test-tools)")
            return 1
    os.makedirs(work_root, exist_ok=True)
    remove_stale(work_root)
    work = tempfile.mkdtemp(prefix=f"gate.{os.getpid()}.", dir=work_root)
    started = time.monotonic()
    podman = Podman(work)
    runs = []
    try:
        print("podman:", podman.text("--version").strip())
        build_images(podman, source, work, gate, webhook, launchguard)
        run_all(podman, work, webhook, runs)
    except (RuntimeError, subprocess.SubprocessError, OSError) as e:
        check(False, "the test ran to its end", str(e)[-4000:])
    finally:
        if webhook_test.fails:
            for run in runs:
                run.diagnose()
        for run in runs:
            run.remove()
        podman.run("rm", "--all", "--force", check_rc=False)
        podman.run("rmi", "--all", "--force", check_rc=False)
        podman.run("volume", "prune", "--force", check_rc=False)
        shutil.rmtree(podman.state, ignore_errors=True)
    print(f"podman: test took {time.monotonic() - started:.1f} s")
    print(f"{webhook_test.passes} passed, {webhook_test.fails} failed")
    if webhook_test.fails == 0 and not os.environ.get("LG_PODMAN_KEEP"):
        shutil.rmtree(work, ignore_errors=True)
    else:
        shutil.rmtree(os.path.join(work, "storage"), ignore_errors=True)
        print(f"podman: work dir kept: {work} (the pods played, webhook.log, termination logs)")
    return 0 if webhook_test.fails == 0 else 1


def run_all(podman, work, webhook, runs):
    profile = os.path.join(HERE, "topology-profile.yaml")
    config = os.path.join(work, "webhook-config.yaml")
    with open(config, "w") as f:
        json.dump({"mode": "enforce", "defaultProfile": profile,
                   "gate": {"enabled": True, "image": LAUNCHGUARD_IMAGE, "onError": "allow"}}, f)
    certs = Certificates(work)
    crt, key = certs.issue("serving")
    server = Webhook(webhook, work, crt, key, "--config", config)
    try:
        client = Client(server.port, certs.path("ca.crt"))
        suffix = TAG.replace("-", "")
        gated = None

        # The runtime's own launch: the pod as written, no webhook.
        control_name = f"lg-e2e-control-{suffix}"
        control = PodRun(podman, work, "control", base_pod(control_name, WORKLOAD_CARRIES,
                                                           term_file(work, "control")))
        runs.append(control)
        _, control_argv, control_env = launch(control.stdout if control.exit_code is not None else "")
        check(control.exit_code == 0 and control_argv == COMMAND + ARGS,
              "[control] the unpatched pod runs the workload with the spec's command and args",
              f"exit {control.exit_code}: {control_argv}")
        missing_spec = {e["name"] + "=" + e["value"] for e in ENV} - set(control_env)
        check(not missing_spec, "[control] the runtime gives the workload the spec's env", str(missing_spec))

        # 1. The image lacks the topology file: the gate blocks.
        log = term_file(work, "missing")
        pod = mutate(client, base_pod(f"lg-e2e-missing-{suffix}", WORKLOAD_MISSING, log), "missing")
        if pod:
            run = PodRun(podman, work, "missing", pod)
            runs.append(run)
            with open(log, encoding="utf-8", errors="replace") as f:
                message = f.read()
            check(run.exit_code == BLOCK_EXIT, f"[missing] the container exits {BLOCK_EXIT}",
                  f"exit {run.exit_code}\n{run.stdout[-1500:]}{run.stderr[-1500:]}")
            check("argv " not in run.stdout, "[missing] the workload never started", run.stdout[-1500:])
            names_it = "topo.file-missing" in message and TOPO in message and "-> fix: " in message
            check(names_it and 0 < len(message.encode()) <= 4096,
                  "[missing] the termination message names topo.file-missing, the file and the fix (<= 4096 bytes)",
                  message[:2000])
            check("topo.file-missing" in run.stderr and TOPO in run.stderr,
                  "[missing] stderr (podman logs) names topo.file-missing and the file", run.stderr[-2000:])

        # 2. The image carries it: the workload runs as the runtime would run it.
        log = term_file(work, "carries")
        name = f"lg-e2e-carries-{suffix}"
        pod = mutate(client, base_pod(name, WORKLOAD_CARRIES, log), "carries")
        if pod:
            run = PodRun(podman, work, "carries", pod)
            runs.append(run)
            uid, argv, env = launch(run.stdout)
            check(run.exit_code == 0, "[carries] the container exits 0",
                  f"exit {run.exit_code}\n{run.stdout[-1500:]}{run.stderr[-1500:]}")
            check(argv == COMMAND + ARGS, "[carries] the workload's argv is exactly the spec's command + args",
                  f"{argv} != {COMMAND + ARGS}")
            check(sorted(env) == expected_env(control_env, name, control_name),
                  "[carries] its environment is exactly the one the runtime gives without the gate",
                  f"{env}\n!= {control_env}")
            check(run.stderr.strip() == "", "[carries] the gate printed nothing", run.stderr[-1500:])
            check(os.path.getsize(log) == 0, "[carries] no termination message")
            check_volume(podman, run)
            gated = run

        # 3. Non-root, read-only root filesystem, no capabilities.
        log = term_file(work, "nonroot")
        name = f"lg-e2e-nonroot-{suffix}"
        pod = mutate(client, base_pod(name, WORKLOAD_CARRIES, log, nonroot=True), "nonroot")
        if pod:
            run = PodRun(podman, work, "nonroot", pod)
            runs.append(run)
            uid, argv, env = launch(run.stdout)
            check(run.exit_code == 0 and uid == "uid 1000 gid 1000",
                  "[nonroot] the container exits 0, the workload ran as 1000:1000",
                  f"exit {run.exit_code}, {uid}\n{run.stdout[-1500:]}{run.stderr[-1500:]}")
            check(argv == ["show-launch"] + COMMAND[1:] + ARGS,
                  "[nonroot] argv exactly as written (command found through the image's PATH)", str(argv))
            check(sorted(env) == expected_env(control_env, name, control_name),
                  "[nonroot] the environment is the runtime's, unchanged", f"{env}\n!= {control_env}")
            check(run.stderr.strip() == "", "[nonroot] the gate printed nothing", run.stderr[-1500:])
        run_hostile(podman, work, client, suffix, runs)
        client.close()
        if gated:
            report_timing(control, gated, work)
    finally:
        server.stop()



# A permissive profile: what a pod that can rewrite the gate's folder would
# install in place of the site's (the site's without topo.file-missing).
LAX_PROFILE = ("name: lax\ndescription: what a hostile pod would install\nrules:\n"
               "  topo.file-missing: 'off'\n  power.governor: 'off'\n  power.cstates: 'off'\n  power.turbo-off: 'off'\n")


def hostile_install(name, volume="launchguard-gate"):
    """An init container that installs the real gate with LAX_PROFILE into
    /launchguard: were it the gate's folder, the workload would run."""
    return {"name": name, "image": LAUNCHGUARD_IMAGE,
            "command": ["/usr/bin/launchguard-gate", "install", "--into", GATE_DIR, "--profile-yaml", LAX_PROFILE],
            "volumeMounts": [{"name": volume, "mountPath": GATE_DIR}]}


def hostile_pods(work, suffix):
    """(label, pod, the gate's names, the GPU container, whether kube play
    may fail) for each way a pod tries to get around the gate. Every pod
    runs the workload without its topology file: the gate must block it."""
    def pod(label):
        return base_pod(f"lg-e2e-{label}-{suffix}", WORKLOAD_MISSING, term_file(work, label))
    renamed = ("launchguard-gate-2", "launchguard-gate-install-2", GATE_DIR + "-2")
    main = lambda spec: spec["containers"][0]  # noqa: E731
    pods = []

    # A user init container on a volume named launchguard-gate (its own here:
    # one it only names is refused at /validate, checked below).
    p = pod("init-on-volume")
    p["spec"]["volumes"].append({"name": "launchguard-gate", "emptyDir": {}})
    p["spec"]["initContainers"] = [hostile_install("rewrite-gate")]
    pods.append(("init-on-volume", p, renamed, main, False))

    # A fake install container, and the workload already "wrapped" in the
    # gate it installs.
    p = pod("fake-install")
    p["spec"]["volumes"].append({"name": "launchguard-gate", "emptyDir": {}})
    p["spec"]["initContainers"] = [hostile_install("launchguard-gate-install")]
    c = p["spec"]["containers"][0]
    c["command"] = [GATE, "run", "--profile", GATE_DIR + "/profile.yaml", "--mode", "enforce", "--on-error", "allow",
                    "--termination-log", "/dev/termination-log", "--"] + c["command"]
    c["volumeMounts"].append({"name": "launchguard-gate", "mountPath": GATE_DIR, "readOnly": True})
    pods.append(("fake-install", p, renamed, main, False))

    # A file of the user's where the gate would be (show-launch: it runs
    # the workload's argv as its own and exits 0), and a folder over /launchguard.
    fake_gate = os.path.join(work, "show-launch")
    p = pod("own-file")
    p["spec"]["volumes"].append({"name": "user-volume", "hostPath": {"path": fake_gate, "type": "File"}})
    p["spec"]["containers"][0]["volumeMounts"].append({"name": "user-volume", "mountPath": GATE})
    pods.append(("own-file", p, renamed, main, False))
    folder = os.path.join(work, "fake-gate-folder")
    os.makedirs(folder, exist_ok=True)
    shutil.copy(fake_gate, os.path.join(folder, "launchguard-gate"))
    p = pod("own-folder")
    p["spec"]["volumes"].append({"name": "user-volume", "hostPath": {"path": folder, "type": "Directory"}})
    p["spec"]["containers"][0]["volumeMounts"].append({"name": "user-volume", "mountPath": GATE_DIR})
    pods.append(("own-folder", p, renamed, main, False))

    # The GPU container as a native sidecar beside a container without GPUs.
    p = pod("sidecar")
    sidecar = p["spec"]["containers"][0]
    sidecar["restartPolicy"] = "Always"
    p["spec"]["initContainers"] = [sidecar]
    p["spec"]["containers"] = [{"name": "main", "image": WORKLOAD_MISSING, "command": ["/usr/bin/show-launch"]}]
    pods.append(("sidecar", p, ("launchguard-gate", "launchguard-gate-install", GATE_DIR),
                 lambda spec: spec["initContainers"][1], True))
    return pods


def run_hostile(podman, work, client, suffix, runs):
    """Each hostile pod after the real /mutate, run as the kubelet would:
    the gated workload without its topology file exits 78 as the plain one does."""
    for label, pod, names, container, play_may_fail in hostile_pods(work, suffix):
        patched = mutate(client, pod, label, names, container)
        if not patched:
            continue
        status, body, _ = client.post("/validate?timeout=10s", review(patched, label + "-validate"))
        resp = response_of(status, body) or {}
        check(resp.get("allowed") is True and "k8s.gate-bypass" not in json.dumps(resp),
              f"[{label}] /validate allows the patched pod: nothing in it gets around the gate", body[:800])
        run = PodRun(podman, work, label, patched, play_may_fail)
        runs.append(run)
        check(run.exit_code == BLOCK_EXIT, f"[{label}] the gated workload exits {BLOCK_EXIT} as the plain one does",
              f"exit {run.exit_code}\n{run.stdout[-1500:]}{run.stderr[-1500:]}")
        check("argv " not in run.stdout, f"[{label}] the workload never started", run.stdout[-1500:])

    # A user init container on the gate's volume that the pod leaves to the
    # webhook to define: renamed at /mutate (the mount then names nothing),
    # refused at /validate, naming the container.
    p = base_pod(f"lg-e2e-init-undefined-{suffix}", WORKLOAD_MISSING, term_file(work, "init-undefined"))
    p["spec"]["initContainers"] = [hostile_install("rewrite-gate")]
    mutate(client, p, "init-undefined", ("launchguard-gate-2", "launchguard-gate-install-2", GATE_DIR + "-2"))
    status, body, _ = client.post("/validate?timeout=10s", review(p, "init-undefined-validate"))
    resp = response_of(status, body) or {}
    message = resp.get("status", {}).get("message", "")
    check(resp.get("allowed") is False and "k8s.gate-bypass" in message and "(rewrite-gate)" in message,
          "[init-undefined] /validate denies a container on the gate's volume, naming it", body[:800])


def check_volume(podman, run):
    """What the init container left in the emptyDir: the gate 0555, the
    profile 0444, nothing half-written."""
    mountpoint = podman.text("volume", "inspect", "launchguard-gate", "--format", "{{.Mountpoint}}",
                             check_rc=False).strip()
    entries = {}
    if mountpoint and os.path.isdir(mountpoint):
        for entry in os.listdir(mountpoint):
            entries[entry] = oct(os.stat(os.path.join(mountpoint, entry)).st_mode & 0o7777)
    check(entries == {"launchguard-gate": "0o555", "profile.yaml": "0o444"},
          "[carries] the emptyDir holds launchguard-gate (0555) and profile.yaml (0444), nothing else", str(entries))


def report_timing(control, gated, work):
    """From podman's event log: pod start (its infra container) to the
    workload's start, with and without the init container. And what the
    install command costs by itself: the image's copy run on this machine,
    the median of 5."""
    gate = os.path.join(work, "launchguard-gate")
    without = control.seconds(("infra", "start"), (control.work_container, "start"))
    with_gate = gated.seconds(("infra", "start"), (gated.work_container, "start"))
    with open(os.path.join(HERE, "topology-profile.yaml")) as f:
        profile = f.read()
    runs = []
    for i in range(5):
        into = os.path.join(work, f"install-{i}")
        os.mkdir(into)
        started = time.monotonic()
        subprocess.run([gate, "install", "--into", into, "--profile-yaml", profile], check=True)
        runs.append(time.monotonic() - started)
    install = sorted(runs)[2]
    if None in (without, with_gate):
        print(f"timing: events missing ({sorted(event_times(gated.podman, gated.name))})")
        return
    print(f"timing: pod start to workload start {with_gate * 1000:.0f} ms with the gate's init container, "
          f"{without * 1000:.0f} ms without (podman events); `launchguard-gate install` alone "
          f"{install * 1000:.1f} ms (median of 5, size {os.path.getsize(gate) / 2**20:.1f} MiB)")


if __name__ == "__main__":
    sys.exit(main())
