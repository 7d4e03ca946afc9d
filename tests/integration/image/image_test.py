#!/usr/bin/python3
"""The launchguard-webhook image, built from the Containerfile by real buildah
and run from its exported root filesystem.

Usage: image_test.py SOURCE_DIR WORK_DIR LAUNCHGUARD WEBHOOK GATE FIXTURES_DIR
       image_test.py --from-source SOURCE_DIR WORK_DIR FIXTURES_DIR

Builds the image as the suite does (see the Containerfile): the binaries of
this build go through deploy/image/make-rootfs.sh into the `rootfs` stage
with `buildah bud --build-context rootfs=DIR --isolation chroot
--storage-driver vfs`, so the project is not compiled a second time; buildah
keeps its storage under WORK_DIR. With --from-source it builds the way users
do, compiling in the build stage, on a Debian 12 base made here with
`debootstrap --variant=minbase bookworm` (no registry is reachable) and kept
in WORK_DIR's storage for the next run; that takes as long as a build of the
project. Then checks the image's configuration (user
65532, the webhook as entrypoint), that it holds no shell, exports its root
filesystem and runs from it with chroot: both programs' --version,
`launchguard review` of a manifest, the static launch gate as the webhook's
init container and a GPU container run it (install into a volume as 65532,
then the installed copy judging a launch and exec'ing its command), and launchguard-webhook as the chart runs
it (UID 65532, read-only root, the certificate mounted at
/etc/launchguard/tls) answering AdmissionReviews over TLS on loopback, then
exiting 0 on SIGTERM. Needs root (chroot, mounts in a private mount
namespace) and the Debian package buildah. Prints PASS/FAIL lines and "N
passed, M failed"; exits non-zero on any failure, never skips.
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import time

import jsonpatch
import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "webhook"))
import webhook_test  # noqa: E402  (its check() keeps the counts)
from webhook_test import Certificates, Client, check, review, response_of  # noqa: E402

IMAGE = "localhost/launchguard-webhook:test"
LOCAL_BASE = "localhost/debian:bookworm-minbase"
NONROOT = 65532


class Buildah:
    """buildah with this test's own storage, so it never touches the
    machine's image store and a rerun starts from a known state."""

    def __init__(self, work):
        self.base = ["buildah", "--root", os.path.join(work, "storage"), "--runroot", os.path.join(work, "run"),
                     "--storage-driver", "vfs"]

    def has_image(self, name):
        return subprocess.run(self.base + ["inspect", "--type", "image", name], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0

    def run(self, *args, check_rc=True):
        result = subprocess.run(self.base + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if check_rc and result.returncode != 0:
            raise RuntimeError(f"buildah {' '.join(args)}: exit {result.returncode}\n{result.stdout[-3000:]}")
        return result.stdout


def build_image(buildah, source, work, launchguard, webhook, gate):
    rootfs_input = os.path.join(work, "rootfs-input")
    shutil.rmtree(rootfs_input, ignore_errors=True)
    subprocess.run([os.path.join(source, "deploy", "image", "make-rootfs.sh"), rootfs_input, launchguard, webhook,
                    gate],
                   check=True)
    buildah.run("rmi", "--force", IMAGE, check_rc=False)
    started = time.monotonic()
    output = buildah.run("bud", "--isolation", "chroot", "--build-context", f"rootfs={rootfs_input}",
                         "--file", os.path.join(source, "Containerfile"), "--tag", IMAGE, source)
    print(f"image: built in {time.monotonic() - started:.1f} s")
    # The compile stage must be skipped: compiling again would double CI time.
    check("install-deps.sh" not in output and "cmake" not in output,
          "buildah skipped the build stage (the rootfs stage came from --build-context)", output[-2000:])


def local_base_image(buildah, work):
    """Debian 12 from debootstrap, committed as LOCAL_BASE once per WORK."""
    if buildah.has_image(LOCAL_BASE):
        return
    tree = os.path.join(work, "debootstrap")
    shutil.rmtree(tree, ignore_errors=True)
    mirror = os.environ.get("LAUNCHGUARD_DEBIAN_MIRROR", "http://deb.debian.org/debian")
    started = time.monotonic()
    subprocess.run(["debootstrap", "--variant=minbase", "bookworm", tree, mirror], check=True,
                   stdout=subprocess.DEVNULL)
    container = buildah.run("from", "scratch").strip().splitlines()[-1]
    try:
        mounted = buildah.run("mount", container).strip()
        subprocess.run(["cp", "-a", tree + "/.", mounted], check=True)
        buildah.run("commit", container, LOCAL_BASE)
    finally:
        buildah.run("rm", container, check_rc=False)
        shutil.rmtree(tree, ignore_errors=True)
    print(f"image: {LOCAL_BASE} made with debootstrap in {time.monotonic() - started:.1f} s")


def build_image_from_source(buildah, source, work):
    local_base_image(buildah, work)
    buildah.run("rmi", "--force", IMAGE, check_rc=False)
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    started = time.monotonic()
    output = buildah.run("bud", "--isolation", "chroot", "--build-arg", f"BASE_IMAGE={LOCAL_BASE}",
                         "--build-arg", f"CMAKE_BUILD_PARALLEL_LEVEL={jobs}",
                         "--file", os.path.join(source, "Containerfile"), "--tag", IMAGE, source)
    print(f"image: built from source in {time.monotonic() - started:.1f} s")
    check("install-deps.sh --compile-only" in output and "Linking CXX executable webhook/launchguard-webhook" in output,
          "the build stage installed the compile packages and built the webhook", output[-2000:])


def check_configuration(buildah):
    info = json.loads(buildah.run("inspect", "--type", "image", IMAGE))
    config = info.get("OCIv1", {}).get("config", {})
    check(config.get("User") == f"{NONROOT}:{NONROOT}", f"image user is {NONROOT}:{NONROOT}", config.get("User"))
    check(config.get("Entrypoint") == ["/usr/bin/launchguard-webhook"], "entrypoint is /usr/bin/launchguard-webhook",
          config.get("Entrypoint"))
    check("8443/tcp" in config.get("ExposedPorts", {}), "port 8443 exposed", config.get("ExposedPorts"))


def export_rootfs(buildah, work):
    """Copies the image's root filesystem to WORK/rootfs, as a runtime
    would unpack it."""
    exported = os.path.join(work, "rootfs")
    shutil.rmtree(exported, ignore_errors=True)
    container = buildah.run("from", "--pull-never", IMAGE).strip().splitlines()[-1]
    try:
        mounted = buildah.run("mount", container).strip()
        subprocess.run(["cp", "-a", mounted, exported], check=True)
    finally:
        buildah.run("rm", container, check_rc=False)
    return exported


def check_contents(rootfs):
    size = 0
    writable = []
    for directory, dirs, files in os.walk(rootfs):
        for name in dirs + files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            if not os.path.islink(path):
                size += info.st_size
                if info.st_uid != 0 or (info.st_mode & 0o002 and path != os.path.join(rootfs, "tmp")):
                    writable.append(os.path.relpath(path, rootfs))
    print(f"image: root filesystem {size / 2**20:.1f} MiB")
    check(size < 40 * 2**20, f"root filesystem under 40 MiB ({size / 2**20:.1f} MiB)")
    shells = [s for s in ("bin/sh", "bin/bash", "bin/dash", "usr/bin/busybox") if os.path.lexists(os.path.join(rootfs, s))]
    check(not shells, "no shell in the image", shells)
    check(not writable, "every file owned by root and not world-writable but /tmp", writable[:10])
    check(os.path.isfile(os.path.join(rootfs, "usr/share/doc/libssl3/copyright")),
          "the copyright files of the copied libraries are there")


def chroot(rootfs, *command, user=None):
    userspec = ["--userspec", f"{user}:{user}"] if user is not None else []
    return subprocess.run(["chroot", *userspec, rootfs, *command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=60)


def check_cli(rootfs, fixtures):
    result = chroot(rootfs, "/usr/bin/launchguard", "--version")
    check(result.returncode == 0 and result.stdout.startswith("launchguard "),
          "chroot ROOTFS /usr/bin/launchguard --version", result.stdout)
    result = chroot(rootfs, "/usr/bin/launchguard-webhook", "--version", user=NONROOT)
    check(result.returncode == 0 and result.stdout.startswith("launchguard-webhook "),
          "launchguard-webhook --version as 65532", result.stdout)
    # review parses YAML in a forked child: the image must not need more for that.
    shutil.copy(os.path.join(fixtures, "k8s", "gpu-pod-without-topology.yaml"), os.path.join(rootfs, "tmp", "pod.yaml"))
    result = chroot(rootfs, "/usr/bin/launchguard", "review", "--profile", "azure-ndv5", "/tmp/pod.yaml", user=NONROOT)
    check(result.returncode == 1 and "topo.required" in result.stdout,
          "launchguard review in the image blocks the pod without a topology file (exit 1)", result.stdout[-1500:])
    os.unlink(os.path.join(rootfs, "tmp", "pod.yaml"))


def is_static_elf(path):
    """An ELF executable with no program interpreter (PT_INTERP) loads no
    shared library: what `file` calls statically linked."""
    result = subprocess.run(["readelf", "-l", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return result.returncode == 0 and "INTERP" not in result.stdout


def in_container(rootfs, *command):
    """COMMAND as 65532 in ROOTFS with /proc, /sys and /dev mounted as a
    container runtime mounts them (the gate reads its own /proc/self/exe,
    the node's /sys and /dev), in a private mount namespace."""
    script = ('set -e; root=$1; shift; for d in proc sys dev; do mkdir -p "$root/$d"; done; '
              'mount -t proc proc "$root/proc"; mount --rbind /sys "$root/sys"; mount --rbind /dev "$root/dev"; '
              f'exec chroot --userspec {NONROOT}:{NONROOT} "$root" "$@"')
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", rootfs,
                           *command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)


def check_gate(rootfs):
    """/usr/bin/launchguard-gate as the webhook injects it: the init
    container installs it into a volume as 65532, the GPU container runs the
    installed copy in front of its command."""
    gate = os.path.join(rootfs, "usr/bin/launchguard-gate")
    check(os.path.isfile(gate) and is_static_elf(gate), "/usr/bin/launchguard-gate is a static executable")
    volume = os.path.join(rootfs, "tmp", "launchguard")
    os.makedirs(volume, exist_ok=True)
    os.chown(volume, NONROOT, NONROOT)
    try:
        result = in_container(rootfs, "/usr/bin/launchguard-gate", "install", "--into", "/tmp/launchguard",
                              "--profile", "default")
        check(result.returncode == 0 and os.path.isfile(os.path.join(volume, "launchguard-gate")) and
              os.path.isfile(os.path.join(volume, "profile.yaml")),
              "launchguard-gate install --into /tmp/launchguard as 65532", result.stdout)
        result = in_container(rootfs, "/tmp/launchguard/launchguard-gate", "run", "--profile",
                              "/tmp/launchguard/profile.yaml", "--mode", "warn", "--termination-log",
                              "/tmp/launchguard/termination-log", "--", "/usr/bin/launchguard", "--version")
        check(result.returncode == 0 and "launchguard " in result.stdout,
              "the installed gate judges the launch and execs its command (launchguard --version)",
              result.stdout[-1500:])
    finally:
        shutil.rmtree(volume, ignore_errors=True)
        for d in ("proc", "sys", "dev"):
            path = os.path.join(rootfs, d)
            if os.path.isdir(path) and not os.listdir(path):
                os.rmdir(path)


class ImageWebhook(webhook_test.Webhook):
    """launchguard-webhook started as the chart starts it: UID 65532, a
    read-only root, the TLS Secret mounted at /etc/launchguard/tls."""

    def __init__(self, rootfs, tls_dir, *args):
        # A runtime makes the mount point before it makes the root read-only.
        os.makedirs(os.path.join(rootfs, "etc/launchguard/tls"), exist_ok=True)
        script = ('set -e; mount --bind "$1" "$1"; mount -o remount,bind,ro "$1"; '
                  'mount --bind "$2" "$1/etc/launchguard/tls"; root=$1; shift 2; '
                  f'exec chroot --userspec={NONROOT}:{NONROOT} "$root" "$@"')
        self.start(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", rootfs, tls_dir,
                    "/usr/bin/launchguard-webhook", "--listen", "127.0.0.1:0",
                    "--tls-cert", "/etc/launchguard/tls/tls.crt", "--tls-key", "/etc/launchguard/tls/tls.key",
                    "--port-file", "/etc/launchguard/tls/port", "--log-format", "json", *args],
                   os.path.join(tls_dir, "port"), tls_dir)


def check_webhook(rootfs, work, fixtures):
    tls_dir = os.path.join(work, "tls")
    shutil.rmtree(tls_dir, ignore_errors=True)
    os.makedirs(tls_dir)
    certs = Certificates(tls_dir)
    crt, key = certs.issue("serving")
    os.replace(crt, certs.path("tls.crt"))
    os.replace(key, certs.path("tls.key"))
    for path in (tls_dir, certs.path("tls.crt"), certs.path("tls.key")):
        os.chown(path, NONROOT, NONROOT)  # fsGroup: the pod's user reads the Secret and writes the port file
    with open(os.path.join(fixtures, "k8s", "gpu-pod-without-topology.yaml")) as f:
        pod = yaml.safe_load(f)
    server = ImageWebhook(rootfs, tls_dir, "--profile", "azure-ndv5")
    try:
        with open(f"/proc/{server.proc.pid}/status") as f:
            uids = [line.split()[1:] for line in f if line.startswith("Uid:")][0]
        check(uids == [str(NONROOT)] * 4, "the webhook process runs as 65532", uids)
        with open(f"/proc/{server.proc.pid}/mountinfo") as f:
            root_options = [line.split()[5] for line in f if line.split()[4] == "/"]
        check(root_options and root_options[-1].split(",")[0] == "ro", "its root filesystem is read-only", root_options)
        client = Client(server.port, certs.path("ca.crt"))
        status, body = client.get("/healthz")
        check(status == 200, "GET /healthz over TLS (SNI launchguard.launchguard.svc) answers 200", body[:200])
        status, body = client.get("/readyz")
        check(status == 200, "GET /readyz answers 200", body[:200])
        status, body, _ = client.post("/validate?timeout=5s", review(pod, "image-validate"))
        resp = response_of(status, body) or {}
        check(resp.get("uid") == "image-validate" and resp.get("allowed") is False
              and "topo.required" in resp.get("status", {}).get("message", ""),
              "/validate denies the pod without a topology file, naming topo.required", body[:400])
        status, body, _ = client.post("/mutate?timeout=5s", review(pod, "image-mutate"))
        resp = response_of(status, body) or {}
        ops = json.loads(base64.b64decode(resp["patch"])) if "patch" in resp else []
        patched = jsonpatch.apply_patch(pod, ops) if ops else pod
        env = {e["name"]: e.get("value") for e in patched["spec"]["containers"][0].get("env", [])}
        check(resp.get("allowed") is True and resp.get("patchType") == "JSONPatch"
              and env.get("NCCL_TOPO_FILE") == "/opt/microsoft/ndv5-topo.xml",
              "/mutate answers a JSON Patch that sets NCCL_TOPO_FILE", body[:400])
        status, body = client.get("/metrics")
        check(status == 200 and b'launchguard_webhook_decisions_total{endpoint="/validate",decision="block"} 1' in body,
              "/metrics counts the blocked review", body[:300])
        client.close()
    finally:
        server.stop()
    check(server.proc.returncode == 0, f"SIGTERM: the webhook exits 0 (exit {server.proc.returncode})")


def main():
    from_source = sys.argv[1:2] == ["--from-source"]
    if len(sys.argv) != (5 if from_source else 7):
        print(__doc__)
        return 2
    if from_source:
        source, work, fixtures = sys.argv[2:]
    else:
        source, work, launchguard, webhook, gate, fixtures = sys.argv[1:]
    if os.getuid() != 0:
        print(f"FAIL: must run as root (uid {os.getuid()}): chroot and mounts need it")
        return 1
    if shutil.which("buildah") is None:
        print("FAIL: buildah not found (Debian package buildah; scripts/install-deps.sh installs it)")
        return 1
    os.makedirs(work, exist_ok=True)
    buildah = Buildah(work)
    started = time.monotonic()
    if from_source:
        build_image_from_source(buildah, source, work)
    else:
        build_image(buildah, source, work, launchguard, webhook, gate)
    check_configuration(buildah)
    rootfs = export_rootfs(buildah, work)
    check_contents(rootfs)
    check_cli(rootfs, fixtures)
    check_gate(rootfs)
    check_webhook(rootfs, work, fixtures)
    buildah.run("rmi", "--force", IMAGE, check_rc=False)  # vfs keeps a full copy per layer
    print(f"image: test took {time.monotonic() - started:.1f} s")
    print(f"{webhook_test.passes} passed, {webhook_test.fails} failed")
    return 0 if webhook_test.fails == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
