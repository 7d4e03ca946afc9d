#!/usr/bin/env python3
"""Compares `launchguard fleet --format json` reports, one read from
Prometheus and one from a record directory, with what make_node_metrics
generated (expected.json): nodes and conforming nodes per class, the nodes
off each class's majority per drifting fact, and conformance per class at
every check. The Prometheus report must also hold the real node-check run's
node (class real-fixture).

usage: check_prometheus_report.py EXPECTED.json PROMETHEUS.json RECORDS.json
"""
import json
import sys


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def drift_of(report_class):
    return {d["fact"]: sum(o["count"] for o in d["others"]) for d in report_class["drift"]}


def history_of(report):
    return {h["class"]: [[p["time"], p["nodes"], p["conforming"]] for p in h["points"]] for h in report["history"]}


def check(expected, report, name):
    classes = {c["class"]: c for c in report["classes"]}
    for node_class, want in expected["classes"].items():
        got = classes.get(node_class)
        if got is None:
            fail("%s: class %s missing" % (name, node_class))
        if (got["nodes"], got["conforming"]) != (want["nodes"], want["conforming"]):
            fail("%s: class %s has %d nodes, %d conforming; generated %d, %d" % (
                name, node_class, got["nodes"], got["conforming"], want["nodes"], want["conforming"]))
        if drift_of(got) != expected["drift"][node_class]:
            fail("%s: class %s drift %s; generated %s" % (name, node_class, drift_of(got), expected["drift"][node_class]))
    history = history_of(report)
    for node_class, points in expected["history"].items():
        if history.get(node_class) != points:
            fail("%s: class %s over time %s; generated %s" % (name, node_class, history.get(node_class), points))
    if report["errors"]:
        fail("%s: errors %s" % (name, report["errors"][:3]))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    expected, prometheus, records = (json.load(open(p)) for p in sys.argv[1:])
    check(expected, prometheus, "--prometheus")
    check(expected, records, "records")
    real = [c for c in prometheus["classes"] if c["class"] == "real-fixture"]
    if len(real) != 1 or real[0]["nodes"] != 1:
        fail("--prometheus: the real node-check run's node (class real-fixture) is missing")
    failures = [f for layer in real[0]["layers"] for f in layer["failures"]]
    if not any(f["node"] == "real-kvm-01" and f["rule"] == "hw.pcie-degraded" and f["message"] for f in failures):
        fail("--prometheus: real-kvm-01's hw.pcie-degraded finding and its message did not come through")
    total = sum(c["nodes"] for c in expected["classes"].values())
    off = sum(sum(d.values()) for d in expected["drift"].values())
    print("ok: %d generated nodes in %d classes, %d drifting fact values, %d checks over time, plus real-kvm-01" % (
        total, len(expected["classes"]), off, expected["checks"]))


if __name__ == "__main__":
    main()
