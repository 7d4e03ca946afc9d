#!/usr/bin/env python3
"""srun_phases.py — where a launch spends the time that the plugin adds.

Reads `perf script` output of the sched:sched_process_fork/exec/exit
tracepoints, recorded around bench/srun_overhead.sh with LG_BENCH_CSV set
(bench/srun_phases.sh does both), and splits each timed `srun -N1 -n2 true`
into phases by the processes it made: srun, the step's slurmstepd and its two
tasks. Prints each phase's median per configuration and its difference to
"off".

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


def read_events(path):
    parent, fork_time, execs, exits = {}, {}, {}, {}
    with open(path, encoding="utf-8", errors="replace") as trace:
        for line in trace:
            m = EVENT.match(line)
            if not m:
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
    parent, fork_time, execs, exits = read_events(argv[1])
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

    if "off" not in by_loop:
        sys.exit("srun_phases: no step of configuration off found in the trace")
    header = f"{'phase (median, us)':38s}" + "".join(f"{c:>10s}" for c in configs)
    header += "".join(f"{c + ' - off':>14s}" for c in configs if c != "off")
    print(header + "   (differences: median of the paired differences within a loop)")

    def paired(config, label):
        mine, off = by_loop[config][label], by_loop["off"][label]
        both = [mine[i] - off[i] for i in mine if i in off]
        return statistics.median(both) if both else float("nan")

    for label, meaning in PHASES:
        medians = {c: statistics.median(by_loop[c][label].values()) for c in configs if by_loop[c][label]}
        row = f"{label:38s}" + "".join(f"{medians.get(c, float('nan')):10.0f}" for c in configs)
        row += "".join(f"{paired(c, label):+14.0f}" for c in configs if c != "off")
        print(row + f"   {meaning}")
    print("steps per configuration: " + ", ".join(f"{c} {len(by_loop[c]['srun total'])}" for c in configs))


if __name__ == "__main__":
    main(sys.argv)
