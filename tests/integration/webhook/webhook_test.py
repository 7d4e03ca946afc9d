#!/usr/bin/python3
"""launchguard-webhook as the API server calls it: TLS with SNI <svc>.<ns>.svc,
ALPN http/1.1, AdmissionReview v1 POSTs with ?timeout=, keep-alive.

A pytest module (Debian's python3-pytest): ctest runs every case
(tests/integration/webhook/CMakeLists.txt); one case runs with -k, e.g.

  LAUNCHGUARD_WEBHOOK=build/webhook/launchguard-webhook LAUNCHGUARD_FIXTURES=tests/fixtures \
  LAUNCHGUARD_NODE_MODULES=build/npm/node_modules LAUNCHGUARD_SHARED_FIXTURES=../shared/fixtures \
  python3 -m pytest -p no:cacheprovider tests/integration/webhook/webhook_test.py -k rotation

The server, with a CA and serving certificate made here by the openssl CLI, is
started once for the session on 127.0.0.1:0. The cases check: the envelope on
every fixture manifest, every JSON Patch applied by an independent
implementation (python3-jsonpatch) and re-admitted to an empty patch, the
launch gate's injection under a site configuration with `gate:` (every kind,
with and without a command, an own postStart hook, the pod's mode, the
opt-out), every patched object validated offline against the Kubernetes API
schemas (npm kubernetes-models in LAUNCHGUARD_NODE_MODULES,
validate_schema.mjs), the HTTP error paths (400, 404, 405, 413 to a client
still sending, 415 and 501 for codings it does not undo), a header trickled
past the request deadline, a FIFO in place of the certificate, running out
of file descriptors, SIGHUP reloading the certificate, TLS versions and ALPN,
certificate rotation under load without a failed request, and SIGTERM under
load completing the request in flight. Each case prints PASS/FAIL lines and
fails when one of its checks did. The cases that send the public manifests
skip, by name, without LAUNCHGUARD_SHARED_FIXTURES. A missing tool is a
failure, never a skip; so is a run that collects no case (pytest's exit 5).
Uses Debian's python3 (python3-yaml, python3-jsonpatch, python3-pytest), not
a virtualenv.
"""
import base64
import copy
import glob
import http.client
import json
import os
import shutil
import signal
import socket
import resource
import select
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import warnings

import jsonpatch
import pytest
import yaml

SNI = "launchguard.launchguard.svc"
warnings.filterwarnings("ignore", category=DeprecationWarning)  # TLS 1.0/1.1 are set on purpose below
failed_checks = []
# Totals for the scripts that import these helpers and report on their own
# (tests/integration/podman, tests/integration/image).
passes = 0
fails = 0


def check(ok, what, detail=""):
    """A check that lets the case go on: the case fails at its end (conftest.py)."""
    global passes, fails
    if ok:
        passes += 1
        print(f"PASS: {what}")
    else:
        fails += 1
        failed_checks.append(what)
        print(f"FAIL: {what}" + (f"\n    | {detail}" if detail else ""))
    sys.stdout.flush()


def run(*cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Certificates:
    """A CA and serving pairs it signs, with the SANs the API server checks."""

    def __init__(self, root):
        self.root = root
        run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-days", "2", "-subj", "/CN=launchguard-test-ca", "-keyout", self.path("ca.key"), "-out", self.path("ca.crt"))
        with open(self.path("san.ext"), "w") as f:
            f.write(f"subjectAltName=DNS:{SNI},DNS:launchguard.launchguard.svc.cluster.local,IP:127.0.0.1\n")

    def path(self, name):
        return os.path.join(self.root, name)

    def issue(self, name):
        run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-subj", f"/CN={SNI}", "-keyout", self.path(name + ".key"), "-out", self.path(name + ".csr"))
        run("openssl", "x509", "-req", "-in", self.path(name + ".csr"), "-CA", self.path("ca.crt"),
            "-CAkey", self.path("ca.key"), "-CAcreateserial", "-days", "2", "-extfile", self.path("san.ext"),
            "-out", self.path(name + ".crt"))
        return self.path(name + ".crt"), self.path(name + ".key")


class Client(http.client.HTTPSConnection):
    """An HTTPS connection that dials 127.0.0.1 but speaks TLS to the service name."""

    def __init__(self, port, cafile, timeout=10, **tls):
        context = ssl.create_default_context(cafile=cafile)
        context.set_alpn_protocols(tls.pop("alpn", ["http/1.1"]))
        if "maximum_version" in tls:
            context.maximum_version = tls.pop("maximum_version")
        if "minimum_version" in tls:
            context.minimum_version = tls.pop("minimum_version")
        super().__init__("127.0.0.1", port, timeout=timeout, context=context)
        self._tls_context = context

    def connect(self):
        sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._tls_context.wrap_socket(sock, server_hostname=SNI)

    def post(self, path, body, headers=None):
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        self.request("POST", path, body=body, headers=h)
        r = self.getresponse()
        return r.status, r.read(), r

    def get(self, path):
        self.request("GET", path)
        r = self.getresponse()
        self.last_headers = dict(r.getheaders())
        return r.status, r.read()


class Webhook:
    def __init__(self, binary, work, cert, key, *extra, preexec_fn=None):
        port_file = os.path.join(work, "port")
        self.start([binary, "--listen", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key,
                    "--port-file", port_file, "--log-format", "json", *extra], port_file, work, preexec_fn)

    def start(self, command, port_file, work, preexec_fn=None):
        """Runs COMMAND, which starts the server on a free port and writes it to PORT_FILE."""
        self.port_file = port_file
        if os.path.exists(self.port_file):
            os.unlink(self.port_file)
        self.log_path = os.path.join(work, "webhook.log")
        self.log = open(self.log_path, "a")
        self.proc = subprocess.Popen(command, stdout=self.log, stderr=self.log, preexec_fn=preexec_fn)
        deadline = time.time() + 10
        while time.time() < deadline and not os.path.exists(self.port_file):
            if self.proc.poll() is not None:
                raise RuntimeError("launchguard-webhook exited at start, see webhook.log")
            time.sleep(0.05)
        time.sleep(0.05)
        self.port = int(open(self.port_file).read())

    def log_lines(self):
        """The JSON lines logged so far (each line is written out at once)."""
        with open(self.log_path) as f:
            return [json.loads(l) for l in f if l.startswith("{")]

    def cpu_seconds(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


def raw_tls_socket(port, cafile):
    """A TLS socket to the webhook for requests written by hand."""
    context = ssl.create_default_context(cafile=cafile)
    return context.wrap_socket(socket.create_connection(("127.0.0.1", port), 10), server_hostname=SNI)


def read_response(sock):
    """One response read to the end of its Content-Length body, not to the close."""
    reply = b""
    while b"\r\n\r\n" not in reply:
        chunk = sock.recv(65536)
        if not chunk:
            return reply
        reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def read_until_closed(sock):
    reply = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return reply
        reply += chunk


def review(obj, uid, operation="CREATE"):
    kind = obj.get("kind", "")
    group, _, version = obj.get("apiVersion", "v1").rpartition("/")
    return json.dumps({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": uid, "kind": {"group": group, "version": version, "kind": kind},
                    "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
                    "namespace": obj.get("metadata", {}).get("namespace", "default"),
                    "operation": operation, "userInfo": {"username": "test"}, "object": obj,
                    "oldObject": None, "dryRun": False, "options": {}}})


def response_of(status, body):
    if status != 200:
        return None
    doc = json.loads(body)
    if doc.get("apiVersion") != "admission.k8s.io/v1" or doc.get("kind") != "AdmissionReview":
        return None
    return doc.get("response")


def manifests(fixtures):
    """Every manifest of tests/fixtures/k8s and of the public fixtures' k8s/."""
    docs = []
    for root in (fixtures, shared_fixtures()):
        for path in sorted(glob.glob(os.path.join(root, "k8s", "**", "*.yaml"), recursive=True)):
            try:
                with open(path) as f:
                    loaded = [d for d in yaml.safe_load_all(f) if isinstance(d, dict) and "kind" in d]
            except yaml.YAMLError:
                continue  # Helm templates are not YAML before rendering
            docs.extend((os.path.relpath(path, root), d) for d in loaded)
    return docs


def check_envelope_and_patches(port, cafile, fixtures, patched_files, profile):
    client = Client(port, cafile)
    docs = manifests(fixtures)
    check(len(docs) >= 5, f"[{profile}] fixture manifests found ({len(docs)})")
    for name, obj in docs:
        name = f"[{profile}] {name}"
        uid = f"uid-{abs(hash(name + obj['kind'])) % 10**9}"
        status, body, _ = client.post("/validate?timeout=10s", review(obj, uid))
        resp = response_of(status, body)
        ok = resp is not None and resp.get("uid") == uid and "patch" not in resp and "patchType" not in resp \
            and isinstance(resp.get("allowed"), bool) and all(len(w) <= 120 for w in resp.get("warnings", []))
        check(ok, f"/validate {name} {obj['kind']}: uid echoed, no patch fields, warnings <= 120 chars",
              body[:300])
        status, body, _ = client.post("/mutate?timeout=10s", review(obj, uid))
        resp = response_of(status, body)
        if resp is None or resp.get("uid") != uid or resp.get("allowed") is not True:
            check(False, f"/mutate {name} {obj['kind']}: allowed with uid echoed", body[:300])
            continue
        if "patch" not in resp:
            check("patchType" not in resp, f"/mutate {name} {obj['kind']}: no patch, no patchType")
            continue
        ops = json.loads(base64.b64decode(resp["patch"]))
        check(resp.get("patchType") == "JSONPatch" and len(ops) > 0, f"/mutate {name} {obj['kind']}: JSONPatch, non-empty")
        try:
            patched = jsonpatch.apply_patch(copy.deepcopy(obj), ops)
        except Exception as e:  # noqa: BLE001 - any failure to apply is the finding
            check(False, f"/mutate {name} {obj['kind']}: patch applies (python3-jsonpatch)", f"{e}: {ops}")
            continue
        check(True, f"/mutate {name} {obj['kind']}: patch applies (python3-jsonpatch)")
        status, body, _ = client.post("/mutate", review(patched, uid + "-again"))
        again = response_of(status, body)
        check(again is not None and "patch" not in again, f"/mutate {name} {obj['kind']}: re-admitted patched object gets no patch",
              body[:300])
        status, body, _ = client.post("/validate", review(patched, uid + "-validate"))
        checked = response_of(status, body)
        check(checked is not None and checked.get("allowed") is True,
              f"/validate {name} {obj['kind']}: the patched object is allowed", body[:400])
        out = os.path.join(os.environ["LG_WEBHOOK_OUT"], f"patched-{profile}-{uid}.json")
        with open(out, "w") as f:
            json.dump(patched, f)
        patched_files.append(out)
    client.close()


def check_http_errors(port, cafile):
    client = Client(port, cafile)
    status, body = client.get("/healthz")
    check(status == 200 and body == b"ok\n", "GET /healthz: 200 ok")
    status, body = client.get("/readyz")
    check(status == 200, "GET /readyz: 200 while serving")
    status, body = client.get("/metrics")
    check(status == 200 and b"launchguard_webhook_requests_total" in body
          and b"launchguard_webhook_request_duration_seconds_bucket" in body, "GET /metrics: Prometheus text")
    status, body, _ = client.post("/validate", b"{not json")
    check(status == 400 and b"not JSON" in body, "malformed JSON: 400 with the reason")
    # The response head (Beast's serializer, webhook/server.cpp): its fields must be exact.
    status, body, r = client.post("/mutate", review({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "h"},
                                                     "spec": {"containers": [{"name": "c", "image": "i"}]}}, "head"))
    check(status == 200 and r.getheader("Content-Type") == "application/json"
          and r.getheader("Content-Length") == str(len(body)) and r.getheader("Server") == "launchguard-webhook"
          and r.getheader("Connection") is None and response_of(status, body) is not None,
          "a 200 answer: its Content-Type, Content-Length and Server, kept alive", str(r.getheaders()))
    status, body = client.get("/nowhere")
    check(status == 404 and client.last_headers.get("Content-Type") == "text/plain",
          "a 404: text/plain", str(client.last_headers))
    status, body, _ = client.post("/validate", json.dumps({"apiVersion": "admission.k8s.io/v1beta1",
                                                           "kind": "AdmissionReview", "request": {"uid": "x"}}))
    check(status == 400 and b"apiVersion" in body, "wrong apiVersion: 400 naming it")
    status, body, _ = client.post("/mutate", json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}))
    check(status == 400 and b"request is missing" in body, "missing request: 400")
    status, body = client.get("/validate")
    check(status == 405, "GET /validate: 405")
    status, body = client.get("/nowhere")
    check(status == 404, "unknown path: 404")
    status, body = client.get("/healthz")
    check(status == 200, "the same keep-alive connection still serves after the errors")
    # The API server never sends more than 3 MiB; the server refuses a larger
    # body from its Content-Length, before reading it, and closes.
    sock = raw_tls_socket(port, cafile)
    sock.sendall((f"POST /validate HTTP/1.1\r\nHost: {SNI}\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {9 << 20}\r\n\r\n").encode() + b"[0,0,0")
    reply = read_until_closed(sock)
    sock.close()
    check(reply.startswith(b"HTTP/1.1 413 "), "a 9 MiB body: 413 before it is read", reply[:120])
    # A client that keeps sending its body after the 413 (as most do, not
    # reading until they have written) must still receive the 413: the server
    # reads and drops the rest for a while instead of resetting the connection.
    sock = raw_tls_socket(port, cafile)
    error = None
    try:
        sock.sendall((f"POST /validate HTTP/1.1\r\nHost: {SNI}\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {9 << 20}\r\n\r\n").encode())
        chunk = b"0," * (32 << 10)
        sending_until = time.time() + 3
        while time.time() < sending_until:
            sock.sendall(chunk)
            time.sleep(0.02)
        reply = read_response(sock)
    except (ConnectionError, OSError, ssl.SSLError) as e:
        error, reply = repr(e), b""
    sock.close()
    check(error is None and reply.startswith(b"HTTP/1.1 413 "),
          "a client still writing its too large body for 3 s receives the 413, not a reset", error or reply[:120])
    for header, value, status in (("Transfer-Encoding", "gzip", 501), ("Transfer-Encoding", "gzip, chunked", 501),
                                  ("Content-Encoding", "gzip", 415), ("Content-Encoding", "br", 415)):
        sock = raw_tls_socket(port, cafile)
        framing = "" if header == "Transfer-Encoding" else "Content-Length: 2\r\n"
        sock.sendall((f"POST /validate HTTP/1.1\r\nHost: {SNI}\r\nContent-Type: application/json\r\n"
                      f"{framing}{header}: {value}\r\n\r\n").encode() + (b"2\r\n{}\r\n0\r\n\r\n" if framing == "" else b"{}"))
        reply = read_response(sock)
        sock.close()
        check(reply.startswith(f"HTTP/1.1 {status} ".encode()) and value.encode() in reply,
              f"{header}: {value}: {status} naming it, not read as identity", reply[:200])
    status, body, _ = client.post("/validate", review({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "i"},
                                                       "spec": {"containers": [{"name": "c", "image": "i"}]}}, "identity"),
                                  {"Content-Encoding": "identity"})
    check(status == 200, "Content-Encoding: identity is served", body[:200])
    client.close()


def check_tls(port, cafile):
    for version, name in ((ssl.TLSVersion.TLSv1_2, "1.2"), (ssl.TLSVersion.TLSv1_3, "1.3")):
        c = Client(port, cafile, minimum_version=version, maximum_version=version)
        status, _ = c.get("/healthz")
        check(status == 200 and c.sock.version() == f"TLSv{name}", f"TLS {name} accepted")
        c.close()
    c = Client(port, cafile, maximum_version=ssl.TLSVersion.TLSv1_1, minimum_version=ssl.TLSVersion.TLSv1)
    try:
        c.get("/healthz")
        check(False, "TLS 1.1 refused")
    except (ssl.SSLError, ConnectionError, OSError):
        check(True, "TLS 1.1 refused")
    c = Client(port, cafile)
    c.get("/healthz")
    check(c.sock.selected_alpn_protocol() == "http/1.1", "ALPN: http/1.1 selected")
    c.close()
    c = Client(port, cafile, alpn=["h2"])
    try:
        c.get("/healthz")
        check(False, "ALPN h2 only: refused (the server speaks HTTP/1.1 only)")
    except (ssl.SSLError, ConnectionError, OSError):
        check(True, "ALPN h2 only: refused (the server speaks HTTP/1.1 only)")


def peer_serial(port, cafile):
    c = Client(port, cafile)
    c.connect()
    der = c.sock.getpeercert(binary_form=True)
    c.close()
    return der


def load(port, cafile, stop, counts, body, keep_alive):
    client = Client(port, cafile)
    while not stop.is_set():
        try:
            status, data, _ = client.post("/validate", body)
            counts["ok" if status == 200 and response_of(status, data) is not None else "bad"] += 1
        except Exception as e:  # noqa: BLE001
            counts["bad"] += 1
            counts.setdefault("errors", []).append(repr(e))
            client.close()
            client = Client(port, cafile)
        if not keep_alive:
            client.close()
            client = Client(port, cafile)
    client.close()


def check_rotation(port, cafile, certs, tls_crt, tls_key):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "rot"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    body = review(pod, "rotation")
    before = peer_serial(port, cafile)
    stop = threading.Event()
    counts = [{"ok": 0, "bad": 0}, {"ok": 0, "bad": 0}]
    workers = [threading.Thread(target=load, args=(port, cafile, stop, counts[0], body, True)),
               threading.Thread(target=load, args=(port, cafile, stop, counts[1], body, False))]
    for w in workers:
        w.start()
    for i in range(3):
        time.sleep(0.7)
        crt, key = certs.issue(f"rotated{i}")
        # As a Secret update lands: both files replaced, one after the other.
        shutil.copy(key, tls_key + ".new")
        os.replace(tls_key + ".new", tls_key)
        shutil.copy(crt, tls_crt + ".new")
        os.replace(tls_crt + ".new", tls_crt)
    time.sleep(2.0)
    stop.set()
    for w in workers:
        w.join()
    ok = counts[0]["ok"] + counts[1]["ok"]
    bad = counts[0]["bad"] + counts[1]["bad"]
    check(bad == 0 and ok > 50, f"3 certificate rotations under load: {ok} requests, {bad} failed",
          str(counts[0].get("errors", [])[:3] + counts[1].get("errors", [])[:3]))
    after = peer_serial(port, cafile)
    with open(certs.path("rotated2.crt")) as f:
        expected = ssl.PEM_cert_to_DER_cert(f.read())
    check(after != before and after == expected, "new connections get the last rotated certificate")


def check_fifo_certificate(server, cafile, certs, tls_crt, tls_key):
    """A FIFO put where the certificate was must not stop the server: the
    reload refuses it without waiting for a writer, keeps the old pair, logs
    once, and takes the good pair when it comes back."""
    before = peer_serial(server.port, cafile)
    warned = len([l for l in server.log_lines() if "does not load yet" in l.get("msg", "")])
    fifo = tls_crt + ".fifo"
    os.mkfifo(fifo)
    os.replace(fifo, tls_crt)
    time.sleep(3.5)  # three certificate checks
    try:
        served = peer_serial(server.port, cafile) == before
    except (ConnectionError, OSError, ssl.SSLError) as e:
        served = False
    check(served, "a FIFO in place of the certificate: the old pair is still served")
    time.sleep(0.2)
    logs = [l for l in server.log_lines() if "does not load yet" in l.get("msg", "")][warned:]
    check(len(logs) == 1 and "FIFO" in logs[0].get("error", ""),
          f"the FIFO is logged once, naming it ({len(logs)} lines)", str(logs[:3]))
    crt, key = certs.issue("after-fifo")
    shutil.copy(key, tls_key + ".new")
    os.replace(tls_key + ".new", tls_key)
    shutil.copy(crt, tls_crt + ".new")
    os.replace(tls_crt + ".new", tls_crt)
    time.sleep(2.0)
    with open(crt) as f:
        expected = ssl.PEM_cert_to_DER_cert(f.read())
    check(peer_serial(server.port, cafile) == expected, "the good pair put back after the FIFO is loaded")


def check_descriptors_run_out(binary, work, cafile, tls_crt, tls_key):
    """With RLIMIT_NOFILE low, connections that cannot be accepted (EMFILE)
    must not spin: a bounded CPU time and log, and service again once
    descriptors are free."""
    if os.environ.get("LAUNCHGUARD_SANITIZED") == "1":
        # UBSan's vptr check needs descriptors of its own: with none left it
        # reports every virtual call as an invalid vptr and stops the server.
        # The normal build runs this test.
        print("SKIP: out of descriptors: not under the sanitizers (UBSan needs descriptors of its own)")
        return
    own = os.path.join(work, "nofile")
    os.makedirs(own, exist_ok=True)
    server = Webhook(binary, own, tls_crt, tls_key,
                     preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48)))
    try:
        held = []
        for _ in range(80):  # more than the server can accept; the rest waits in the backlog
            held.append(socket.create_connection(("127.0.0.1", server.port), 5))
        time.sleep(0.5)
        cpu_before = server.cpu_seconds()
        time.sleep(3.0)
        cpu_used = server.cpu_seconds() - cpu_before
        failures = [l for l in server.log_lines() if l.get("msg", "").startswith("accept failed")]
        check(cpu_used < 0.5, f"out of descriptors: {cpu_used:.2f} s of CPU in 3 s, not a busy loop")
        check(1 <= len(failures) <= 2 and "open files" in failures[0].get("error", "").lower(),
              f"out of descriptors: the accept failure is logged once per interval ({len(failures)} lines)",
              str(failures[:3]))
        for sock in held:
            sock.close()
        time.sleep(1.0)
        client = Client(server.port, cafile, timeout=5)
        status, _ = client.get("/healthz")
        client.close()
        check(status == 200, "descriptors free again: the server serves")
    finally:
        server.stop()


def check_sighup(binary, work, cafile, tls_crt, tls_key):
    """SIGHUP reloads the certificate pair and says so; the server keeps serving."""
    own = os.path.join(work, "sighup")
    os.makedirs(own, exist_ok=True)
    server = Webhook(binary, own, tls_crt, tls_key)
    try:
        client = Client(server.port, cafile)
        client.get("/healthz")
        server.proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        check(server.proc.poll() is None, "SIGHUP: the server keeps running")
        status, _ = client.get("/healthz")
        check(status == 200, "SIGHUP: an open keep-alive connection still serves")
        client.close()
        lines = server.log_lines()
        check(any(l.get("msg", "").startswith("SIGHUP") for l in lines)
              and any(l.get("msg") == "serving certificate reloaded" and l.get("trigger") == "SIGHUP" for l in lines),
              "SIGHUP: logged, and the certificate pair reloaded", str(lines[-3:]))
    finally:
        server.stop()
    check(server.proc.returncode == 0, f"SIGTERM after SIGHUP: drained, exit {server.proc.returncode}")


def check_timeout_flags(binary, work, cafile, tls_crt, tls_key):
    """--request-timeout and --idle-timeout set the deadlines (the chart
    passes its server.*TimeoutSeconds values as these flags)."""
    own = os.path.join(work, "timeouts")
    os.makedirs(own, exist_ok=True)
    server = Webhook(binary, own, tls_crt, tls_key, "--request-timeout", "2", "--idle-timeout", "3",
                     "--handshake-timeout", "2", "--drain-timeout", "5")
    try:
        trickle = {}
        trickle_header(server.port, cafile, trickle)
        closed_after = trickle.get("closed_after", 999)
        check(closed_after < 4 and not trickle.get("reply", b"").startswith(b"HTTP/1.1 200"),
              f"--request-timeout 2: a trickled header is cut off after {closed_after:.1f} s", str(trickle))
        idle = Client(server.port, cafile)
        status, _ = idle.get("/healthz")
        started = time.time()
        idle.sock.settimeout(6)
        try:
            closed = idle.sock.recv(1) == b""
        except (ConnectionError, OSError, ssl.SSLError):
            closed = True
        waited = time.time() - started
        check(closed and 2.5 < waited < 5, f"--idle-timeout 3: an idle connection is closed after {waited:.1f} s")
        idle.close()
    finally:
        server.stop()
    check(server.proc.returncode == 0, f"timeouts from flags: drained, exit {server.proc.returncode}")
    bad = subprocess.run([binary, "--tls-cert", tls_crt, "--tls-key", tls_key, "--request-timeout", "0"],
                         capture_output=True, text=True)
    check(bad.returncode == 2 and "--request-timeout" in bad.stderr,
          f"--request-timeout 0 is refused naming the flag (exit {bad.returncode})", bad.stderr[-200:])


def start_deadline_probes(port, cafile):
    """Connections that outlive a step's deadline (10 s to finish the TLS
    handshake or a request, 90 s idle between requests): started first, checked
    by check_deadline_probes once the other tests have run."""
    silent = socket.create_connection(("127.0.0.1", port), 10)  # never starts the handshake
    slow = raw_tls_socket(port, cafile)
    slow.sendall(f"POST /validate HTTP/1.1\r\nHost: {SNI}\r\nContent-Length: 100\r\n\r\n{{".encode())
    idle = Client(port, cafile)
    status, _ = idle.get("/healthz")
    check(status == 200, "a keep-alive connection for the idle deadline")
    trickle = {}
    trickler = threading.Thread(target=trickle_header, args=(port, cafile, trickle))
    trickler.start()
    return time.time(), silent, slow, idle, (trickler, trickle)


def trickle_header(port, cafile, result):
    """A header sent one byte a second: the request deadline (10 s from its
    first byte) must end it, however steadily the bytes come."""
    sock = raw_tls_socket(port, cafile)
    request = f"GET /healthz HTTP/1.1\r\nHost: {SNI}\r\nX-Padding: {'x' * 40}\r\n\r\n".encode()
    sock.settimeout(0.1)  # readable may be only a TLS 1.3 session ticket: no data, recv times out
    first = time.time()
    reply = b""
    try:
        for i in range(len(request)):
            sock.send(request[i:i + 1])
            next_byte = time.time() + 1.0
            while time.time() < next_byte and not reply:
                readable, _, _ = select.select([sock], [], [], max(0.0, next_byte - time.time()))
                if not readable:
                    continue
                try:
                    reply = sock.recv(65536) or b"closed"
                except socket.timeout:
                    continue
            if reply:
                break
    except (ConnectionError, ssl.SSLError):
        reply = b"reset"
    if reply:
        result["closed_after"] = time.time() - first
    result["reply"] = reply
    sock.close()


def check_deadline_probes(probes):
    started, silent, slow, idle, (trickler, trickle) = probes
    trickler.join()
    closed_after = trickle.get("closed_after", 999)
    check(closed_after < 12.5 and not trickle.get("reply", b"").startswith(b"HTTP/1.1 200"),
          f"a header trickled a byte a second is cut off by the 10 s request deadline (after {closed_after:.1f} s)",
          str(trickle))
    time.sleep(max(0.0, started + 12 - time.time()))
    for sock, what in ((silent, "a connection that never starts TLS"), (slow, "a request not finished")):
        sock.settimeout(5)
        try:
            read_until_closed(sock)
            closed = True
        except socket.timeout:  # still open 5 s later
            closed = False
        except (ConnectionError, OSError, ssl.SSLError):  # reset: closed too
            closed = True
        check(closed, f"{what} is closed after its 10 s deadline")
        sock.close()
    status, _ = idle.get("/healthz")
    check(status == 200, "an idle keep-alive connection still serves after 12 s (its deadline is 90 s)")
    idle.close()


def check_sigterm(binary, work, cafile, tls_crt, tls_key):
    server = Webhook(binary, work, tls_crt, tls_key)
    idle = Client(server.port, cafile)
    idle.get("/healthz")  # an idle keep-alive connection
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "drain"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    body = review(pod, "in-flight").encode()
    # A request in flight: headers and half of the body sent, then SIGTERM.
    sock = raw_tls_socket(server.port, cafile)
    head = (f"POST /validate HTTP/1.1\r\nHost: {SNI}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    sock.sendall(head + body[: len(body) // 2])
    time.sleep(0.2)
    server.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    try:
        late = Client(server.port, cafile, timeout=2)
        late.get("/healthz")
        refused = False
    except (ConnectionError, OSError, ssl.SSLError, http.client.HTTPException):
        refused = True
    check(refused, "after SIGTERM no new connection is accepted")
    sock.sendall(body[len(body) // 2:])
    reply = read_until_closed(sock)
    head_end = reply.find(b"\r\n\r\n")
    status_line = reply.split(b"\r\n", 1)[0]
    check(status_line == b"HTTP/1.1 200 OK" and b"Connection: close" in reply[:head_end]
          and response_of(200, reply[head_end + 4:]) is not None,
          "SIGTERM with a request in flight: it is answered (200, Connection: close)", reply[:200])
    try:
        code = server.proc.wait(timeout=25)
    except subprocess.TimeoutExpired:
        code = None
    check(code == 0, f"the server exits 0 once drained (exit {code})")
    # The drain must write every line out before the exit.
    with open(os.path.join(work, "webhook.log")) as f:
        lines = [json.loads(l) for l in f if l.startswith("{")]
    logged = [l for l in lines if l.get("msg") == "admission" and l.get("uid") == "in-flight"]
    check(len(logged) == 1 and logged[0].get("status") == "200" and logged[0].get("endpoint") == "/validate",
          "the request answered during the drain is in the log after the exit", str(logged))
    try:
        idle.get("/healthz")
        closed = False
    except (ConnectionError, OSError, http.client.HTTPException):
        closed = True
    check(closed, "idle keep-alive connections were closed by the drain")
    server.stop()


def check_issue_example(port_default, port_topology, cafile, fixtures):
    """A profile that requires a topology file, a pod without one: /validate
    denies naming topo.required; /mutate adds the hostPath volume, the mount
    and NCCL_TOPO_FILE; the patched pod passes. Under default it is allowed."""
    with open(os.path.join(fixtures, "k8s", "gpu-pod-without-topology.yaml")) as f:
        pod = yaml.safe_load(f)
    topo = Client(port_topology, cafile)
    status, body, _ = topo.post("/validate", review(pod, "example-1"))
    resp = response_of(status, body) or {}
    message = resp.get("status", {}).get("message", "")
    check(resp.get("allowed") is False and "topo.required" in message and "/opt/microsoft/ndv5-topo.xml" in message,
          "issue example: /validate denies the pod naming topo.required and the fix", message or body[:300])
    status, body, _ = topo.post("/mutate", review(pod, "example-2"))
    resp = response_of(status, body) or {}
    ops = json.loads(base64.b64decode(resp["patch"])) if "patch" in resp else []
    patched = jsonpatch.apply_patch(copy.deepcopy(pod), ops) if ops else pod
    container = patched["spec"]["containers"][0]
    host_paths = [v.get("hostPath", {}).get("path") for v in patched["spec"].get("volumes", [])]
    mounts = {m["mountPath"]: m for m in container.get("volumeMounts", [])}
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    check("/opt/microsoft/ndv5-topo.xml" in host_paths
          and mounts.get("/opt/microsoft/ndv5-topo.xml", {}).get("readOnly") is True
          and env.get("NCCL_TOPO_FILE") == "/opt/microsoft/ndv5-topo.xml",
          "issue example: /mutate adds the hostPath volume, the read-only mount and NCCL_TOPO_FILE", json.dumps(ops))
    status, body, _ = topo.post("/validate", review(patched, "example-3"))
    check((response_of(status, body) or {}).get("allowed") is True, "issue example: the patched pod passes /validate",
          body[:300])
    status, body, _ = topo.post("/mutate", review(patched, "example-4"))
    check("patch" not in (response_of(status, body) or {"patch": 1}), "issue example: mutating it again patches nothing")
    # NCCL_TOPO_FILE under no volume: only the image could hold it. /validate
    # allows with a warning saying so; /mutate mounts the node's file there.
    in_image = copy.deepcopy(pod)
    in_image["metadata"]["name"] = "trainer-image-topo"
    in_image["spec"]["containers"][0]["env"] = [{"name": "NCCL_TOPO_FILE", "value": "/opt/microsoft/ndv5-topo.xml"}]
    status, body, _ = topo.post("/validate", review(in_image, "example-image-1"))
    resp = response_of(status, body) or {}
    check(resp.get("allowed") is True
          and any("topo.not-propagated" in w and "cannot see the image, the launch gate can" in w
                  for w in resp.get("warnings", [])),
          "topology under no volume: /validate allows it and warns that only the launch gate sees the image", body[:400])
    status, body, _ = topo.post("/mutate", review(in_image, "example-image-2"))
    resp = response_of(status, body) or {}
    ops = json.loads(base64.b64decode(resp["patch"])) if "patch" in resp else []
    mounted = jsonpatch.apply_patch(copy.deepcopy(in_image), ops) if ops else in_image
    volumes = {v["name"]: v for v in mounted["spec"].get("volumes", [])}
    mounts = [m for m in mounted["spec"]["containers"][0].get("volumeMounts", [])
              if m.get("mountPath") == "/opt/microsoft/ndv5-topo.xml"]
    check(len(mounts) == 1 and mounts[0].get("readOnly") is True
          and volumes.get(mounts[0]["name"], {}).get("hostPath") == {"path": "/opt/microsoft/ndv5-topo.xml", "type": "File"},
          "topology under no volume: /mutate mounts the node's file read-only at the pod's path", json.dumps(ops))
    status, body, _ = topo.post("/mutate", review(mounted, "example-image-3"))
    check("patch" not in (response_of(status, body) or {"patch": 1}), "topology under no volume: mutating it again patches nothing")
    topo.close()
    plain = Client(port_default, cafile)
    status, body, _ = plain.post("/validate", review(pod, "example-5"))
    check((response_of(status, body) or {}).get("allowed") is True, "issue example: under the default profile it is allowed",
          body[:300])
    plain.close()


GATE_IMAGE = "registry.example/launchguard:1.0"


def pod_specs(obj):
    """(pointer, PodSpec) of every pod template of a workload the review reads."""
    kind, spec = obj.get("kind"), obj.get("spec", {})
    if kind == "Pod":
        return [("/spec", spec)]
    if kind == "Job":
        return [("/spec/template/spec", spec["template"]["spec"])]
    if kind == "JobSet":
        return [(f"/spec/replicatedJobs/{i}/template/spec/template/spec", rj["template"]["spec"]["template"]["spec"])
                for i, rj in enumerate(spec["replicatedJobs"])]
    key = {"MPIJob": "mpiReplicaSpecs", "PyTorchJob": "pytorchReplicaSpecs"}.get(kind)
    if key:
        return [(f"/spec/{key}/{role}/template/spec", r["template"]["spec"]) for role, r in spec[key].items()]
    return []


def gpus(container):
    resources = container.get("resources", {})
    limits = resources.get("limits") or resources.get("requests") or {}
    return any(int(limits.get(r, 0) or 0) > 0 for r in ("nvidia.com/gpu", "amd.com/gpu"))


def check_gate(name, original, patched, mode, on_error):
    """The contract's injection, read from the patched object as the API server stores it."""
    for (pointer, before), (_, after) in zip(pod_specs(original), pod_specs(patched)):
        where = f"{name} {pointer}"
        gpu = [i for i, c in enumerate(before["containers"]) if gpus(c)]
        if not gpu:
            check(before == after, f"{where}: a template without GPU containers is untouched")
            continue
        init = after.get("initContainers", [])
        install = init[0] if init else {}
        sc = install.get("securityContext", {})
        check(install.get("name") == "launchguard-gate-install" and install.get("image") == GATE_IMAGE
              and install.get("command", [])[:4] == ["/usr/bin/launchguard-gate", "install", "--into", "/launchguard"]
              and [c["name"] for c in init[1:]] == [c["name"] for c in before.get("initContainers", [])],
              f"{where}: launchguard-gate-install first among initContainers", json.dumps(init)[:400])
        check(sc.get("runAsNonRoot") is True and sc.get("allowPrivilegeEscalation") is False
              and sc.get("capabilities") == {"drop": ["ALL"]} and sc.get("readOnlyRootFilesystem") is True
              and sc.get("seccompProfile") == {"type": "RuntimeDefault"}
              and install.get("resources", {}).get("limits") == {"cpu": "100m", "memory": "32Mi"},
              f"{where}: the install container is restricted and bounded", json.dumps(install)[:400])
        volumes = [v for v in after.get("volumes", []) if v.get("name") == "launchguard-gate"]
        check(volumes == [{"name": "launchguard-gate", "emptyDir": {"sizeLimit": "32Mi"}}],
              f"{where}: one emptyDir launchguard-gate", json.dumps(volumes))
        for i, (b, a) in enumerate(zip(before["containers"], after["containers"])):
            if i not in gpu:
                check(a == b, f"{where} containers[{i}]: no GPU, untouched")
                continue
            mounts = [m for m in a.get("volumeMounts", []) if m.get("name") == "launchguard-gate"]
            if not b.get("command") and b.get("lifecycle", {}).get("postStart"):
                # The gate cannot go beside the container's own hook: it is left
                # alone, so nothing but a gated container mounts the gate's volume.
                check(mounts == [], f"{where} containers[{i}]: a container left alone does not mount the gate",
                      json.dumps(mounts))
            else:
                check(mounts == [{"name": "launchguard-gate", "mountPath": "/launchguard", "readOnly": True}],
                      f"{where} containers[{i}]: the gate mounted read-only", json.dumps(mounts))
            line = ["/launchguard/launchguard-gate", "run", "--profile", "/launchguard/profile.yaml", "--mode", mode,
                    "--on-error", on_error, "--termination-log",
                    b.get("terminationMessagePath", "/dev/termination-log")]
            if b.get("command"):
                check(a["command"] == line + ["--"] + b["command"] and a.get("args") == b.get("args"),
                      f"{where} containers[{i}]: command wrapped, args unchanged", json.dumps(a.get("command")))
            elif b.get("lifecycle", {}).get("postStart"):
                check(a.get("lifecycle") == b["lifecycle"] and "command" not in a,
                      f"{where} containers[{i}]: its own postStart hook left alone")
            else:
                check(a.get("lifecycle", {}).get("postStart") == {"exec": {"command": line + ["--check-only"]}}
                      and "command" not in a and a.get("args") == b.get("args"),
                      f"{where} containers[{i}]: a postStart --check-only beside the entrypoint",
                      json.dumps(a.get("lifecycle")))


def check_gate_on_every_fixture(binary, work, cafile, tls_crt, tls_key, fixtures, patched_files):
    """/mutate with `gate:` in the site configuration: every GPU template of
    every fixture gets the contract's injection, applied by python3-jsonpatch,
    re-admitted to an empty patch, allowed by /validate and (below)
    validated against the Kubernetes schemas; the opt-out annotation is a
    warning unless allowOptOut, then honoured."""
    config = os.path.join(work, "gate-config.yaml")
    with open(config, "w") as f:
        f.write(f"mode: enforce\nuserModes: [enforce, warn]\ngate:\n  image: {GATE_IMAGE}\n  onError: block\n")
    server = Webhook(binary, work, tls_crt, tls_key, "--config", config)
    try:
        check_envelope_and_patches(server.port, cafile, fixtures, patched_files, "gate")
        client = Client(server.port, cafile)
        gated = 0
        for name, obj in manifests(fixtures):
            status, body, _ = client.post("/mutate", review(obj, "gate-" + obj["kind"]))
            resp = response_of(status, body) or {}
            ops = json.loads(base64.b64decode(resp["patch"])) if "patch" in resp else []
            patched = jsonpatch.apply_patch(copy.deepcopy(obj), ops)
            if not any(gpus(c) for _, spec in pod_specs(obj) for c in spec.get("containers", [])):
                check(all("launchguard-gate" not in json.dumps(op) for op in ops),
                      f"gate {name} {obj['kind']}: no GPU, no gate")
                continue
            gated += 1
            check(resp.get("auditAnnotations", {}).get("gate") == "added", f"gate {name} {obj['kind']}: audit gate=added",
                  json.dumps(resp.get("auditAnnotations")))
            check_gate(f"gate {name} {obj['kind']}", obj, patched, "enforce", "block")
            hooked = [c for _, spec in pod_specs(obj) for c in spec["containers"]
                      if gpus(c) and not c.get("command") and c.get("lifecycle", {}).get("postStart")]
            if hooked:
                check(any(w.startswith("launchguard gate: not added to a container with no command") for w in resp.get("warnings", [])),
                      f"gate {name} {obj['kind']}: the review says the gate cannot go beside an own postStart hook",
                      json.dumps(resp.get("warnings")))
            # The pod's chosen mode reaches the gate.
            warned = copy.deepcopy(obj)
            warned.setdefault("metadata", {}).setdefault("annotations", {})["launchguard.dev/mode"] = "warn"
            status, body, _ = client.post("/mutate", review(warned, "gate-warn"))
            resp = response_of(status, body) or {}
            ops = json.loads(base64.b64decode(resp["patch"])) if "patch" in resp else []
            check_gate(f"gate (mode warn) {name} {obj['kind']}", warned, jsonpatch.apply_patch(copy.deepcopy(warned), ops),
                       "warn", "block")
            # Asking to opt out where the site does not allow it: a warning, the gate all the same.
            opting = copy.deepcopy(obj)
            opting.setdefault("metadata", {}).setdefault("annotations", {})["launchguard.dev/gate"] = "off"
            status, body, _ = client.post("/mutate", review(opting, "gate-optout"))
            resp = response_of(status, body) or {}
            check(any("launchguard.dev/gate=off is not allowed" in w for w in resp.get("warnings", []))
                  and "launchguard-gate-install" in base64.b64decode(resp.get("patch", "")).decode(),
                  f"gate {name} {obj['kind']}: a refused opt-out is warned about and the gate added", body[:300])
            status, body, _ = client.post("/validate", review(opting, "gate-optout-v"))
            check((response_of(status, body) or {}).get("allowed") is not None, "gate: /validate answers an opt-out")
        check(gated >= 6, f"gate: GPU fixtures given the gate ({gated})")
        client.close()
    finally:
        server.stop()

    with open(config, "w") as f:
        f.write(f"gate:\n  image: {GATE_IMAGE}\n  allowOptOut: true\n")
    lenient = Webhook(binary, work, tls_crt, tls_key, "--config", config)
    try:
        client = Client(lenient.port, cafile)
        with open(os.path.join(fixtures, "k8s", "gpu-pod-without-topology.yaml")) as f:
            pod = yaml.safe_load(f)
        pod["metadata"]["annotations"] = {"launchguard.dev/gate": "off"}
        status, body, _ = client.post("/mutate", review(pod, "gate-optout-ok"))
        resp = response_of(status, body) or {}
        check("launchguard-gate" not in base64.b64decode(resp.get("patch", "")).decode()
              and not any("launchguard.dev/gate" in w for w in resp.get("warnings", []))
              and resp.get("auditAnnotations", {}).get("gate") == "opted out (launchguard.dev/gate=off)",
              "gate: the opt-out is honoured where allowOptOut", body[:300])
        client.close()
    finally:
        lenient.stop()

    bad = os.path.join(work, "gate-bad.yaml")
    with open(bad, "w") as f:
        f.write("gate:\n  enabled: true\n")
    result = subprocess.run([binary, "--config", bad, "--tls-cert", tls_crt, "--tls-key", tls_key],
                            capture_output=True, text=True, timeout=10)
    check(result.returncode != 0 and "gate.image" in result.stderr,
          "gate: a config with the gate enabled and no image does not start, naming gate.image", result.stderr)


def check_schemas(node_modules, patched_files):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "validate_schema.mjs")
    if not os.path.isdir(os.path.join(node_modules, "kubernetes-models")):
        check(False, "kubernetes-models installed for the schema check",
              f"{node_modules}/kubernetes-models missing (scripts/test.sh installs it)")
        return
    check(len(patched_files) > 0, f"patched objects to validate ({len(patched_files)})")
    if not patched_files:
        return
    result = subprocess.run(["node", script, node_modules, *patched_files], capture_output=True, text=True)
    check(result.returncode == 0, f"every patched object is valid against the Kubernetes API schema "
          f"({len(patched_files)} objects, kubernetes-models)", result.stdout + result.stderr)


# The cases, in the order a full run takes them; `pytest -k NAME` runs one.


def shared_fixtures():
    return os.environ.get("LAUNCHGUARD_SHARED_FIXTURES", "")


def needs_shared_fixtures():
    if not os.path.isdir(os.path.join(shared_fixtures(), "k8s")):
        pytest.skip(f"needs the public fixtures: LAUNCHGUARD_SHARED_FIXTURES not found ({shared_fixtures()!r})")


def setting(name):
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set (ctest sets it: tests/integration/webhook/CMakeLists.txt)")
    return value


@pytest.fixture(scope="session")
def binary():
    return setting("LAUNCHGUARD_WEBHOOK")


@pytest.fixture(scope="session")
def fixtures():
    return setting("LAUNCHGUARD_FIXTURES")


@pytest.fixture(scope="session")
def work():
    """The session's directory (certificates, webhook.log); kept when a check failed or LG_WEBHOOK_KEEP is set."""
    path = tempfile.mkdtemp(prefix="lgwebhook.")
    os.environ["LG_WEBHOOK_OUT"] = path
    yield path
    if not failed_checks and not os.environ.get("LG_WEBHOOK_KEEP"):
        shutil.rmtree(path, ignore_errors=True)
    else:
        print(f"webhook: work dir kept: {path} (webhook.log)")


class Tls:
    """The CA and the serving pair the session's servers load."""

    def __init__(self, work):
        self.certs = Certificates(work)
        crt, key = self.certs.issue("first")
        self.crt, self.key = self.certs.path("tls.crt"), self.certs.path("tls.key")
        shutil.copy(crt, self.crt)
        shutil.copy(key, self.key)
        self.cafile = self.certs.path("ca.crt")


@pytest.fixture(scope="session")
def tls(work):
    return Tls(work)


@pytest.fixture(scope="session")
def server(binary, work, tls):
    """The session's server, with the deadline probes started on it at once
    (test_deadline_probes checks them once the cases before it have run)."""
    webhook = Webhook(binary, work, tls.crt, tls.key)
    webhook.probes = start_deadline_probes(webhook.port, tls.cafile)
    yield webhook
    webhook.stop()


@pytest.fixture(scope="session")
def topology_server(binary, work, tls, fixtures):
    """A second server with the ndv5 topology profile; its log of its own (it
    reloads the same certificate files as the session's server)."""
    own = os.path.join(work, "topology")
    os.makedirs(own, exist_ok=True)
    webhook = Webhook(binary, own, tls.crt, tls.key, "--profile",
                      os.path.join(fixtures, "k8s", "ndv5-topology-profile.yaml"))
    yield webhook
    webhook.stop()


@pytest.fixture(scope="session")
def patched_files():
    """Every patched object the cases wrote, for test_schemas."""
    return []


def test_http_errors(server, tls):
    check_http_errors(server.port, tls.cafile)


def test_tls(server, tls):
    check_tls(server.port, tls.cafile)


def test_envelope_and_patches(server, tls, fixtures, patched_files):
    needs_shared_fixtures()
    check_envelope_and_patches(server.port, tls.cafile, fixtures, patched_files, "default")


def test_envelope_and_patches_with_topology_profile(topology_server, tls, fixtures, patched_files):
    needs_shared_fixtures()
    check_envelope_and_patches(topology_server.port, tls.cafile, fixtures, patched_files, "ndv5-topology")


def test_issue_example(server, topology_server, tls, fixtures):
    check_issue_example(server.port, topology_server.port, tls.cafile, fixtures)


def test_gate(binary, work, tls, fixtures, patched_files):
    needs_shared_fixtures()
    check_gate_on_every_fixture(binary, work, tls.cafile, tls.crt, tls.key, fixtures, patched_files)


def test_rotation(server, tls):
    check_rotation(server.port, tls.cafile, tls.certs, tls.crt, tls.key)


def test_fifo_certificate(server, tls):
    check_fifo_certificate(server, tls.cafile, tls.certs, tls.crt, tls.key)


def test_deadline_probes(server):
    check_deadline_probes(server.probes)


def test_sigterm_on_an_idle_server(server):
    """The session's server ends here: the cases after this one start their own."""
    server.stop()
    check(server.proc.returncode == 0, f"SIGTERM on an idle server: exit {server.proc.returncode}")


def test_schemas(server, tls, fixtures, patched_files):
    needs_shared_fixtures()
    if not patched_files:  # run alone (-k): make the patched objects first
        check_envelope_and_patches(server.port, tls.cafile, fixtures, patched_files, "default")
    check_schemas(setting("LAUNCHGUARD_NODE_MODULES"), patched_files)


def test_sigterm(binary, work, tls):
    check_sigterm(binary, work, tls.cafile, tls.crt, tls.key)


def test_sighup(binary, work, tls):
    check_sighup(binary, work, tls.cafile, tls.crt, tls.key)


def test_timeout_flags(binary, work, tls):
    check_timeout_flags(binary, work, tls.cafile, tls.crt, tls.key)


def test_descriptors_run_out(binary, work, tls):
    check_descriptors_run_out(binary, work, tls.cafile, tls.crt, tls.key)
