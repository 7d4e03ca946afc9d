#!/usr/bin/env bash
# srun_phases.sh — bench/srun_overhead.sh, recorded with the kernel's process
# tracepoints, and its sruns split into phases (bench/srun_phases.py): where
# the time the plugin adds is spent (srun, slurmstepd's set-up, the tasks'
# hooks, the step's end), per configuration. Needs perf (Debian: linux-perf)
# and root; the arguments and LG_BENCH_* variables are srun_overhead.sh's.
#
# Usage: bench/srun_phases.sh LAUNCHGUARD_SO [RUNS] [PLUGIN_ARGS...]
# LG_BENCH_PHASES_KEEP=DIR keeps the recording (perf.data, trace.txt, runs.csv).
# LG_BENCH_PHASES_FAULTS=1 also records every page fault with its address (one
# event each: a larger recording) and prints each phase's page faults and what
# the tasks' faults hit.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
command -v perf >/dev/null || { echo "srun_phases: perf is missing (Debian: linux-perf)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "srun_phases: must run as root" >&2; exit 2; }
work=${LG_BENCH_PHASES_KEEP:-$(mktemp -d /tmp/lgphases.XXXXXX)}
mkdir -p "$work"
[ -n "${LG_BENCH_PHASES_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT

# By default only fork, exec and exit: a few events per process, nothing per
# system call.
events=(-e sched:sched_process_fork -e sched:sched_process_exec -e sched:sched_process_exit)
fields=comm,pid,tid,time,event,trace
if [ "${LG_BENCH_PHASES_FAULTS:-0}" = 1 ]; then
  events+=(-e page-faults -c 1 -d)  # every fault, with the address it hit
  fields+=,addr,dso
fi
perf record -q -a -o "$work/perf.data" "${events[@]}" -- \
  env LG_BENCH_CSV="$work/runs.csv" "$here/srun_overhead.sh" "$@"
perf script -i "$work/perf.data" -F "$fields" >"$work/trace.txt" 2>/dev/null
echo
python3 "$here/srun_phases.py" "$work/trace.txt" "$work/runs.csv"
