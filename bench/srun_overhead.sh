#!/usr/bin/env bash
# srun_overhead.sh — what spank_launchguard.so adds to a job launch on a real
# single-node Slurm (tests/integration/slurm/cluster.sh; root, no systemd).
#
# Usage: bench/srun_overhead.sh LAUNCHGUARD_SO [RUNS] [PLUGIN_ARGS...]
#   LAUNCHGUARD_SO  build-dir/slurm-plugin/spank_launchguard.so
#   RUNS            runs per configuration (default 40, minimum 30)
#   PLUGIN_ARGS     plugstack arguments (default: profile=default mode=enforce
#                   topology-cache=STATE/cache/topology.json, as operators run it)
#
# LG_BENCH_PROLOG_SO=build-dir/slurm-plugin/spank_launchguard_prolog.so adds the
# node-check plugin to "on" (same arguments): Slurm then runs a job prolog on
# every new job.
#
# Two clusters run side by side on this machine (own state dirs, ports, munged):
#   off: empty plugstack;  on: `required spank_launchguard.so ARGS`.
# Each has its own slurmd, so "off" pays nothing for launchguard (a slurmd that
# loaded the plugin at start spawns a spank prolog for every job, even if the
# plugstack is emptied later).  The timed command, `srun -N1 -n2 true` as the
# unprivileged user nobody, alternates between the two clusters (the order of
# each pair alternates too), after 3 untimed warm-up runs on each.  "on" runs
# two task_init calls per srun, reading the topology cache slurmd wrote at
# start; with the prolog plugin, also one job_prolog per new job.
#
# LG_BENCH_STEPS=1: time job steps inside one allocation per cluster instead
# (`salloc --no-shell -N1 -n2`, then `srun --jobid=J -N1 -n2 true`): job_prolog
# runs once per job (absorbed by the warm-up), so only per-step costs remain
# (plugin load in srun and slurmstepd, task_init per task).
#
# Prints median, p90 and mean per configuration; the overhead as the
# difference of the medians, and as the median of the paired differences with
# its 95 % interval, absolute and relative.  Target (docs/performance.md):
# <= 1 % and <= 1.5 ms, held against the paired median.
# On a machine that others load, run it under `chrt -f 10` (docs/performance.md
# says why): the clusters it starts inherit the policy.
# Raw per-run times (microseconds) are kept in $LG_BENCH_CSV when set.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
cluster="$here/../tests/integration/slurm/cluster.sh"
lg_built=${1:-}
runs=${2:-40}
shift 2 2>/dev/null || shift $#

die() { echo "srun_overhead: $*" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || die "must run as root (it starts Slurm daemons)"
[ -f "$lg_built" ] || die "usage: $0 LAUNCHGUARD_SO [RUNS] [PLUGIN_ARGS...]"
[ "$runs" -ge 30 ] 2>/dev/null || die "RUNS must be >= 30"
id nobody >/dev/null 2>&1 || die "user nobody missing"

off=$(mktemp -d /tmp/lgbench-off.XXXXXX) && on=$(mktemp -d /tmp/lgbench-on.XXXXXX) || die "mktemp"
chmod 0755 "$off" "$on"
cleanup() {
  "$cluster" stop "$off" >/dev/null 2>&1 || true
  "$cluster" stop "$on" >/dev/null 2>&1 || true
  rm -rf "$off" "$on"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

install -D -m 0755 "$lg_built" "$on/lib/spank_launchguard.so"
# Its checks, loaded from the same directory (slurm-plugin/core_loader.h); a
# plugin of an older build has none.
core_built="$(dirname "$lg_built")/spank_launchguard_core.so"
[ -f "$core_built" ] && install -m 0755 "$core_built" "$on/lib/spank_launchguard_core.so"
[ -f "${core_built%.so}_yaml.so" ] && install -m 0755 "${core_built%.so}_yaml.so" "$on/lib/spank_launchguard_core_yaml.so"
if [ "$#" -eq 0 ]; then
  set -- profile=default mode=enforce "topology-cache=$on/cache/topology.json"
fi
: >"$off/plugstack.conf"
echo "required $on/lib/spank_launchguard.so $*" >"$on/plugstack.conf"
if [ -n "${LG_BENCH_PROLOG_SO:-}" ]; then
  install -D -m 0755 "$LG_BENCH_PROLOG_SO" "$on/lib/spank_launchguard_prolog.so"
  echo "required $on/lib/spank_launchguard_prolog.so $*" >>"$on/plugstack.conf"
fi

# Distinct port pairs: both clusters are started from this shell (same pid).
LG_SLURMCTLD_PORT=$((21000 + ($$ % 2000) * 4)) "$cluster" start "$off" "$off/plugstack.conf" 2>/dev/null \
  || die "cluster (off) did not start"
LG_SLURMCTLD_PORT=$((21002 + ($$ % 2000) * 4)) "$cluster" start "$on" "$on/plugstack.conf" 2>/dev/null \
  || die "cluster (on) did not start"

alloc() { # alloc SLURM_CONF -> job id of a 2-CPU allocation held by nobody
  SLURM_CONF=$1 timeout 60 runuser -u nobody -- salloc --no-shell -N1 -n2 2>&1 \
    | sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p'
}
jobopt_off=""; jobopt_on=""; what="srun -N1 -n2 true (a new job each)"
if [ -n "${LG_BENCH_STEPS:-}" ]; then
  j_off=$(alloc "$off/slurm.conf"); j_on=$(alloc "$on/slurm.conf")
  [ -n "$j_off" ] && [ -n "$j_on" ] || die "salloc --no-shell failed"
  jobopt_off="--jobid=$j_off"; jobopt_on="--jobid=$j_on"
  what="srun --jobid=J -N1 -n2 true (steps in one allocation)"
fi

# One unprivileged shell runs the whole loop, so runuser is not timed.
# shellcheck disable=SC2016
runuser -u nobody -- env OFF="$off/slurm.conf" ON="$on/slurm.conf" RUNS="$runs" JOFF="$jobopt_off" JON="$jobopt_on" bash -c '
  cd /tmp || exit 1
  t() { local s e j; if [ "$1" = "$ON" ]; then j=$JON; else j=$JOFF; fi
    s=$(date +%s%N); SLURM_CONF=$1 timeout -k 5 60 srun $j -N1 -n2 true >/dev/null 2>"/tmp/lgbench.$$.err" || { cat "/tmp/lgbench.$$.err" >&2; echo FAIL; return; }; e=$(date +%s%N); echo $(( (e - s) / 1000 )); }
  for i in 1 2 3; do t "$OFF" >/dev/null; t "$ON" >/dev/null; done
  for ((i = 0; i < RUNS; i++)); do
    if ((i % 2)); then echo "on $(t "$ON")"; echo "off $(t "$OFF")"
    else echo "off $(t "$OFF")"; echo "on $(t "$ON")"; fi
  done
  rm -f "/tmp/lgbench.$$.err"
' >"$on/times" || die "timing loop failed"
grep -q FAIL "$on/times" && die "an srun failed: $(grep -c FAIL "$on/times") runs; see messages above"
[ -n "${LG_BENCH_CSV:-}" ] && { echo "config,us"; tr ' ' , <"$on/times"; } >"$LG_BENCH_CSV"

stats() { # stats CONFIG -> "n median p90 mean" in ms
  awk -v c="$1" '$1 == c {print $2}' "$on/times" | sort -n | awk '
    {a[NR] = $1; s += $1}
    END {
      m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
      p = a[int(0.9 * NR + 0.999999)]
      printf "%d %.1f %.1f %.1f\n", NR, m / 1000, p / 1000, s / NR / 1000
    }'
}
read -r n_off med_off p90_off mean_off < <(stats off)
read -r n_on med_on p90_on mean_on < <(stats on)
echo "$what as nobody, interleaved, $runs runs each; plugin: $*${LG_BENCH_PROLOG_SO:+ (+ prolog plugin)}"
printf '%-14s %5s %11s %9s %10s\n' config runs "median ms" "p90 ms" "mean ms"
printf '%-14s %5d %11.1f %9.1f %10.1f\n' off "$n_off" "$med_off" "$p90_off" "$mean_off"
printf '%-14s %5d %11.1f %9.1f %10.1f\n' launchguard "$n_on" "$med_on" "$p90_on" "$mean_on"
awk -v a="$med_off" -v b="$med_on" -v pa="$p90_off" -v pb="$p90_on" 'BEGIN {
  printf "overhead, difference of the medians: %+.1f ms (%+.1f %%)   p90: %+.1f ms\n", b - a, 100 * (b - a) / a, pb - pa }'
# Each loop iteration times one off and one on srun back to back, so the two
# share whatever the machine was doing then. The median of these paired
# differences is far less noisy than the difference of two medians (on the
# 2-vCPU VM of docs/performance.md, a bootstrap gave 0.10 ms against 0.33 ms
# at 300 runs), and it is what the target is held against. The interval is
# the distribution-free 95 % one for a median (order statistics).
awk '{ v[$1] = $2 } NR % 2 == 0 { print v["on"] - v["off"] }' "$on/times" | sort -n | awk -v base="$med_off" '
  { d[NR] = $1 / 1000 }
  END {
    n = NR
    m = (n % 2) ? d[(n + 1) / 2] : (d[n / 2] + d[n / 2 + 1]) / 2
    half = 1.96 * sqrt(n) / 2
    lo = int(n / 2 - half); if (lo < 1) lo = 1
    hi = int(n / 2 + half + 0.999999) + 1; if (hi > n) hi = n
    printf "overhead, median of %d paired runs: %+.2f ms (%+.2f %%), 95 %% interval %+.2f to %+.2f ms\n",
      n, m, 100 * m / base, d[lo], d[hi]
    printf "target: <= 1 %% and <= 1.5 ms (paired median): %s\n", (m <= 1.5 && 100 * m / base <= 1) ? "MET" : "MISSED"
  }'
