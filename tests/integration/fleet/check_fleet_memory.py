#!/usr/bin/env python3
"""`launchguard fleet` under inputs made to exhaust its memory or its output.

usage: check_fleet_memory.py LAUNCHGUARD WORKDIR

Runs the real binary and measures each run's peak resident memory (the
child's own rusage, from wait4):
  - one file holding a single 300 MB record, and one holding 400 MB of small
    valid records of distinct hosts: under 512 MB each, the first an error
    naming the record, the second a report that stopped reading and fails;
  - a fake Prometheus on 127.0.0.1 (serving at most 40 requests, for at most
    the run's timeout) that answers every query with 60 MiB of series whose
    labels are as small as JSON allows, every series a target with no node
    info (an error each), and a range answer with 2 million points, some at
    1e300: under 1 GB, a bounded number of error lines, a bounded HTML page.
"""
import http.server
import json
import os
import subprocess
import sys
import threading
import time

LIMIT_FILE = 512 << 20
LIMIT_PROMETHEUS = 1 << 30


def run(cmd, timeout=300):
    """(exit code, stdout, stderr, peak RSS in bytes) of one run."""
    out_path = os.path.join(WORK, "out.txt")
    err_path = os.path.join(WORK, "err.txt")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
    with open(out_path, "rb") as f:
        stdout = f.read()
    with open(err_path, "rb") as f:
        stderr = f.read()
    return os.waitstatus_to_exitcode(status), stdout, stderr, usage.ru_maxrss * 1024


def record(host):
    return json.dumps({"schema": "launchguard.node-record/v1",
                       "node": {"hostname": host, "class": "c"},
                       "checked_at": "2026-05-01T10:00:00Z", "health": "healthy",
                       "rules": [], "facts": {}}, separators=(",", ":")) + "\n"


def check(condition, message):
    if not condition:
        print("FAIL: " + message)
        sys.exit(1)
    print("ok: " + message)


def file_cases():
    big = os.path.join(WORK, "one-record.jsonl")
    with open(big, "w") as f:
        f.write('{"schema": "')
        chunk = "x" * (1 << 20)
        for _ in range(300):
            f.write(chunk)
        f.write('"}\n')
    code, out, err, peak = run([CLI, "fleet", big])
    check(code == 2 and b"larger than 1 MiB" in err, "a 300 MB record is an error naming it (exit %d)" % code)
    check(peak < LIMIT_FILE, "a 300 MB record: peak %d MB" % (peak >> 20))
    os.unlink(big)

    many = os.path.join(WORK, "many.jsonl")
    with open(many, "w") as f:
        block = "".join(record("n%07d" % i) for i in range(10000))
        for i in range(400 * (1 << 20) // len(block) + 1):
            f.write(block.replace('"n0', '"b%05d-n0' % i))
    code, out, err, peak = run([CLI, "fleet", many])
    check(code == 1 and b"reading stopped at" in out, "400 MB of records stop at the bound and fail (exit %d)" % code)
    check(peak < LIMIT_FILE, "400 MB of records: peak %d MB" % (peak >> 20))
    os.unlink(many)


class FakePrometheus(http.server.BaseHTTPRequestHandler):
    served = 0
    junk = b""

    def log_message(self, *args):
        pass

    def do_GET(self):
        FakePrometheus.served += 1
        if FakePrometheus.served > 40:
            self.send_error(503)
            return
        if "query_range" in self.path:
            body = RANGE
        elif "query=launchguard_node_info&" in self.path:
            body = answer(FakePrometheus.junk, NODE_INFO)
        else:
            body = answer(FakePrometheus.junk, b"")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


NODE_INFO = (b'{"metric":{"instance":"a:9100","node":"a","node_class":"c",'
             b'"schema":"launchguard.node-metrics/v1"},"value":[1,"1"]},')


def junk(size):
    """Series with the fewest bytes a distinct scrape target takes: each
    one an error (no node info)."""
    parts = []
    total = 0
    i = 0
    while total < size:
        item = b'{"metric":{"i":"%x"},"value":[1,"1"]},' % i
        parts.append(item)
        total += len(item)
        i += 1
    return b"".join(parts)


def answer(series, extra):
    return (b'{"status":"success","data":{"resultType":"vector","result":[' + extra + series +
            b'{"metric":{},"value":[1,"1"]}]}}')


def history():
    points = ",".join('[%s,"3"]' % ("1e300" if p % 1000 == 0 else str(1777629600 - p))
                      for p in range(2000000, 0, -1))
    return ('{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"node_class":"c"},'
            '"values":[' + points + ']}]}}').encode()


def serve(port_file, junk_mib):
    """The fake Prometheus, in a process of its own so that the answers it
    holds do not count in the measured runs (a child starts with its
    parent's resident memory). At most 40 requests, at most 10 minutes."""
    global RANGE
    RANGE = history()
    FakePrometheus.junk = junk(junk_mib << 20)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakePrometheus)
    threading.Timer(600, os._exit, args=(0,)).start()
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


def fake_prometheus(junk_mib):
    """(process, URL) of a fake Prometheus started on loopback."""
    port_file = os.path.join(WORK, "port-%d" % junk_mib)
    if os.path.exists(port_file):
        os.unlink(port_file)
    proc = subprocess.Popen([sys.executable, __file__, "--serve", port_file, str(junk_mib)])
    for _ in range(1200):
        if os.path.exists(port_file):
            break
        if proc.poll() is not None:
            check(False, "the fake Prometheus started")
        time.sleep(0.1)
    with open(port_file) as f:
        return proc, "http://127.0.0.1:" + f.read()


def prometheus_cases():
    # Answers just under the bound on one, each as costly to hold as JSON allows.
    proc, url = fake_prometheus(60)
    try:
        code, out, err, peak = run([CLI, "fleet", "--prometheus", url, "--at", "1777629600", "--timeout", "120"])
        check(peak < LIMIT_PROMETHEUS, "60 MiB answers of tiny series: peak %d MB (exit %d)" % (peak >> 20, code))
        lines = err.count(b"\n")
        check(code == 2 and lines <= 30, "60 MiB answers: exit %d, %d lines on stderr" % (code, lines))
    finally:
        proc.kill()
        proc.wait()

    # A quarter million targets without node info (an error each), one
    # node, and two million history points, some in the year 1e300.
    proc, url = fake_prometheus(10)
    try:
        html = os.path.join(WORK, "fleet.html")
        code, out, err, peak = run([CLI, "fleet", "--prometheus", url, "--at", "1777629600", "--since", "30d",
                                    "--timeout", "120", "--format", "html", "-o", html])
        check(peak < LIMIT_PROMETHEUS, "a quarter million bad targets: peak %d MB (exit %d)" % (peak >> 20, code))
        check(code == 1, "one node that did not report its health: the verdict fails (exit %d)" % code)
        lines = err.count(b"\n")
        check(lines <= 30, "%d lines on stderr" % lines)
        size = os.path.getsize(html)
        check(size < (4 << 20), "the HTML page is %d bytes" % size)
        with open(html, "rb") as f:
            page = f.read()
        check(b"... and " in page, "the page counts the errors it does not list")
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        serve(sys.argv[2], int(sys.argv[3]))
        sys.exit(0)
    CLI, WORK = sys.argv[1], sys.argv[2]
    os.makedirs(WORK, exist_ok=True)
    file_cases()
    prometheus_cases()
