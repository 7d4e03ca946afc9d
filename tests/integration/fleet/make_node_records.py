#!/usr/bin/env python3
"""Synthetic node records (schema launchguard.node-record/v1) for the fleet
report's browser test and benchmark: N nodes in a few classes, most alike, a
few with an older HCA firmware, another kernel command line, a missing
topology file or a failing rule, so that every part of the report has
something to show. Deterministic for a given N.

With --history K each node is checked K times, an hour apart (the last at
the usual time): a fault on every 13th node in the first half of the checks
is fixed later, so that conformance over time has something to show.

usage: make_node_records.py N OUTPUT.jsonl [--pretty] [--history K]
"""
import json
import sys

RULES = ["power.governor", "power.cstates", "power.turbo-off", "numa.balancing-on", "virt.iommu-translating",
         "virt.iommu-strict", "virt.page-size", "hw.pcie-degraded", "hw.inventory", "net.ib-port-degraded"]
CLASSES = [("dgx-h100", 0.6), ("hgx-b200", 0.3), ("l40s-inference", 0.1)]


def fact(value, source="synthetic"):
    return {"value": value, "source": source}


def record(i, n, round_=0, rounds=1):
    share = i / n
    acc = 0.0
    node_class = CLASSES[-1][0]
    for name, part in CLASSES:
        acc += part
        if share < acc:
            node_class = name
            break
    host = "%s-%05d" % (node_class.split("-")[0], i)
    firmware = "28.37.1014" if i % 331 == 7 else "28.39.1002"
    cmdline = "BOOT_IMAGE=/vmlinuz ro iommu=pt" + (" intel_idle.max_cstate=1" if i % 97 != 3 else "")
    topo_hash = "fnv1a64:%016x" % (0x1234 if i % 499 != 11 else 0x9999)
    rules = []
    findings = []
    for r, rule in enumerate(RULES):
        outcome = "pass"
        if rule == "power.governor" and i % 61 == 5:
            outcome = "warn"
        elif rule == "hw.pcie-degraded" and i % 211 == 17:
            outcome = "block"
        elif rule == "net.ib-port-degraded" and i % 401 == 23:
            outcome = "block"
        elif rule == "power.cstates" and i % 13 == 0 and round_ < rounds // 2:
            outcome = "warn"
        elif rule == "virt.page-size" and i % 977 == 1:
            outcome = "unknown"
        rules.append({"rule": rule, "outcome": outcome})
        if outcome in ("warn", "block"):
            findings.append({"rule": rule, "severity": "error" if outcome == "block" else "warning",
                             "action": outcome, "message": "%s fired on %s" % (rule, host),
                             "evidence": {}, "remediation": []})
    health = "degraded" if any(r["outcome"] == "block" for r in rules) else (
        "warning" if any(r["outcome"] == "warn" for r in rules) else "healthy")
    facts = {
        "kernel.release": fact("6.1.0-18-amd64"),
        "kernel.cmdline": fact(cmdline),
        "kernel.arch": fact("x86_64"),
        "virt.platform": fact("none"),
        "iommu.mode": fact("identity"),
        "gpu.driver_version": fact("550.54.15" if i % 733 != 2 else "535.104.05"),
        "gpu.peer_memory": fact("nvidia_peermem" if i % 887 != 4 else "none"),
        "hca.models": fact("MT4129"),
        "hca.firmware": fact(firmware),
        "nccl.topo_file": fact("/etc/nccl/topo.xml"),
        "nccl.topo_file_hash": fact(topo_hash),
        "cpu.governor": fact("performance" if i % 61 != 5 else "powersave"),
        "cpu.cstates": fact("POLL C1"),
        "cpu.numa_balancing": fact(False),
        "pcie.links": fact("at maximum" if i % 211 != 17 else "0000:17:00.0 16GT/s x8 of 32GT/s x16"),
        "inventory.gpus": fact(8),
        "inventory.hcas": fact(8),
        "inventory.active_ib_ports": fact(8 if i % 401 != 23 else 7),
        "inventory.numa_nodes": fact(2),
        "inventory.cpus": fact(224),
    }
    if i % 1500 == 9:
        facts["gpu.driver_version"] = {"value": None, "reason": "neither sys/module/nvidia/version nor "
                                                                "proc/driver/nvidia/version is readable"}
    return {"schema": "launchguard.node-record/v1", "node": {"hostname": host, "class": node_class},
            "checked_at": "2026-05-01T%02d:%02d:%02dZ" % (10 - (rounds - 1 - round_), i // 60 % 60, i % 60),
            "health": health,
            "rules": rules, "facts": facts, "launchguard": "synthetic", "profile": {"name": node_class},
            "mode": "enforce", "decision": "block" if health == "degraded" else "allow",
            "rules_evaluated": len(RULES), "findings": findings, "patch": [], "unknown": []}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    n = int(sys.argv[1])
    pretty = "--pretty" in sys.argv[3:]
    rounds = int(sys.argv[sys.argv.index("--history") + 1]) if "--history" in sys.argv else 1
    if not 1 <= rounds <= 10:
        sys.exit("--history: 1 to 10 checks")
    with open(sys.argv[2], "w") as out:
        for round_ in range(rounds):
            for i in range(n):
                out.write(json.dumps(record(i, n, round_, rounds), indent=2 if pretty else None) + "\n")


if __name__ == "__main__":
    main()
