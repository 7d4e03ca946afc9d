#!/usr/bin/python3
"""The chart's rendered configuration, profile files and certificate, run by
the real launchguard-webhook.

A pytest module (Debian's python3-pytest); ctest runs every case, one runs
with -k, e.g. `python3 -m pytest -p no:cacheprovider tests/integration/helm/chart_webhook_test.py -k gate`.
Settings as chart_test.py's, and LAUNCHGUARD_WEBHOOK (by default
build/webhook/launchguard-webhook). A missing tool is a failure, never a skip.

For each case: helm template renders the chart; the ConfigMap's files and the
TLS Secret are written to a directory laid out as the pod's mounts (the
config's absolute /etc/launchguard/config paths rewritten to that directory);
the webhook starts with the Deployment's own flags (only --listen changed, to
loopback port 0); then, as the API server does, the test connects with SNI
<service>.<namespace>.svc, trusting only the webhook configuration's caBundle,
and asks /healthz, /readyz, /validate and /mutate (which adds the launch gate
from the chart's image). SIGTERM must end it cleanly.
"""
import base64
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chart_support import CHART, NAMESPACE, NPM, SOURCE, Helm, check, failures, one, setting  # noqa: E402

WEBHOOK = setting("LAUNCHGUARD_WEBHOOK", os.path.join(SOURCE, "build", "webhook", "launchguard-webhook"))
PROFILES = os.path.join(SOURCE, "profiles")
helm = Helm(NPM, CHART)
MOUNT = "/etc/launchguard/config"


def request(port, host, ca_pem, method, path, body=None):
    """One HTTPS/1.1 request the way the API server makes it; (status, body)."""
    context = ssl.create_default_context(cadata=ca_pem)
    context.set_alpn_protocols(["http/1.1"])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=host) as tls:
            data = json.dumps(body).encode() if body is not None else b""
            head = (f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n")
            tls.sendall(head.encode() + data)
            response = b""
            while chunk := tls.recv(65536):
                response += chunk
    header, _, payload = response.partition(b"\r\n\r\n")
    status = int(header.split(b" ")[1])
    return status, payload.decode(errors="replace")


def pod_review(namespace, gpus=0):
    container = {"name": "c", "image": "busybox"}
    if gpus:
        container.update({"command": ["python", "train.py"], "resources": {"limits": {"nvidia.com/gpu": gpus}}})
    return {
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": namespace, "operation": "CREATE",
            "userInfo": {"username": "test"},
            "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": namespace},
                       "spec": {"containers": [container]}},
        },
    }


def run_case(name, values):
    objects = helm.render(values)
    configmap, deployment = one(objects, "ConfigMap"), one(objects, "Deployment")
    secret = one(objects, "Secret")
    service = one(objects, "Service")
    validating = one(objects, "ValidatingWebhookConfiguration")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    with tempfile.TemporaryDirectory() as root:
        # The pod's mounts, under root.
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        local = {}
        for mount_path, volume_name in mounts.items():
            volume = volumes[volume_name]
            target = os.path.join(root, mount_path.lstrip("/"))
            local[mount_path] = target
            if "configMap" in volume:
                for item in volume["configMap"]["items"]:
                    text = configmap["data"][item["key"]]
                    if item["key"] == "config.yaml":
                        text = text.replace(MOUNT + "/", os.path.join(root, MOUNT.lstrip("/")) + "/")
                    path = os.path.join(target, item["path"])
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, "w") as f:
                        f.write(text)
            else:
                os.makedirs(target, exist_ok=True)
                for key, value in secret["data"].items():
                    with open(os.path.join(target, key), "wb") as f:
                        f.write(base64.b64decode(value))

        def localize(arg):
            flag, _, value = arg.partition("=")
            for mount_path, target in local.items():
                if value.startswith(mount_path + "/"):
                    value = target + value[len(mount_path):]
            return f"{flag}={value}"

        port_file = os.path.join(root, "port")
        args = [localize(a) for a in container["args"] if not a.startswith("--listen=")]
        command = [WEBHOOK, *args, "--listen=127.0.0.1:0", f"--port-file={port_file}"]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.time() + 20
            while not os.path.exists(port_file) or not open(port_file).read().strip():
                if process.poll() is not None or time.time() > deadline:
                    out = process.stdout.read() if process.poll() is not None else "(still running)"
                    check(False, f"{name}: the webhook did not start with the chart's configuration: {out}")
                    return
                time.sleep(0.1)
            port = int(open(port_file).read())
            host = f"{service['metadata']['name']}.{NAMESPACE}.svc"
            ca = base64.b64decode(validating["webhooks"][0]["clientConfig"]["caBundle"]).decode()
            for path in ("/healthz", "/readyz"):
                status, _ = request(port, host, ca, "GET", path)
                check(status == 200, f"{name}: GET {path} answered {status}")
            review = pod_review("team-a")
            status, body = request(port, host, ca, "POST", validating["webhooks"][0]["clientConfig"]["service"]["path"], review)
            if check(status == 200, f"{name}: POST /validate answered {status}: {body}"):
                answer = json.loads(body)
                check(answer.get("response", {}).get("uid") == review["request"]["uid"], f"{name}: review uid not echoed: {body}")
            # /mutate adds the launch gate from the chart's own image unless gate.enabled is false.
            mutating = one(objects, "MutatingWebhookConfiguration")
            review = pod_review("team-a", gpus=8)
            status, body = request(port, host, ca, "POST", mutating["webhooks"][0]["clientConfig"]["service"]["path"], review)
            if check(status == 200, f"{name}: POST /mutate answered {status}: {body}"):
                response = json.loads(body).get("response", {})
                ops = json.loads(base64.b64decode(response["patch"])) if "patch" in response else []
                installs = [op["value"] for op in ops if isinstance(op.get("value"), dict)
                            and op["value"].get("name") == "launchguard-gate-install"]
                installs += [v for op in ops if isinstance(op.get("value"), list) for v in op["value"]
                             if isinstance(v, dict) and v.get("name") == "launchguard-gate-install"]
                if values.get("gate", {}).get("enabled", True):
                    check(len(installs) == 1 and installs[0]["image"] == container["image"],
                          f"{name}: /mutate adds the launch gate from the chart's image {container['image']}: {ops}")
                else:
                    check(not installs, f"{name}: gate.enabled false, yet /mutate added the gate: {ops}")
            print(f"ok: {name}: the webhook runs the chart's config and serves the chart's certificate for {host}")
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    check(process.wait(timeout=30) == 0, f"{name}: exit status {process.returncode} after SIGTERM")
                except subprocess.TimeoutExpired:
                    process.kill()
                    check(False, f"{name}: still running 30 s after SIGTERM")
            output = process.stdout.read()
            if failures:
                print(output)


def site_profile():
    with open(os.path.join(PROFILES, "bare-metal.yaml")) as f:
        return f.read().replace("name: bare-metal", "name: site-a", 1)


CASES = {
    "defaults": lambda: {},
    "warn, profiles, selection, user modes": lambda: {
        "mode": "warn",
        "defaultProfile": "h100-cx7-ib",
        "profiles": ["azure-ndv5"],
        "profileFiles": {"site-a": site_profile()},
        "selection": [
            {"match": {"node.kubernetes.io/instance-type": "Standard_ND96isr_H100_v5"}, "profile": "azure-ndv5"},
            {"match": {"example.com/site": "a"}, "profile": "site-a"}],
        "userModes": ["enforce", "warn"], "userProfiles": True,
        "server": {"logFormat": "text", "threads": 3, "maxBodyMiB": 4}},
    "site profile as default": lambda: {"defaultProfile": "site-a", "profileFiles": {"site-a": site_profile()}},
    "gate off": lambda: {"gate": {"enabled": False}},
}


@pytest.fixture(scope="session", autouse=True)
def tools():
    """helm and the webhook: a case without them fails (never skips)."""
    for tool in (helm.binary, WEBHOOK):
        if not os.path.exists(tool):
            pytest.fail(f"{tool} is missing")


@pytest.mark.parametrize("name", CASES, ids=[n.replace(",", "").replace(" ", "-") for n in CASES])
def test_chart_runs_in_the_webhook(name):
    run_case(name, CASES[name]())
