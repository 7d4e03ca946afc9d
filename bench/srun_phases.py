#!/usr/bin/env python3
"""srun_phases.py — where a launch spends the time that the plugin adds.

Reads `perf script` output of the sched:sched_process_fork/exec/exit
tracepoints, recorded around bench/srun_overhead.sh with LG_BENCH_CSV set
(bench/srun_phases.sh does both), and splits each timed `srun -N1 -n2 true`
into phases by the processes it made: srun, the step's slurmstepd and its two
tasks. Prints each phase's median per configuration and its difference to
"off".

When the recording also holds the page-faults software event with data
addresses (bench/srun_phases.sh with LG_BENCH_PHASES_FAULTS=1), it prints the
page faults of each process's phase the same way, and what the tasks' faults
hit, by mapping. Where a page fault is expensive (docs/performance.md: 12 to
20 µs in a VM that shadows the guest's page tables) they are much of the time.

The CSV lists the timed sruns in the order they ran; the sruns before them
are the warm-up (3 per configuration). sruns run one after another, so the
slurmstepd that a srun's lifetime contains is its step's.

Usage: srun_phases.py PERF_SCRIPT_OUTPUT LG_BENCH_CSV
"""
import re
import statistics
import sys
from collections import defaultdict

EVENT = re.compile(r"\s*(.+?)\s+(\d+)/(\d+)\s+([\d.]+):\s+sched:(\S+):\s+(.*)")
# perf script -F ...,addr,dso: the faulting address and the file (or [heap],
# [stack], [anon]...) it falls in.
FAULT = re.compile(r"\s*(.+?)\s+(\d+)/(\d+)\s+([\d.]+):\s+page-faults:\s+([0-9a-f]+)(?:.*\((.*)\))?\s*$")

# (label, what it holds) in the order of a launch. Slurm's slurmstepd sleeps
# 100 ms after the first task exits before it reaps the rest and ends the step
# (src/slurmd/slurmstepd/mgr.c, _wait_for_all_tasks), so the launch's tail
# follows the first task, not the last.
PHASES = [
    ("srun start -> slurmstepd exec", "srun (plugstack, --launchguard), slurmctld, slurmd"),
    ("slurmstepd exec -> first task fork", "slurmstepd's set-up: spank init, user_init"),
    ("first task fork -> its exec", "task_init_privileged, task_init (first task)"),
    ("last task fork -> its exec", "the same, last task forked"),
    ("slurmstepd exec -> first task exit", "the step until its first task ends"),
    ("first task exit -> slurmstepd exit", "Slurm's 100 ms wait, teardown, spank_fini"),
    ("slurmstepd exit -> srun exit", "srun's own end"),
    ("srun total", "the whole srun"),
]


def read_events(path, faults):
    """Fills `faults` (pid -> [(time, mapping)]) from the page-fault lines."""
    parent, fork_time, execs, exits = {}, {}, {}, {}
    with open(path, encoding="utf-8", errors="replace") as trace:
        for line in trace:
            m = EVENT.match(line)
            if not m:
                f = FAULT.match(line)
                if f:
                    mapping = (f.group(6) or "?").rsplit("/", 1)[-1]
                    faults[int(f.group(2))].append((float(f.group(4)) * 1e6, mapping))
                continue
            _, pid, tid, seconds, name, rest = m.groups()
            t = float(seconds) * 1e6
            if name == "sched_process_fork":
                child = int(re.search(r"child_pid=(\d+)", rest).group(1))
                parent[child] = int(pid)
                fork_time[child] = t
            elif name == "sched_process_exec":
                filename = re.search(r"filename=(\S+)", rest).group(1)
                execs.setdefault(int(re.search(r" pid=(\d+)", rest).group(1)), []).append((t, filename))
            elif name == "sched_process_exit" and pid == tid:
                exits[int(pid)] = t
    return parent, fork_time, execs, exits


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    faults = defaultdict(list)
    parent, fork_time, execs, exits = read_events(argv[1], faults)

    def count_faults(pid, start, end):
        return sum(1 for t, _ in faults.get(pid, []) if start <= t < end)
    with open(argv[2], encoding="utf-8") as csv:
        order = [row.split(",")[0] for row in csv.read().split()[1:]]
    configs = list(dict.fromkeys(order))

    def program(pid):
        return execs[pid][-1][1].rsplit("/", 1)[-1] if pid in execs else None

    sruns = sorted((execs[p][-1][0], exits[p], p) for p in execs if program(p) == "srun" and p in exits)
    warmup = 3 * len(configs)
    if len(sruns) < warmup + len(order):
        sys.exit(f"srun_phases: {len(sruns)} sruns in the trace, expected {warmup + len(order)}")
    # Each loop of srun_overhead.sh times every configuration once: the
    # differences within a loop share whatever the machine did then.
    timed = {pid: (name, i // len(configs)) for i, ((_, _, pid), name) in enumerate(zip(sruns[warmup:], order))}

    tasks_of = defaultdict(list)
    for pid in execs:
        if program(pid) == "true" and pid in parent:
            tasks_of[parent[pid]].append(pid)

    by_loop = defaultdict(lambda: defaultdict(dict))  # config -> phase -> {loop: value}
    faults_by_loop = defaultdict(lambda: defaultdict(dict))  # the same, in page faults
    task_mappings = defaultdict(lambda: defaultdict(int))  # config -> mapping -> faults in tasks
    task_count = defaultdict(int)
    for stepd in (p for p in execs if program(p) == "slurmstepd"):
        tasks = tasks_of.get(stepd, [])
        started = execs[stepd][-1][0]
        owner = [s for s in sruns if s[0] <= started <= s[1]]
        if not tasks or not owner or owner[0][2] not in timed or stepd not in exits:
            continue
        srun_start, srun_exit, srun_pid = owner[0]
        config, loop = timed[srun_pid]
        first = min(tasks, key=lambda p: fork_time[p])
        last = max(tasks, key=lambda p: fork_time[p])
        first_exit = min(exits[p] for p in tasks if p in exits)
        values = [
            started - srun_start,
            fork_time[first] - started,
            execs[first][-1][0] - fork_time[first],
            execs[last][-1][0] - fork_time[last],
            first_exit - started,
            exits[stepd] - first_exit,
            srun_exit - exits[stepd],
            srun_exit - srun_start,
        ]
        for (label, _), value in zip(PHASES, values):
            by_loop[config][label][loop] = value
        if faults:
            # The phases that one process spans: slurmstepd's set-up and end,
            # each task from its fork to its exec.
            for label, count in (
                (PHASES[1][0], count_faults(stepd, started, fork_time[first])),
                (PHASES[2][0], count_faults(first, fork_time[first], execs[first][-1][0])),
                (PHASES[3][0], count_faults(last, fork_time[last], execs[last][-1][0])),
                (PHASES[5][0], count_faults(stepd, first_exit, exits[stepd])),
            ):
                faults_by_loop[config][label][loop] = count
            for task in tasks:
                task_count[config] += 1
                for t, mapping in faults.get(task, []):
                    if fork_time[task] <= t < execs[task][-1][0]:
                        task_mappings[config][mapping] += 1

    if "off" not in by_loop:
        sys.exit("srun_phases: no step of configuration off found in the trace")
    print_table(by_loop, configs, "phase (median, us)", PHASES)
    print("steps per configuration: " + ", ".join(f"{c} {len(by_loop[c]['srun total'])}" for c in configs))
    if faults:
        print()
        print_table(faults_by_loop, configs, "page faults (median)", [p for p in PHASES if p[0] in faults_by_loop["off"]])
        print()
        print("page faults per task, fork to exec, by what they hit (mean)")
        mappings = sorted({m for c in configs for m in task_mappings[c]},
                          key=lambda m: -sum(task_mappings[c][m] for c in configs))
        print(f"{'mapping':38s}" + "".join(f"{c:>12s}" for c in configs))
        for mapping in mappings:
            means = [task_mappings[c][mapping] / max(task_count[c], 1) for c in configs]
            if max(means) >= 0.5:
                print(f"{mapping[:38]:38s}" + "".join(f"{m:12.1f}" for m in means))


def print_table(by_loop, configs, title, phases):
    """Each phase's median per configuration and its paired difference to off."""
    header = f"{title:38s}" + "".join(f"{c:>10s}" for c in configs)
    header += "".join(f"{c + ' - off':>14s}" for c in configs if c != "off")
    print(header + "   (differences: median of the paired differences within a loop)")

    def paired(config, label):
        mine, off = by_loop[config][label], by_loop["off"][label]
        both = [mine[i] - off[i] for i in mine if i in off]
        return statistics.median(both) if both else float("nan")

    for label, meaning in phases:
        medians = {c: statistics.median(by_loop[c][label].values()) for c in configs if by_loop[c][label]}
        row = f"{label:38s}" + "".join(f"{medians.get(c, float('nan')):10.0f}" for c in configs)
        row += "".join(f"{paired(c, label):+14.0f}" for c in configs if c != "off")
        print(row + f"   {meaning}")


if __name__ == "__main__":
    main(sys.argv)
