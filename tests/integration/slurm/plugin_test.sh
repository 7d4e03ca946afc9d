#!/usr/bin/env bash
# plugin_test.sh — spank_launchguard.so on a real single-node Slurm cluster.
# Usage: plugin_test.sh LAUNCHGUARD_SO PYXIS_STANDIN_SO LAUNCHGUARD_CLI LAUNCHGUARD_PROLOG_SO
#        (run as root; ctest: `ctest -L slurm`, test slurm.plugin)
#
# Starts one cluster (cluster.sh) whose plugstack lists launchguard as
# `required`, then runs every scenario through real srun / sbatch --wait,
# rewriting the plugstack between scenarios (srun and sbatch re-read it at each
# launch; slurmd loads it, and decides whether to run job_prolog, only at
# start: restart-slurmd).  The user-facing scenarios run as `nobody`, because
# task_init runs as the job user.  The cluster is stopped by a trap, also on
# failure; the state dir is kept on failure for inspection.
#
# Node facts come from fixtures, not from this machine (plugstack hwloc-xml= and
# sysfs-root=): the public fixture hwloc/32em64t-2n8c2t-pci-normalio.xml (2 NUMA
# nodes: PUs 0-7,16-23 on node 0, 8-15,24-31 on node 1; GPU index 1 = 0000:03:00.0
# on node 0, GPU index 0 = 0000:84:00.0 on node 1; mlx5_0) and the sysfs tree
# tests/fixtures/sysfs/kvm-guest-2n (written for that XML; mlx5_0 port 1 ACTIVE,
# 100 Gb/s).  They, a site profile and the plugins are copied into the state dir
# with 0644/0755 permissions so `nobody` can read them wherever the checkout is.
# This machine's CPUs 0 and 1 are used for binding; in the XML both are on NUMA
# node 0.  Rules that read this machine's live state may add WARN lines (e.g.
# mem.memlock: RLIMIT_MEMLOCK is 8 MiB in the sandbox and root cannot raise it;
# cpu.bind-by-id on Slurm's own masks), so checks look for the rule they test and
# for the absence of BLOCK/PATCH, not for silence.
#
# LG_SLURM_KEEP=1 keeps the state dir (work/*.err: what users saw) after a pass.
# Never skips for a missing root, Slurm or plugin: a FAIL (CI runs as root).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
src=$(cd "$here/../../.." && pwd -P)
# The node's hwloc export is a public fixture: skipped (77) without them.
shared="${LAUNCHGUARD_SHARED_FIXTURES:-}"
[ -d "$shared/hwloc" ] || { echo "SKIP: needs the public fixtures: LAUNCHGUARD_SHARED_FIXTURES not found ($shared)"; exit 77; }
cluster="$here/cluster.sh"
lg_built=${1:-}
standin_built=${2:-}
cli=${3:-}
prolog_built=${4:-}
fails=0
passes=0

pass() { echo "PASS: $*"; passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
fatal() { echo "FAIL: $*"; echo "=== plugin: $passes passed, $((fails + 1)) failed (aborted) ==="; exit 1; }
# Clients get a hard bound; srun ignores the first SIGTERM, hence -k.
run() { timeout -k 5 "${T:-60}" "$@"; }
# Run a client as the unprivileged job user; the environment (SLURM_CONF) is kept.
as_user() { run runuser -u nobody -- "$@"; }
show() { sed 's/^/    | /' "$@" >&2; }

[ "$(id -u)" -eq 0 ] || fatal "must run as root (uid $(id -u)); the Slurm integration tests need root"
[ -f "$lg_built" ] || fatal "launchguard plugin '$lg_built' not found (build target spank_launchguard; needs libslurm-dev)"
[ -f "$standin_built" ] || fatal "test plugin '$standin_built' not found (build target spank_pyxis_standin)"
[ -f "$prolog_built" ] || fatal "launchguard prolog plugin '$prolog_built' not found (build target spank_launchguard_prolog)"
[ "$(nproc)" -ge 2 ] || fatal "need >= 2 CPUs for the binding checks, have $(nproc)"
id nobody >/dev/null 2>&1 || fatal "user 'nobody' does not exist"

state=$(mktemp -d "${LG_SLURM_TMPDIR:-/tmp}/lgslurm.XXXXXX") || fatal "mktemp failed"
chmod 0755 "$state"
plugstack="$state/plugstack.conf"

cleanup() {
  local rc=$?
  "$cluster" stop "$state" >/dev/null 2>&1 || true
  if [ "$fails" -eq 0 ] && [ "$rc" -eq 0 ] && [ -z "${LG_SLURM_KEEP:-}" ]; then
    rm -rf "$state"
  else
    echo "plugin: state dir kept for inspection: $state (logs in $state/log)"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- inputs the job user must be able to read -----------------------------------
lib="$state/lib"; fx="$state/fx"; work="$state/work"
mkdir -p "$lib" "$fx/sysfs" "$work" "$state/hostfs/opt/topo"
install -m 0755 "$lg_built" "$lib/spank_launchguard.so"
# The plugin loads its checks from its own directory (slurm-plugin/core_loader.h),
# from the build without YAML unless the profile is a YAML file.
install -m 0755 "$(dirname "$lg_built")/spank_launchguard_core.so" "$lib/spank_launchguard_core.so"
install -m 0755 "$(dirname "$lg_built")/spank_launchguard_core_yaml.so" "$lib/spank_launchguard_core_yaml.so"
install -m 0755 "$standin_built" "$lib/spank_pyxis_standin.so"
mkdir -p "$state/enroot-data"
install -m 0755 "$prolog_built" "$lib/spank_launchguard_prolog.so"
install -m 0644 "$shared/hwloc/32em64t-2n8c2t-pci-normalio.xml" "$fx/node.xml"
cp -R "$src/tests/fixtures/sysfs/kvm-guest-2n" "$fx/sysfs/"
# The site profile of the tests: the fixture node's governor and NUMA balancing
# are accepted (so a clean job has no findings), and net.qps-low asks for 4 QPs
# per connection at >= 512 GPUs on the fixture's 100 Gb/s link.  The fixture's
# PCIe links are degraded on purpose (GPU 0000:03:00.0 at x8 of x16, NIC at 5 of
# 8 GT/s; unit-tested in tests/unit/rules): hw.pcie-degraded would block every
# job_prolog (draining the node) and task, so it is off here.
cat >"$fx/lgtest.yaml" <<'YAML'
name: lgtest
description: launchguard Slurm integration tests (hwloc 32em64t-2n8c2t + sysfs kvm-guest-2n)
cpu:
  governor: schedutil
  numa_balancing_allowed: true
nccl:
  qps_per_connection:
    min: 4
    min_total_gpus: 512
    min_link_gbps: 100
rules:
  hw.pcie-degraded: off
YAML
# An NCCL topology file that matches the fixture node exactly (every GPU and the
# NIC of the hwloc XML, on their NUMA nodes: mlx5_0 at 0000:04:00.0 is on node
# 1, which topo.numa-drift checks), so only its presence matters.
cat >"$state/hostfs/opt/topo/topo.xml" <<'XML'
<system version="1">
  <cpu numaid="0" affinity="00ff00ff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="45">
    <pci busid="0000:03:00.0" class="0x030200" link_speed="8.0 GT/s PCIe" link_width="16"/>
  </cpu>
  <cpu numaid="1" affinity="ff00ff00" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="45">
    <pci busid="0000:83:00.0" class="0x030200" link_speed="8.0 GT/s PCIe" link_width="16"/>
    <pci busid="0000:84:00.0" class="0x030200" link_speed="8.0 GT/s PCIe" link_width="16"/>
    <pci busid="0000:84:00.1" class="0x030000" link_speed="8.0 GT/s PCIe" link_width="16"/>
    <pci busid="0000:04:00.0" class="0x020700" link_speed="8.0 GT/s PCIe" link_width="16">
      <nic>
        <net name="mlx5_0" dev="0" speed="100000" port="1" guid="0x1" maxconn="131072" gdr="1"/>
      </nic>
    </pci>
  </cpu>
</system>
XML
chmod -R u+rwX,go+rX,go-w "$fx" "$lib" "$state/hostfs"
chown nobody "$work" "$state/enroot-data"
topo_host="$state/hostfs/opt/topo/topo.xml"

# As docs/slurm.md tells sites: the plugstack names the compiled profile, which
# the checks read without YAML. Section 9c covers a YAML profile.
[ -x "$cli" ] || fatal "the launchguard CLI ($cli) is needed to compile the test profile"
"$cli" profile compile "$fx/lgtest.yaml" -o "$fx/lgtest.json" || fatal "launchguard profile compile $fx/lgtest.yaml"
chmod 0644 "$fx/lgtest.json"

lg="$lib/spank_launchguard.so"
fixture_args="hwloc-xml=$fx/node.xml sysfs-root=$fx/sysfs/kvm-guest-2n"
# stack LINE...: the plugstack, one line per argument
stack() { printf '%s\n' "$@" >"$plugstack"; }
lg_line() { echo "required $lg profile=$fx/lgtest.json topology-cache=$state/cache/topology.json $fixture_args $*"; }

stack "$(lg_line mode=enforce)"
# The node's own /etc and /opt are overlays in slurmd's mount namespace
# (cluster.sh): node_file writes a file there that every step and task sees as
# the host's, and the machine never does.
export LG_SLURMD_OVERLAY="/etc /opt"
t0=$(date +%s.%N)
"$cluster" start "$state" "$plugstack" || fatal "cluster start with launchguard in the plugstack (see diagnostics above)"
t1=$(date +%s.%N)
pass "cluster start with launchguard listed (slurmd loads it) ($(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s)"
# shellcheck disable=SC1091
. "$state/env"
# node_file PATH: stdin becomes PATH on the node (0644); node_rm PATH
node_file() { "$cluster" node-exec "$state" sh -c 'mkdir -p "$(dirname "$1")" && cat >"$1" && chmod 0644 "$1"' sh "$1"; }
node_rm() { "$cluster" node-exec "$state" rm -f "$1"; }
node_has() { "$cluster" node-exec "$state" test -r "$1"; }
node_topo=/opt/lgtest/topo.xml
node_file "$node_topo" <"$topo_host" || fatal "writing $node_topo on the node"
node_has "$node_topo" && [ ! -e "$node_topo" ] || fatal "$node_topo must exist for the node and not for this machine"
standin_line="required $lib/spank_pyxis_standin.so data=$state/enroot-data share=$state"
cd "$work" || fatal "cd $work"

# The slurmd log (slurmstepd and the task_init child write to it too).
logmark=0
mark() { logmark=$(wc -l <"$LG_SLURMD_LOG"); }
newlog() { tail -n +"$((logmark + 1))" "$LG_SLURMD_LOG"; }
# decision_logged REGEX: a task_init decision line written since the last mark
# A drained node would make every later srun wait for its timeout: stop at once.
node_ok() {
  local st
  st=$(run sinfo -h -n "$LG_SLURM_NODE" -o %t)
  case "$st" in idle|mix|alloc|comp*) return 0 ;; esac
  echo "--- slurmd.log tail ---"; tail -n 25 "$LG_SLURMD_LOG"
  fatal "node is '$st' before scenario '$1' (a failed job_prolog drains it)"
}
# task_phases NAME: how many of the last step's tasks went through phase NAME (timing=1)
task_phases() { newlog | grep 'timing task_init task ' | grep -c "$1="; }
decision_logged() {
  newlog | grep -E "launchguard: decision hook=task_init job=[0-9]+ step=[0-9a-z]+ node=$LG_SLURM_NODE profile=[^ ]+ $1" >/dev/null
}

# ---------------------------------------------------------------- 1. clean job
node_ok "1. clean job"
mark
if as_user srun -N1 -n2 --cpu-bind=map_cpu:0,1 --export=ALL,SLURM_STEP_GPUS=1 bash -c 'echo "ran $SLURM_PROCID"' >out 2>err \
   && [ "$(sort out | tr '\n' ' ')" = "ran 0 ran 1 " ] && ! grep -qE '^launchguard: (BLOCK|PATCH)' err; then
  pass "clean job (srun -n2 as nobody, GPU 1 with CPUs 0,1 on its NUMA node): runs, nothing blocked or patched"
else
  fail "clean job via srun"; show out err
fi
if decision_logged "mode=enforce decision=allow blocked=- patched=- warned=[^ ]+ env=- unknown=[0-9]+"; then
  pass "decision line for the clean job in the slurmd log"
else
  fail "no task_init decision line in $LG_SLURMD_LOG (slurm_info at SlurmdDebug=info)"; newlog | grep -i launchguard | show
fi
# shellcheck disable=SC2016
printf '#!/bin/bash\necho "batch ran job=$SLURM_JOB_ID"\n' >job.sh
chmod 0755 job.sh
if T=120 as_user sbatch --wait -o clean.out job.sh >out 2>err && grep -q '^batch ran job=[0-9]' clean.out \
   && ! grep -qE 'launchguard: (BLOCK|PATCH)' clean.out; then
  pass "clean job (sbatch --wait as nobody): batch step runs, nothing blocked or patched"
else
  fail "clean job via sbatch"; show out err; [ -f clean.out ] && show clean.out
fi

# --------------------------------------------- 2. NCCL_TOPO_FILE names no file
node_ok "2. NCCL_TOPO_FILE names no file"
missing_env="--export=ALL,NCCL_TOPO_FILE=/nonexistent/topo.xml"
mark
as_user srun -N1 -n2 "$missing_env" bash -c 'echo task ran' >out 2>err; rc=$?
if [ "$rc" -eq 1 ] && ! grep -q 'task ran' out \
   && grep -q '^launchguard: BLOCK topo.file-missing: .*/nonexistent/topo.xml' err \
   && grep -q 'launchguard: profile lgtest, mode enforce: launch blocked' err \
   && [ "$(grep -c '^launchguard: BLOCK topo.file-missing' err)" -eq 1 ]; then
  pass "NCCL_TOPO_FILE=/nonexistent/topo.xml (srun): blocked, exit 1, rule id on stderr once per node"
else
  fail "topo.file-missing via srun (rc=$rc, want 1)"; show out err
fi
cp err topo-missing.srun.err
if decision_logged "mode=enforce decision=block blocked=topo.file-missing "; then
  pass "decision line: decision=block blocked=topo.file-missing"
else
  fail "decision line for the blocked job"; newlog | grep -i launchguard | show
fi
T=120 as_user sbatch --wait -o missing.out "$missing_env" job.sh >out 2>err; rc=$?
if [ "$rc" -ne 0 ] && [ -f missing.out ] && grep -q 'launchguard: BLOCK topo.file-missing' missing.out \
   && ! grep -q '^batch ran' missing.out; then
  pass "NCCL_TOPO_FILE=/nonexistent/topo.xml (sbatch --wait): batch step blocked (sbatch rc=$rc), rule id in the output file"
else
  fail "topo.file-missing via sbatch (rc=$rc)"; show out err; [ -f missing.out ] && show missing.out
fi
if [ "$(run sinfo -h -n "$LG_SLURM_NODE" -o %t)" = idle ]; then
  pass "node still idle (not drained) after blocked jobs"
else
  fail "node state after blocked jobs: $(run sinfo -h -n "$LG_SLURM_NODE" -o %t)"
fi

# A value from the job reaches the user and the slurmd log escaped: an ESC
# in a path is written as \x1B, never as the byte.
esc=$(printf '\033')
mark
as_user srun -N1 -n1 --export="ALL,NCCL_TOPO_FILE=/nonexistent/${esc}[31mred.xml" true >out 2>err; rc=$?
if [ "$rc" -eq 1 ] && grep -qF 'topo.file-missing: ' err && grep -qF '\x1B[31mred.xml' err \
   && ! grep -q "$esc" err && ! newlog | grep -q "$esc"; then
  pass "a job's value with an ESC byte: escaped on the user's stderr and in the slurmd log"
else
  fail "escaping of a job's value (rc=$rc)"; show out err
fi

# ----------------------------------------- 3. NCCL_IB_HCA selects no active port
node_ok "3. NCCL_IB_HCA selects no active port"
as_user srun -N1 -n1 --export=ALL,NCCL_IB_HCA=mlx5_9 true >out 2>err; rc=$?
if [ "$rc" -eq 1 ] && grep -q '^launchguard: BLOCK net.hca-matches-nothing: ' err; then
  pass "NCCL_IB_HCA=mlx5_9 (node has mlx5_0): blocked by net.hca-matches-nothing"
else
  fail "net.hca-matches-nothing (rc=$rc)"; show out err
fi
cp err hca.srun.err

# -------------------------------------------------------------- 4. patch mode
node_ok "4. patch mode"
big_job="--export=ALL,SLURM_GPUS=512"
stack "$(lg_line mode=patch)"
mark
if as_user srun -N1 -n2 "$big_job" printenv NCCL_IB_QPS_PER_CONNECTION >out 2>err \
   && [ "$(sort -u out)" = 4 ] && [ "$(wc -l <out)" -eq 2 ] \
   && grep -q '^launchguard: PATCH net.qps-low: ' err; then
  pass "patch mode: SLURM_GPUS=512 job gets NCCL_IB_QPS_PER_CONNECTION=4 in every task's environment"
else
  fail "patch mode delivers NCCL_IB_QPS_PER_CONNECTION"; show out err
fi
cp err qps.srun.err
if decision_logged "mode=patch decision=patch blocked=- patched=net.qps-low warned=[^ ]+ env=NCCL_IB_QPS_PER_CONNECTION "; then
  pass "decision line: decision=patch patched=net.qps-low env=NCCL_IB_QPS_PER_CONNECTION"
else
  fail "decision line for the patched job"; newlog | grep -i launchguard | show
fi
# A step's tasks share the first verdict when they look at the same things,
# and each still gets the patch. timing=1 names the phases: a task that took
# the shared verdict built only what the per-task rules read (per_task_context).
stack "$(lg_line mode=patch timing=1)"
mark
if as_user srun -N1 -n4 --overcommit --cpu-bind=none "$big_job" printenv NCCL_IB_QPS_PER_CONNECTION >out 2>err \
   && [ "$(sort -u out)" = 4 ] && [ "$(wc -l <out)" -eq 4 ] \
   && [ "$(grep -c '^launchguard: PATCH net.qps-low: ' err)" -eq 1 ] \
   && [ "$(task_phases build_context)" -eq 1 ] \
   && [ "$(task_phases shared_verdict)" -eq 4 ] \
   && [ "$(newlog | grep -c 'decision hook=task_init ')" -eq 1 ]; then
  pass "4 tasks with one CPU mask: one check, three shared verdicts, the patch in every task, the findings once"
else
  fail "shared verdict"; show out err; newlog | grep -i launchguard | show
fi
mark
if as_user srun -N1 -n2 --cpu-bind=map_cpu:0,1 "$big_job" printenv NCCL_IB_QPS_PER_CONNECTION >out 2>err \
   && [ "$(sort -u out)" = 4 ] && [ "$(wc -l <out)" -eq 2 ] \
   && [ "$(task_phases build_context)" -eq 1 ] \
   && [ "$(task_phases per_task_context)" -eq 1 ]; then
  pass "2 tasks on different CPUs: one check, one shared verdict (the CPU mask is judged per task), the patch in both"
else
  fail "tasks with different CPU masks"; show out err; newlog | grep -i launchguard | show
fi
stack "$(lg_line mode=patch)"
if as_user srun -N1 -n1 --export=ALL,SLURM_GPUS=512,NCCL_IB_QPS_PER_CONNECTION=8 printenv NCCL_IB_QPS_PER_CONNECTION >out 2>err \
   && [ "$(cat out)" = 8 ] && ! grep -q 'net.qps-low' err && ! grep -q '^launchguard: PATCH' err; then
  pass "patch mode: a user's NCCL_IB_QPS_PER_CONNECTION=8 (above the minimum) is left alone"
else
  fail "patch mode with a sufficient user value"; show out err
fi
if as_user srun -N1 -n1 "$missing_env" bash -c 'echo task ran' >out 2>err && grep -q 'task ran' out \
   && grep -q '^launchguard: WARN  topo.file-missing' err; then
  pass "patch mode: a blocking rule only warns and the job runs"
else
  fail "patch mode with topo.file-missing"; show out err
fi

# --------------------------------------------------------------- 5. warn mode
node_ok "5. warn mode"
stack "$(lg_line mode=warn)"
if as_user srun -N1 -n1 --export=ALL,NCCL_TOPO_FILE=/nonexistent/topo.xml,SLURM_GPUS=512 \
     bash -c 'echo "task ran qps=${NCCL_IB_QPS_PER_CONNECTION:-unset}"' >out 2>err \
   && [ "$(cat out)" = "task ran qps=unset" ] \
   && grep -q '^launchguard: WARN  topo.file-missing' err && grep -q '^launchguard: WARN  net.qps-low' err \
   && grep -q 'mode warn: launch continues' err; then
  pass "warn mode: findings reported, job runs, environment unchanged"
else
  fail "warn mode"; show out err
fi
cp err warn.srun.err

# ---------------------------------------------------------- 6. --launchguard=
node_ok "6. --launchguard="
stack "$(lg_line mode=enforce)"   # default user policy: enforce, warn
if as_user srun -N1 -n1 --launchguard=warn "$missing_env" bash -c 'echo task ran' >out 2>err \
   && grep -q 'task ran' out && grep -q '^launchguard: WARN  topo.file-missing' err; then
  pass "--launchguard=warn (srun) where allowed: reports and runs"
else
  fail "srun --launchguard=warn allowed"; show out err
fi
if T=120 as_user sbatch --wait --launchguard=warn -o optwarn.out "$missing_env" job.sh >out 2>err \
   && grep -q '^batch ran' optwarn.out && grep -q 'launchguard: WARN  topo.file-missing' optwarn.out; then
  pass "--launchguard=warn (sbatch) where allowed: the batch step reports and runs"
else
  fail "sbatch --launchguard=warn allowed"; show out err; [ -f optwarn.out ] && show optwarn.out
fi
as_user srun -N1 -n1 --launchguard=off true >out 2>err; rc=$?
if [ "$rc" -ne 0 ] && grep -q 'launchguard: --launchguard=off is not allowed on this cluster (allowed: enforce, warn)' err; then
  pass "--launchguard=off refused under the default policy (srun rc=$rc)"
else
  fail "--launchguard=off not refused (rc=$rc)"; show out err
fi
stack "$(lg_line mode=enforce user-modes=enforce)"
as_user srun -N1 -n1 --launchguard=warn "$missing_env" bash -c 'echo task ran' >out 2>err; rc=$?
if [ "$rc" -ne 0 ] && ! grep -q 'task ran' out \
   && grep -q 'launchguard: --launchguard=warn is not allowed on this cluster (allowed: enforce)' err; then
  pass "--launchguard=warn refused with user-modes=enforce (srun rc=$rc)"
else
  fail "srun --launchguard=warn not refused (rc=$rc)"; show out err
fi
cp err optrefused.srun.err
T=120 as_user sbatch --wait --launchguard=warn -o optrefused.out job.sh >out 2>err; rc=$?
if [ "$rc" -ne 0 ] && grep -q 'launchguard: --launchguard=warn is not allowed on this cluster' err; then
  pass "--launchguard=warn refused with user-modes=enforce (sbatch rc=$rc)"
else
  fail "sbatch --launchguard=warn not refused (rc=$rc)"; show out err
fi
if as_user srun -N1 -n1 --launchguard=bogus true >out 2>err; then
  fail "--launchguard=bogus accepted"; show out err
elif grep -q 'expected enforce, patch, warn or off' err; then
  pass "--launchguard=bogus refused with the list of modes"
else
  fail "--launchguard=bogus message"; show out err
fi

# ------------------------------------------------------ 6b. a site in mode=off
node_ok "6b. a site in mode=off"
# The task's parent is the step's slurmstepd; root may read its maps.
core_maps='echo "core mapped: $(grep -c spank_launchguard_core /proc/$PPID/maps)"'
stack "$(lg_line mode=enforce)"
if run srun -N1 -n1 bash -c "$core_maps" >out 2>err && grep -q '^core mapped: [1-9]' out; then
  pass "mode=enforce: slurmstepd has the core mapped (the check below can see it)"
else
  fail "mode=enforce: no core in slurmstepd's maps"; show out err
fi
stack "$(lg_line mode=off)"
if run srun -N1 -n1 "$missing_env" bash -c "$core_maps" >out 2>err \
   && grep -qx 'core mapped: 0' out && ! grep -q '^launchguard: ' err; then
  pass "mode=off, no --launchguard: the job runs unchecked and slurmstepd never loads the core"
else
  fail "mode=off: the core was loaded or a check ran"; show out err
fi
as_user srun -N1 -n1 --launchguard=enforce "$missing_env" bash -c 'echo task ran' >out 2>err; rc=$?
if [ "$rc" -eq 1 ] && ! grep -q 'task ran' out && grep -q '^launchguard: BLOCK topo.file-missing' err; then
  pass "mode=off, --launchguard=enforce: the job's own checks run and block (rc=$rc)"
else
  fail "mode=off with --launchguard=enforce (rc=$rc, want 1)"; show out err
fi

# ------------------------------------------ 7. CPU mask off the GPU's NUMA node
node_ok "7. CPU mask off the GPU's NUMA node"
stack "$(lg_line mode=enforce)"
as_user srun -N1 -n1 -c2 --cpu-bind=map_cpu:0 --export=ALL,SLURM_STEP_GPUS=0 bash -c 'echo task ran' >out 2>err; rc=$?
if [ "$rc" -eq 1 ] && ! grep -q 'task ran' out \
   && grep -q '^launchguard: BLOCK cpu.affinity-off-gpu: CPU mask 0 shares no CPU with GPU 0 (0000:84:00.0) on NUMA node 1' err; then
  pass "GPU 0 (NUMA node 1) with --cpu-bind=map_cpu:0 (NUMA node 0): blocked by cpu.affinity-off-gpu"
else
  fail "cpu.affinity-off-gpu (rc=$rc)"; show out err
fi
cp err cpu.srun.err
if as_user srun -N1 -n1 -c2 --cpu-bind=map_cpu:1 --export=ALL,SLURM_STEP_GPUS=1 grep Cpus_allowed_list /proc/self/status >out 2>err \
   && grep -qP '^Cpus_allowed_list:\t1$' out && ! grep -qE 'cpu\.affinity|^launchguard: BLOCK' err; then
  pass "GPU 1 (NUMA node 0) with --cpu-bind=map_cpu:1 (NUMA node 0): runs"
else
  fail "cpu affinity on the GPU's node"; show out err
fi

# ------------------------------------------------------- 8. container view
node_ok "8. container view"
# The file exists on the node; the pyxis stand-in listed before launchguard
# moves the task into a container root without /opt, as pyxis does with an
# image that lacks the file.
topo_env="--export=ALL,NCCL_TOPO_FILE=$node_topo,SLURM_STEP_GPUS=1"
chk_task='if [ -r "$NCCL_TOPO_FILE" ]; then echo "task sees the file"; else echo "task does not see the file"; fi'
stack "$standin_line" "$(lg_line mode=enforce)"
if as_user srun -N1 -n1 -c2 --cpu-bind=map_cpu:0 "$topo_env" bash -c "$chk_task" >out 2>err \
   && [ "$(cat out)" = "task sees the file" ] && ! grep -qE 'topo\.|conf\.|^launchguard: BLOCK' err; then
  pass "container view: NCCL_TOPO_FILE present on the node, no container: runs"
else
  fail "container view baseline"; show out err
fi
as_user srun -N1 -n1 -c2 --cpu-bind=map_cpu:0 --container-image=img.sqsh "$topo_env" bash -c "$chk_task" >out 2>err; rc=$?
if [ "$rc" -eq 1 ] && ! grep -q 'task ' out && grep -q "pyxis-standin: task 0: in container img.sqsh" err \
   && grep -q "^launchguard: BLOCK topo.file-missing: NCCL_TOPO_FILE=$node_topo .* in the container" err; then
  pass "container view: in a container without the file: blocked by topo.file-missing, said 'in the container'"
else
  fail "container view blocked (rc=$rc)"; show out err
fi
cp err container.srun.err
if as_user srun -N1 -n1 -c2 --cpu-bind=map_cpu:0 --launchguard=warn --container-image=img.sqsh "$topo_env" bash -c "$chk_task" >out 2>err \
   && [ "$(cat out)" = "task does not see the file" ] && grep -q '^launchguard: WARN  topo.file-missing' err \
   && node_has "$node_topo"; then
  pass "container view: the task itself does not see the file (warn mode), the node still does"
else
  fail "container view: task's own view"; show out err
fi

# ------------------------------- 8b. the host side under pyxis (field case 4)
node_ok "8b. pyxis host side"
# The documented quick start: default profile, enforce, the live node; the
# node's /etc/nccl.conf names its topology file and no job variable does.
lg_live() { echo "required $lg topology-cache=$state/cache/topology.json $*"; }
printf 'NCCL_TOPO_FILE=%s\n' "$node_topo" | node_file /etc/nccl.conf || fatal "writing /etc/nccl.conf on the node"
stack "$standin_line" "$(lg_live mode=enforce)"
mark
as_user srun -N1 -n1 --container-image=img.sqsh bash -c 'echo task ran' >out 2>err; rc=$?
if [ "$rc" -eq 1 ] && ! grep -q 'task ran' out \
   && grep -q "^launchguard: BLOCK topo.not-propagated: host topology file $node_topo (host /etc/nccl.conf:1) does not reach the task in the container: " err \
   && grep -q -- "--container-mounts=$node_topo:$node_topo:ro with export NCCL_TOPO_FILE=$node_topo and pass --container-env=NCCL_TOPO_FILE, or ask the site to install the launchguard enroot hook" err \
   && grep -q '^launchguard: BLOCK conf.host-not-visible: ' err \
   && grep -q 'launchguard: profile default, mode enforce: launch blocked' err; then
  pass "pyxis, host nccl.conf names a topology file the container lacks: blocked by topo.not-propagated under default, fix in pyxis options"
else
  fail "pyxis host side: topo.not-propagated (rc=$rc)"; show out err
fi
cp err pyxis-hidden.srun.err
if decision_logged "mode=enforce decision=block blocked=[^ ]*topo.not-propagated"; then
  pass "decision line: blocked=...topo.not-propagated"
else
  fail "decision line for the pyxis block"; newlog | grep -i launchguard | show
fi
T=120 as_user sbatch --wait --container-image=img.sqsh -o pyxis.out job.sh >out 2>err; rc=$?
if [ "$rc" -ne 0 ] && [ -f pyxis.out ] && ! grep -q '^batch ran' pyxis.out \
   && grep -q 'launchguard: BLOCK topo.not-propagated: .* does not reach the task in the container' pyxis.out \
   && grep -q -- "--container-mounts=$node_topo:$node_topo:ro" pyxis.out; then
  pass "pyxis batch step (sbatch --wait --container-image): blocked by topo.not-propagated, fix in the output file"
else
  fail "pyxis batch step (rc=$rc)"; show out err; [ -f pyxis.out ] && show pyxis.out
fi
mounts="--container-mounts=$node_topo:$node_topo:ro"
if as_user srun -N1 -n1 --container-image=img.sqsh "$mounts" --export=ALL,NCCL_TOPO_FILE=$node_topo \
     bash -c 'test -r "$NCCL_TOPO_FILE" && echo task ran' >out 2>err \
   && [ "$(cat out)" = "task ran" ] && ! grep -qE 'topo\.not-propagated|conf\.host-not-visible|^launchguard: BLOCK' err; then
  pass "pyxis, the file mounted and NCCL_TOPO_FILE exported (the fix): runs"
else
  fail "pyxis with the file visible in the container"; show out err
fi
as_user srun -N1 -n1 --container-image=img.sqsh "$mounts" bash -c 'echo task ran' >out 2>err; rc=$?
if [ "$rc" -eq 1 ] && grep -q "^launchguard: BLOCK topo.not-propagated: .*the task has NCCL_TOPO_FILE unset.* -> fix: export NCCL_TOPO_FILE=$node_topo and pass --container-env=NCCL_TOPO_FILE$" err; then
  pass "pyxis, the file mounted but the variable only in the host's nccl.conf: blocked in enforce, fix is the export alone"
else
  fail "pyxis, mounted without the variable, enforce (rc=$rc)"; show out err
fi
stack "$standin_line" "$(lg_live mode=patch)"
as_user srun -N1 -n1 --container-image=img.sqsh "$mounts" printenv NCCL_TOPO_FILE >out 2>err; rc=$?
if [ "$rc" -eq 0 ] && [ "$(cat out)" = "$node_topo" ] && grep -q '^launchguard: PATCH topo.not-propagated' err; then
  pass "pyxis, patch mode, the file visible in the container: NCCL_TOPO_FILE set for the task"
else
  fail "pyxis patch mode with the file visible (rc=$rc)"; show out err
fi
as_user srun -N1 -n1 --container-image=img.sqsh bash -c 'echo task ran' >out 2>err; rc=$?
if [ "$rc" -eq 1 ] && ! grep -q 'task ran' out && grep -q '^launchguard: BLOCK topo.not-propagated' err \
   && grep -q -- "--container-mounts=$node_topo:$node_topo:ro" err; then
  pass "pyxis, patch mode, the file not in the container: blocked even in patch mode (a mount cannot be patched)"
else
  fail "pyxis patch mode without the file (rc=$rc)"; show out err
fi
cp err pyxis-patch.srun.err
stack "$standin_line" "$(lg_live mode=enforce)"
# quiet_on_the_host PREFIX: a task on the host with the node's /etc/nccl.conf
# sees what the host sees, so no propagation rule fires (and none twice).
quiet_on_the_host() {
  if as_user srun -N1 -n1 bash -c 'test -r "/etc/nccl.conf" && echo task ran' >out 2>err && [ "$(cat out)" = "task ran" ] \
     && ! grep -qE 'topo\.|conf\.host-not-visible|^launchguard: BLOCK' err; then
    pass "${1}no container: the host's view is the task's view, nothing fires (and nothing twice)"
  else
    fail "${1}no container with a host nccl.conf"; show out err
  fi
}
quiet_on_the_host ""
node_rm /etc/nccl.conf
if as_user srun -N1 -n1 --container-image=img.sqsh bash -c 'echo task ran' >out 2>err && [ "$(cat out)" = "task ran" ] \
   && ! grep -qE 'topo\.|conf\.host-not-visible|^launchguard: BLOCK' err; then
  pass "pyxis, no host topology file: runs"
else
  fail "pyxis without a host topology file"; show out err
fi

# --------------------------------------------------- 8c. hostile topology files
node_ok "8c. hostile topology files"
# What a user can point NCCL_TOPO_FILE at: 30,000 XML comments (the parser
# once recursed per comment), a FIFO (open() would block), a symlink to
# /dev/zero (an endless read). Each step ends with a clear answer within the
# client's bound, and slurmd stays up.
hostile="$state/hostile"
mkdir -p "$hostile" && chmod 0755 "$hostile"
/usr/bin/python3 -c 'import sys; sys.stdout.write("<!---->" * 30000)' >"$hostile/comments.xml"
mkfifo "$hostile/fifo.xml"
ln -sf /dev/zero "$hostile/zero.xml"
chmod 0644 "$hostile/comments.xml"; chmod 0666 "$hostile/fifo.xml"
stack "$(lg_line mode=enforce)"
T=60 as_user srun -N1 -n1 --export=ALL,NCCL_TOPO_FILE="$hostile/comments.xml" bash -c 'echo task ran' >out 2>err; rc=$?
if [ "$rc" -eq 1 ] && grep -qE '^launchguard: BLOCK topo\.' err && ! grep -qiE 'segmentation|core dumped|abort' err; then
  pass "30,000 XML comments as NCCL_TOPO_FILE: blocked with a topo.* message, no crash ($(grep -oE 'BLOCK topo\.[a-z-]+' err | head -1))"
else
  fail "30,000-comment topology file (rc=$rc)"; show out err
fi
for f in fifo.xml zero.xml; do
  t0=$SECONDS
  T=60 as_user srun -N1 -n1 --export=ALL,NCCL_TOPO_FILE="$hostile/$f" bash -c 'echo task ran' >out 2>err; rc=$?
  if [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] && [ $((SECONDS - t0)) -lt 30 ] \
     && ! grep -qiE 'segmentation|core dumped|abort' err && "$cluster" status "$state" >/dev/null; then
    pass "NCCL_TOPO_FILE=$f: the step ends in $((SECONDS - t0)) s (rc=$rc, no hang), slurmd up"
  else
    fail "NCCL_TOPO_FILE=$f (rc=$rc, $((SECONDS - t0)) s)"; show out err
  fi
done
node_ok "after the hostile topology files"

# ------------------------------------------------- 9. malformed plugstack line
node_ok "9. malformed plugstack line"
stack "required $lg profiel=x"
as_user srun -N1 -n1 true >out 2>err; rc=$?
if [ "$rc" -ne 0 ] && grep -q "launchguard: plugstack.conf: profiel=x: unknown key 'profiel'" err \
   && ! grep -qiE 'segmentation|core dumped|abort' err; then
  pass "malformed plugstack argument (srun): fails (rc=$rc) with a clear message"
else
  fail "malformed plugstack via srun (rc=$rc)"; show out err
fi
cp err malformed.srun.err
T=60 as_user sbatch -o malformed.out job.sh >out 2>err; rc=$?
if [ "$rc" -ne 0 ] && grep -q "launchguard: plugstack.conf: profiel=x: unknown key 'profiel'" err; then
  pass "malformed plugstack argument (sbatch): refused at submission (rc=$rc)"
else
  fail "malformed plugstack via sbatch (rc=$rc)"; show out err
fi
stack "required $lg mode=sometimes"
as_user srun -N1 -n1 true >out 2>err; rc=$?
if [ "$rc" -ne 0 ] && grep -q 'launchguard: plugstack.conf: mode=sometimes: mode must be enforce, patch, warn or off' err; then
  pass "bad plugstack value (mode=sometimes): clear message"
else
  fail "bad plugstack value (rc=$rc)"; show out err
fi
# slurmd itself loads the stack at start: it must come up and log the error.
stack "required $lg profiel=x"
mark
if "$cluster" restart-slurmd "$state" >/dev/null 2>restart.err \
   && newlog | grep -q "launchguard: plugstack.conf: profiel=x: unknown key"; then
  pass "slurmd restarted with the malformed line: stays up, logs the error"
else
  fail "slurmd with a malformed plugstack line"; show restart.err; newlog | tail -n 20 | show
fi
stack "$(lg_line mode=enforce)"
if "$cluster" status "$state" >/dev/null && as_user srun -N1 -n1 true >out 2>err; then
  pass "cluster healthy and jobs run after the plugstack is fixed"
else
  fail "cluster after malformed plugstack"; show out err
fi

# --------------------------------- 9b. the checks cannot be loaded
# srun and sbatch load only spank_launchguard.so; slurmstepd loads the checks,
# spank_launchguard_core.so, from the plugin's directory. Without it a submit
# host still takes --launchguard, and a task follows on-error=.
node_ok "9b. spank_launchguard_core.so missing"
mv "$lib/spank_launchguard_core.so" "$lib/spank_launchguard_core.so.away"
core_msg="launchguard: cannot load the task checks: $lib/spank_launchguard_core.so"
stack "$(lg_line mode=enforce)"
mark
as_user srun -N1 -n1 true >out 2>err; rc=$?
if [ "$rc" -eq 0 ] && grep -qF "$core_msg" err && newlog | grep -qF "$core_msg"; then
  pass "core missing, on-error=allow: the task runs (rc=0), the user and the slurmd log are told which file"
else
  fail "core missing, on-error=allow (rc=$rc)"; show out err
fi
as_user srun -N1 -n1 --launchguard=bogus true >out 2>err; rc=$?
if [ "$rc" -ne 0 ] && grep -q "Invalid --launchguard argument" err; then
  pass "core missing: srun still judges --launchguard at submission (rc=$rc)"
else
  fail "core missing: --launchguard=bogus (rc=$rc)"; show out err
fi
stack "$(lg_line mode=enforce on-error=block)"
as_user srun -N1 -n1 true >out 2>err; rc=$?
if [ "$rc" -ne 0 ] && grep -qF "$core_msg" err; then
  pass "core missing, on-error=block: the task fails (rc=$rc) with the same message"
else
  fail "core missing, on-error=block (rc=$rc)"; show out err
fi
mv "$lib/spank_launchguard_core.so.away" "$lib/spank_launchguard_core.so"
stack "$(lg_line mode=enforce)"

# --------------------------------- 9c. a YAML profile
# The same checks from the build of the core that reads YAML
# (spank_launchguard_core_yaml.so): a site that names its YAML file directly.
node_ok "9c. profile=FILE.yaml"
yaml_line() { lg_line "$@" | sed "s|profile=$fx/lgtest.json|profile=$fx/lgtest.yaml|"; }
stack "$(yaml_line mode=enforce)"
mark
as_user srun -N1 -n2 "$missing_env" bash -c 'echo task ran' >out 2>err; rc=$?
if [ "$rc" -eq 1 ] && ! grep -q 'task ran' out && grep -q '^launchguard: BLOCK topo.file-missing: ' err \
   && decision_logged "mode=enforce decision=block blocked=topo.file-missing "; then
  pass "YAML profile: NCCL_TOPO_FILE=/nonexistent/topo.xml blocked as with the compiled one (rc=1, decision line)"
else
  fail "YAML profile: topo.file-missing (rc=$rc)"; show out err
fi
mark
as_user srun -N1 -n2 true >out 2>err; rc=$?
if [ "$rc" -eq 0 ] && decision_logged "mode=enforce decision=allow blocked=- "; then
  pass "YAML profile: a clean job runs (rc=0, decision=allow)"
else
  fail "YAML profile: clean job (rc=$rc)"; show out err; newlog | grep -i launchguard | show
fi
mv "$lib/spank_launchguard_core_yaml.so" "$lib/spank_launchguard_core_yaml.so.away"
yaml_msg="launchguard: cannot load the task checks: $lib/spank_launchguard_core_yaml.so"
as_user srun -N1 -n1 true >out 2>err; rc=$?
if [ "$rc" -eq 0 ] && grep -qF "$yaml_msg" err; then
  pass "YAML profile without spank_launchguard_core_yaml.so: on-error=allow runs the task and names that file"
else
  fail "YAML profile, YAML core missing (rc=$rc)"; show out err
fi
mv "$lib/spank_launchguard_core_yaml.so.away" "$lib/spank_launchguard_core_yaml.so"
stack "$(lg_line mode=enforce)"

# --------------------------------- 10. the topology cache and the prolog plugin
node_ok "10. slurmd start writes the topology cache"
# As operators run it: no fixtures, live node, default profile.  slurmd loads
# the plugin at start (SLURMD context, root) and writes the node's topology
# cache once; every task_init reads it instead of discovering the node.
stack "required $lg mode=enforce topology-cache=$state/cache/topology.json"
rm -rf "$state/cache"
"$cluster" restart-slurmd "$state" >/dev/null 2>restart.err || { show restart.err; fail "restart-slurmd"; }
mark
if [ -s "$state/cache/topology.json" ] && [ "$(stat -c %a "$state/cache/topology.json")" = 644 ] \
   && as_user srun -N1 -n2 true >out 2>err \
   && decision_logged "mode=enforce decision=(allow|patch) blocked=- "; then
  pass "slurmd start writes the topology cache (0644); task_init runs from it"
else
  fail "topology cache at slurmd start"; show out err restart.err; newlog | grep -i launchguard | show
fi

node_ok "10b. the prolog plugin checks the node"
# spank_launchguard_prolog.so adds node checks in job_prolog (root, once per
# node per job); slurmd decides at start whether to run job prologs.
stack "required $lg mode=enforce topology-cache=$state/cache/topology.json" \
      "required $lib/spank_launchguard_prolog.so mode=enforce topology-cache=$state/cache/topology.json"
rm -rf "$state/cache"
"$cluster" restart-slurmd "$state" >/dev/null 2>restart.err || { show restart.err; fail "restart-slurmd"; }
rm -rf "$state/cache"  # the prolog rewrites a missing cache
mark
if as_user srun -N1 -n2 true >out 2>err && [ -s "$state/cache/topology.json" ] \
   && newlog | grep -qE "launchguard: decision hook=job_prolog job=[0-9]+ step=prolog node=$LG_SLURM_NODE profile=default mode=enforce decision=(allow|patch) " \
   && decision_logged "mode=enforce decision=(allow|patch) blocked=- "; then
  pass "job_prolog (prolog plugin) logs its node decision and rewrites a missing cache; task_init runs"
else
  fail "prolog plugin"; show out err; newlog | grep -i launchguard | show
fi
newlog | grep 'launchguard: decision' >decisions.log || true

# ----------------------------------------------------------- 10c. the power cache
node_ok "10c. the power cache"
# A step reads every CPU's cpufreq and cpuidle only when node-facts.json, beside the
# topology cache, is missing or older than node-facts-max-age (60 s); the
# step's first task saves what its step read, as root.  A copy of the fixture
# tree, so its governors can change.
psys="$fx/sysfs-power"
rm -rf "$psys" && cp -R "$fx/sysfs/kvm-guest-2n" "$psys" && chmod -R u+rwX,go+rX,go-w "$psys"
power_line() {
  echo "required $lg profile=$fx/lgtest.json topology-cache=$state/cache/topology.json hwloc-xml=$fx/node.xml sysfs-root=$psys timing=1 $*"
}
set_governor() { for f in "$psys"/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor; do echo "$1" >"$f"; done; }
# read_power / cached_power: what the last step's loading thread did
read_power() { newlog | grep 'timing prepare_step' | grep -q ' node.power='; }
cached_power() { newlog | grep 'timing prepare_step' | grep -q 'node.cache=' && ! read_power; }
stack "$(power_line mode=enforce)"
rm -f "$state/cache/node-facts.json"
mark
if as_user srun -N1 -n2 true >out 2>err && read_power && [ -s "$state/cache/node-facts.json" ] \
   && [ "$(stat -c '%a %U' "$state/cache/node-facts.json")" = "644 root" ] && ! grep -q 'power.governor' err; then
  pass "a step without node-facts.json reads the CPUs' power settings, and its first task saves them (0644, root)"
else
  fail "power cache written by the first step"; show out err; newlog | grep -i launchguard | show
fi
set_governor powersave
mark
if as_user srun -N1 -n2 true >out 2>err && cached_power && ! grep -q 'power.governor' err; then
  pass "the next step takes the saved settings: a governor changed since is not seen within node-facts-max-age"
else
  fail "power cache read by the next step"; show out err; newlog | grep -i launchguard | show
fi
touch -d '2 minutes ago' "$state/cache/node-facts.json"
mark
if as_user srun -N1 -n2 true >out 2>err && read_power && grep -q '^launchguard: WARN  power.governor' err \
   && [ "$(( $(date +%s) - $(stat -c %Y "$state/cache/node-facts.json") ))" -lt 60 ]; then
  pass "older than node-facts-max-age: the step reads again (the new governor warns) and the cache is saved anew"
else
  fail "stale power cache"; show out err; newlog | grep -i launchguard | show
fi
set_governor schedutil
stack "$(power_line mode=enforce node-facts-max-age=0)"
mark
if as_user srun -N1 -n2 true >out 2>err && read_power && ! newlog | grep 'timing prepare_step' | grep -q 'node.cache=' \
   && ! grep -q 'power.governor' err; then
  pass "node-facts-max-age=0: the step reads sysfs (the governor set back is seen at once)"
else
  fail "node-facts-max-age=0"; show out err; newlog | grep -i launchguard | show
fi
# A per-task rule is judged by every task besides the step's shared verdict:
# a governor off the profile's on CPU 1 alone warns the task bound to CPU 1,
# and not the one on CPU 0, whichever of the two judged the shared part.
echo powersave >"$psys/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor"
mark
if as_user srun -N1 -n2 --cpu-bind=map_cpu:0,1 true >out 2>err \
   && [ "$(grep -c "^launchguard: WARN  power.governor: cpufreq governor is 'powersave' on CPUs 1, " err)" -eq 1 ] \
   && [ "$(grep -c 'power.governor' err)" -eq 1 ] \
   && [ "$(task_phases build_context)" -eq 1 ] \
   && [ "$(task_phases per_task_context)" -eq 1 ]; then
  pass "2 tasks on CPUs 0 and 1, one check and one shared verdict: the governor of CPU 1 warns the task on CPU 1 alone"
else
  fail "per-task rule with a shared verdict"; show out err; newlog | grep -i launchguard | show
fi
set_governor schedutil

# ------------------------------------------- 11. a read of the node that never returns
# Without a topology cache the step's loading thread runs hwloc's live
# discovery, which opens each PCI function's config file; in slurmd's mount
# namespace the first one is now a FIFO nobody writes, so open() blocks in the
# kernel, as a read of a driver stuck in firmware would (slurmstepd itself
# opens /proc/cpuinfo, so that file would stall Slurm too). user_init waits
# node-read-timeout= for the thread, then the step goes on without the
# checks, as on-error= says.
node_ok "11. a stalled read of the node"
stall_line() { echo "required $lg profile=$fx/lgtest.json topology-cache=$state/stall-cache/topology.json $*"; }
pci_config=$(readlink -f "/sys/bus/pci/devices/$(ls /sys/bus/pci/devices | head -n 1)/config")
[ -f "$pci_config" ] || fatal "this machine lists no PCI function in /sys/bus/pci/devices, which the stall needs"
mkfifo "$state/stall.fifo" || fatal "mkfifo"
"$cluster" node-exec "$state" mount --bind "$state/stall.fifo" "$pci_config" || fatal "bind-mounting a FIFO over $pci_config"
stall_msg="launchguard: the task checks were still reading the node's facts after 2 s (node-read-timeout="
stack "$(stall_line mode=enforce node-read-timeout=2)"
t0=$(date +%s)
if T=40 as_user srun -N1 -n2 bash -c 'echo task ran' >out 2>err && [ "$(grep -c 'task ran' out)" -eq 2 ] \
   && [ "$(awk -v m="$stall_msg" 'index($0, m) == 1' err | wc -l)" -eq 1 ]; then
  pass "node-read-timeout=2, on-error=allow: both tasks run without the checks after $(($(date +%s) - t0)) s; the user is told why once (and by slurmstepd's error line)"
else
  fail "stalled read with on-error=allow"; show out err
fi
stack "$(stall_line mode=enforce node-read-timeout=2 on-error=block)"
T=40 as_user srun -N1 -n1 bash -c 'echo task ran' >out 2>err; rc=$?
if [ "$rc" -ne 0 ] && ! grep -q 'task ran' out && grep -qF "$stall_msg" err; then
  pass "on-error=block: the task is refused (srun rc=$rc) with the same reason"
else
  fail "stalled read with on-error=block (rc=$rc)"; show out err
fi
"$cluster" node-exec "$state" umount -l "$pci_config" || fatal "unmounting the FIFO"
# The abandoned threads end with their slurmstepd, which ends with its step.
deadline=$((SECONDS + 20))
while pgrep -f 'slurmstepd: \[' >/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.5; done
if ! pgrep -f 'slurmstepd: \[' >/dev/null; then
  pass "no slurmstepd outlives its step after the stalls"
else
  fail "slurmstepd left after the stalled steps"; ps -eo pid,stat,wchan:24,cmd | grep '[s]lurmstepd' | show
fi
node_ok "after the stalled reads"
stack "$(stall_line mode=enforce node-read-timeout=2)"
if as_user srun -N1 -n1 "$missing_env" true >out 2>err; rc=$?; [ "$rc" -ne 0 ] && grep -q 'topo.file-missing' err; then
  pass "the read returns again: the next step is checked (topo.file-missing blocks)"
else
  fail "checks after the stall (rc=$rc)"; show out err
fi

if [ "$fails" -gt 0 ]; then
  echo "--- slurmd.log launchguard lines ---"; grep -i launchguard "$LG_SLURMD_LOG" | tail -n 30 || true
fi
echo "=== plugin: $passes passed, $fails failed ==="
[ "$fails" -eq 0 ]
