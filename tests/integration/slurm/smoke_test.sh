#!/usr/bin/env bash
# smoke_test.sh — proves the single-node Slurm test harness end to end.
# Usage: smoke_test.sh PROBE_PLUGIN_SO      (run as root; ctest: `ctest -L slurm`)
#
# Starts a fresh cluster (cluster.sh) with an EMPTY plugstack, checks srun, CPU
# binding and sbatch, then lists the test-only probe plugin in the plugstack
# (re-read at every launch, no restart) and checks that slurmstepd loads it, its
# task_init messages reach srun's stderr / the batch output, and a failing
# `required` task_init fails the step with exit code 1.  The cluster is stopped
# by a trap, also on failure; the state dir is kept on failure for inspection.
# Never skips: no root / no Slurm / no cluster is a FAIL (CI runs as root).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
cluster="$here/cluster.sh"
probe=${1:-}
fails=0
passes=0

pass() { echo "PASS: $*"; passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
fatal() { echo "FAIL: $*"; echo "=== smoke: $passes passed, $((fails + 1)) failed (aborted) ==="; exit 1; }
# Clients get a hard bound; srun ignores the first SIGTERM, hence -k.
run() { timeout -k 5 "${T:-60}" "$@"; }

[ "$(id -u)" -eq 0 ] || fatal "must run as root (uid $(id -u)); the Slurm integration tests need root"
[ -f "$probe" ] || fatal "probe plugin '$probe' not found (build target spank_probe; needs libslurm-dev)"
ncpu=$(nproc)
[ "$ncpu" -ge 2 ] || fatal "need >= 2 CPUs for the binding checks, have $ncpu"

state=$(mktemp -d "${LG_SLURM_TMPDIR:-/tmp}/lgslurm.XXXXXX") || fatal "mktemp failed"
plugstack="$state/plugstack.conf"
: >"$plugstack"

cleanup() {
  local rc=$?
  "$cluster" stop "$state" >/dev/null 2>&1 || true
  if [ "$fails" -eq 0 ] && [ "$rc" -eq 0 ]; then
    rm -rf "$state"
  else
    echo "smoke: state dir kept for inspection: $state (logs in $state/log)"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t0=$(date +%s.%N)
if ! "$cluster" start "$state" "$plugstack"; then
  fatal "cluster start (see diagnostics above)"
fi
t1=$(date +%s.%N)
pass "cluster start ($(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s)"
# shellcheck disable=SC1091
. "$state/env"
cd "$state" || fatal "cd $state"

# show output of a failed check
show() { sed 's/^/    | /' "$@" >&2; }

# 1. the simplest step
if run srun -N1 -n1 true >out 2>err; then pass "srun -N1 -n1 true"
else fail "srun -N1 -n1 true (rc=$?)"; show out err; fi

# 2. CPU binding: task i must be pinned to exactly the mapped CPU
check_bind() { # check_bind MAP EXPECT0 EXPECT1
  local map=$1 e0=$2 e1=$3
  if run srun -n2 -l --cpu-bind="map_cpu:$map" grep Cpus_allowed_list /proc/self/status >out 2>err \
     && grep -qP "^0: Cpus_allowed_list:\t$e0\$" out && grep -qP "^1: Cpus_allowed_list:\t$e1\$" out; then
    pass "srun -n2 --cpu-bind=map_cpu:$map binds task0->$e0 task1->$e1"
  else
    fail "srun -n2 --cpu-bind=map_cpu:$map binding"; show out err
  fi
}
check_bind 0,1 0 1
check_bind 1,0 1 0

# 3. batch job
# shellcheck disable=SC2016  # $SLURM_JOB_ID expands in the job
printf '#!/bin/bash\necho "lgsmoke batch ran job=$SLURM_JOB_ID"\n' >job.sh
if T=120 run sbatch --wait -o batch.out job.sh >out 2>err && grep -q '^lgsmoke batch ran job=[0-9]' batch.out; then
  pass "sbatch --wait trivial script"
else
  fail "sbatch --wait trivial script"; show out err; [ -f batch.out ] && show batch.out
fi

# 4. the probe plugin is loaded by slurmstepd and its messages reach srun's stderr
echo "required $probe log=$state/probe.log" >"$plugstack"
if run srun -n2 --cpu-bind=map_cpu:1,0 true >out 2>err \
   && grep -q '^slurmstepd-[^:]*: error: lgprobe: task_init marker task=0 .*cpus=1$' err \
   && grep -q '^slurmstepd-[^:]*: error: lgprobe: task_init marker task=1 .*cpus=0$' err \
   && grep -q 'lgprobe: spank_log marker task=0' err \
   && ! grep -q 'lgprobe: info marker' err; then
  pass "probe plugin task_init runs in slurmstepd; slurm_error/slurm_spank_log reach srun stderr, slurm_info does not"
else
  fail "probe plugin messages on srun stderr"; show out err
fi
if grep -q '^lgprobe hook=task_init ctx=remote .* task=0 cpus=1$' probe.log \
   && grep -q '^lgprobe hook=init ctx=local ' probe.log \
   && grep -q '^lgprobe hook=user_init ctx=remote ' probe.log \
   && grep -q '^lgprobe hook=task_exit ctx=remote ' probe.log; then
  pass "probe hook log: local init, remote user_init/task_init (final CPU mask)/task_exit"
else
  fail "probe hook log"; [ -f probe.log ] && show probe.log
fi

# 5. a failing required task_init fails the step with exit code 1
echo "required $probe fail=task_init" >"$plugstack"
run srun -n1 true >out 2>err; rc=$?
if [ "$rc" -eq 1 ] && grep -q 'lgprobe: blocking task 0' err \
   && grep -q 'spank: required plugin .*task_init() failed with rc=-1' err; then
  pass "required plugin failing task_init: srun exits 1 with the plugin's message"
else
  fail "failing task_init (srun rc=$rc, want 1)"; show out err
fi

# 6. batch step: the plugin's messages land in the job's output file
echo "required $probe" >"$plugstack"
if T=120 run sbatch --wait -o batch2.out job.sh >out 2>err \
   && grep -q 'error: lgprobe: task_init marker task=0' batch2.out && grep -q '^lgsmoke batch ran' batch2.out; then
  pass "probe plugin in the batch step writes to the batch output file"
else
  fail "probe plugin in batch step"; show out err; [ -f batch2.out ] && show batch2.out
fi

# 7. a non-root job user (nobody: no useradd needed): the task runs as that user,
#    task_init runs as that user with the final CPU mask.  -c2 so that CPU 1 is in
#    the allocation (map_cpu outside the allocation is refused).
echo "required $probe log=$state/probe-user.log" >"$plugstack"
: >probe-user.log; chmod 0666 probe-user.log
if run runuser -u nobody -- srun -n1 -c2 --cpu-bind=map_cpu:1 bash -c 'id -u; grep Cpus_allowed_list /proc/self/status' >out 2>err \
   && [ "$(head -n1 out)" = "$(id -u nobody)" ] && grep -qP '^Cpus_allowed_list:\t1$' out \
   && grep -q "^lgprobe hook=task_init ctx=remote uid=$(id -u nobody) euid=$(id -u nobody) .* cpus=1\$" probe-user.log \
   && grep -q "^lgprobe hook=user_init ctx=remote uid=0 euid=$(id -u nobody) " probe-user.log; then
  pass "non-root job user (nobody): task and task_init run as the user, user_init with euid=user"
else
  fail "non-root job user"; show out err probe-user.log
fi

if [ "$fails" -gt 0 ]; then
  echo "--- slurmd.log tail ---"; tail -n 30 "$LG_SLURMD_LOG" || true
fi
echo "=== smoke: $passes passed, $fails failed ==="
[ "$fails" -eq 0 ]
