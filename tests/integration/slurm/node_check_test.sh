#!/usr/bin/env bash
# node_check_test.sh — `launchguard node-check --slurm` as Slurm's
# HealthCheckProgram on a real single-node cluster (cluster.sh).
# Usage: node_check_test.sh LAUNCHGUARD_CLI      (root; ctest -L slurm, test slurm.node_check)
#
# slurm.conf gets HealthCheckProgram=<state>/lib/launchguard-node-check (a link
# to the built binary: slurmd passes no arguments, the name means
# `node-check --slurm`) and a short HealthCheckInterval. slurmd runs in a
# private mount namespace whose /etc is an overlay (LG_SLURMD_OVERLAY), so the
# program reads its configuration from the real default path,
# /etc/launchguard/node-check.conf, without this machine's /etc changing.
# The node is a recording: hwloc/32em64t-2n8c2t-pci-normalio.xml plus a copy of
# sysfs/kvm-guest-2n, whose GPU 0000:03:00.0 runs at x8 of x16 and NIC
# 0000:04:00.0 at 5 of 8 GT/s (hw.pcie-degraded blocks); the test "repairs"
# and "breaks" the copy by rewriting those link files.
#
# Scenarios: a degraded node is drained with a `launchguard:` reason that
# `sinfo -R` shows; once repaired it is resumed; a node an administrator
# drained stays drained, degraded or not; a probe that stalls (a FIFO bound
# over /proc/cpuinfo in slurmd's namespace, where hwloc's live discovery opens
# it and blocks) ends at the configured bound and leaves the node alone; the
# topology cache task checks read is written and reused while fresh.
# Never skips for a missing root or Slurm: a FAIL.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
src=$(cd "$here/../../.." && pwd -P)
# The node's hwloc export is a public fixture: skipped (77) without them.
shared="${LAUNCHGUARD_SHARED_FIXTURES:-}"
[ -d "$shared/hwloc" ] || { echo "SKIP: needs the public fixtures: LAUNCHGUARD_SHARED_FIXTURES not found ($shared)"; exit 77; }
cluster="$here/cluster.sh"
cli=${1:-}
fails=0
passes=0
interval=2      # HealthCheckInterval, seconds
bound=3         # node-check's timeout in the configuration, seconds

pass() { echo "PASS: $*"; passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
fatal() { echo "FAIL: $*"; echo "=== node_check: $passes passed, $((fails + 1)) failed (aborted) ==="; exit 1; }
run() { timeout -k 5 "${T:-30}" "$@"; }
show() { sed 's/^/    | /' "$@" >&2; }

[ "$(id -u)" -eq 0 ] || fatal "must run as root (uid $(id -u)); the Slurm integration tests need root"
[ -x "$cli" ] || fatal "launchguard executable '$cli' not found"

state=$(mktemp -d "${LG_SLURM_TMPDIR:-/tmp}/lgnc.XXXXXX") || fatal "mktemp failed"
chmod 0755 "$state"
stall_mounted=""
cleanup() {
  local rc=$?
  [ -n "$stall_mounted" ] && "$cluster" node-exec "$state" umount -l /proc/cpuinfo >/dev/null 2>&1
  "$cluster" stop "$state" >/dev/null 2>&1 || true
  if [ "$fails" -eq 0 ] && [ "$rc" -eq 0 ] && [ -z "${LG_SLURM_KEEP:-}" ]; then
    rm -rf "$state"
  else
    echo "node_check: state dir kept for inspection: $state (logs in $state/log)"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

lib="$state/lib"; fx="$state/fx"
mkdir -p "$lib" "$fx"
install -m 0755 "$cli" "$lib/launchguard"
ln -s launchguard "$lib/launchguard-node-check"
install -m 0644 "$shared/hwloc/32em64t-2n8c2t-pci-normalio.xml" "$fx/node.xml"
cp -R "$src/tests/fixtures/sysfs/kvm-guest-2n" "$fx/sysfs"
pci="$fx/sysfs/sys/bus/pci/devices"
degrade() { echo 8 >"$pci/0000:03:00.0/current_link_width"; echo "5.0 GT/s PCIe" >"$pci/0000:04:00.0/current_link_speed"; }
repair() { echo 16 >"$pci/0000:03:00.0/current_link_width"; echo "8.0 GT/s PCIe" >"$pci/0000:04:00.0/current_link_speed"; }
degrade
: >"$state/plugstack.conf"
log="$state/log/node-check.log"
prom="$state/node-check.prom"

export LG_SLURMD_OVERLAY="/etc"
"$cluster" start "$state" "$state/plugstack.conf" || fatal "cluster start (see diagnostics above)"
# shellcheck disable=SC1091
. "$state/env"
node=$LG_SLURM_NODE
node_file() { "$cluster" node-exec "$state" sh -c 'mkdir -p "$(dirname "$1")" && cat >"$1" && chmod 0644 "$1"' sh "$1"; }
[ ! -e /etc/launchguard/node-check.conf ] || fatal "this machine has /etc/launchguard/node-check.conf; the test would not be isolated"

# write_config [KEY = VALUE]...: the node's /etc/launchguard/node-check.conf.
write_config() {
  {
    echo "# written by node_check_test.sh"
    echo "profile = default"
    echo "slurm-conf = $state/slurm.conf"
    echo "log-file = $log"
    echo "metrics-file = $prom"
    echo "timeout = $bound"
    printf '%s\n' "$@"
  } | node_file /etc/launchguard/node-check.conf || fatal "writing the node's node-check.conf"
}
write_config "hwloc-xml = $fx/node.xml" "sysfs-root = $fx/sysfs"

# The configuration is in place before slurmd first runs the program: add the
# two lines now and let both daemons re-read slurm.conf.
sed -i "/^NodeName=/i HealthCheckProgram=$lib/launchguard-node-check\nHealthCheckInterval=$interval" "$state/slurm.conf"
t_enabled=$(date +%s.%N)
"$cluster" reconfigure "$state" >/dev/null || fatal "scontrol reconfigure"

node_state() { run sinfo -h -n "$node" -o %t | head -n1; }
node_reason() { run sinfo -h -R -n "$node" -o '%60E' | head -n1 | sed 's/ *$//'; }
# wait_for STATE_REGEX SECONDS: polls sinfo; 0 when the node's state matches
wait_for() {
  local deadline=$((SECONDS + $2))
  while [ "$SECONDS" -lt "$deadline" ]; do
    [[ "$(node_state)" =~ ^($1)$ ]] && return 0
    sleep 0.2
  done
  return 1
}
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }

# ------------------------------------------------- 1. a degraded node is drained
if wait_for 'drain|drng' 30; then
  reaction=$(elapsed "$t_enabled")
  reason=$(node_reason)
  if [ "$reason" = "launchguard: hw.pcie-degraded" ]; then
    pass "degraded node drained with reason '$reason' (${reaction} s after HealthCheckProgram was enabled, interval ${interval} s)"
  else
    fail "drain reason '$reason', want 'launchguard: hw.pcie-degraded'"
  fi
  # sinfo -R's default format is "%20E %9u %19H %N": the reason column is
  # 20 characters wide, enough for the prefix and the rule's family.
  short=$(run sinfo -R -h -n "$node" | head -n1)
  if [[ "$short" == "launchguard: hw.pcie "* ]]; then
    pass "sinfo -R (default columns) shows the launchguard: prefix: '$short'"
  else
    fail "sinfo -R line: '$short'"
  fi
else
  fail "node not drained within 30 s (state '$(node_state)')"; [ -f "$log" ] && show "$log"; tail -n 20 "$LG_SLURMD_LOG" | show
fi
if grep -q 'error: block hw.pcie-degraded: ' "$log" && grep -q 'warning: warn power.governor: ' "$log" \
   && grep -q "error: node $node drained: \"launchguard: hw.pcie-degraded\"" "$log"; then
  pass "log file: the blocking finding, the warnings (logged, not drained) and the drain"
else
  fail "log file content"; show "$log"
fi
if grep -q '^launchguard_node_health{health="degraded"} 1$' "$prom" \
   && grep -q '^launchguard_node_rule_outcome{rule="hw.pcie-degraded",outcome="block"} 1$' "$prom"; then
  pass "metrics file written by the health check (degraded, hw.pcie-degraded block)"
else
  fail "metrics file $prom"; [ -f "$prom" ] && show "$prom"
fi
durations=$(grep -oE 'rules, [0-9]+ ms\)' "$log" | grep -oE '[0-9]+' | sort -n | tr '\n' ' ')
echo "INFO: node-check run times so far (ms): $durations"

# --------------------------------------------- 2. repaired: launchguard resumes it
repair
t_repaired=$(date +%s.%N)
if wait_for 'idle' 30; then
  pass "repaired node resumed by launchguard ($(elapsed "$t_repaired") s after the repair)"
else
  fail "repaired node not resumed within 30 s (state '$(node_state)', reason '$(node_reason)')"; tail -n 20 "$log" | show
fi
if grep -q "info: node $node resumed: " "$log" && [ -z "$(node_reason)" ]; then
  pass "resume logged; no reason left on the node"
else
  fail "resume log line or leftover reason '$(node_reason)'"; tail -n 10 "$log" | show
fi

# --------------------- 3. an administrator's drain is never touched, degraded or not
run scontrol update nodename="$node" state=drain reason="admin: replace fan 3" || fatal "scontrol drain"
degrade
sleep $((interval * 3 + 1))
if [[ "$(node_state)" =~ ^(drain|drng)$ ]] && [ "$(node_reason)" = "admin: replace fan 3" ]; then
  pass "admin drain kept with its own reason while the node is degraded"
else
  fail "admin drain changed: state '$(node_state)', reason '$(node_reason)'"
fi
repair
sleep $((interval * 3 + 1))
if [[ "$(node_state)" =~ ^(drain|drng)$ ]] && [ "$(node_reason)" = "admin: replace fan 3" ]; then
  pass "admin drain kept after the node passes again (launchguard resumes only its own drains)"
else
  fail "admin drain resumed or changed: state '$(node_state)', reason '$(node_reason)'"
fi
grep -q 'drained by someone else ("admin: replace fan 3")' "$log" \
  && pass "log says why it left the node alone" || { fail "no 'someone else' line"; tail -n 10 "$log" | show; }
run scontrol update nodename="$node" state=resume >/dev/null
wait_for idle 15 || fail "node did not come back after the admin resumed it"

# ------------------------------------- 4. a stalled probe ends within the bound
# hwloc's live discovery (the topology cache refresh) opens /proc/cpuinfo; in
# slurmd's mount namespace it becomes a FIFO nobody writes, so open() blocks
# in the kernel. Only node-check's child reaches it; the bound ends the run.
mkfifo "$state/stall.fifo"
write_config "sysfs-root = $fx/sysfs" "topology-cache = $state/cache/topology.json"
: >"$log"
"$cluster" node-exec "$state" mount --bind "$state/stall.fifo" /proc/cpuinfo || fatal "bind-mounting the FIFO"
stall_mounted=1
deadline=$((SECONDS + 30))
until grep -q 'node check unknown' "$log" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; do sleep 0.2; done
state_during_stall=$(node_state)
if grep -q '^launchguard_node_health{health="unknown"} 1$' "$prom"; then
  pass "stalled probe: the metrics file says unknown"
else
  fail "metrics during the stall"; show "$prom"
fi
# A site that wants NHC's behaviour (a hung check takes the node out) says
# on-unknown = drain; the drain is launchguard's, so a passing check resumes it.
write_config "sysfs-root = $fx/sysfs" "topology-cache = $state/cache/topology.json" "on-unknown = drain"
if wait_for 'drain|drng' 30 && [ "$(node_reason)" = "launchguard: node check unknown" ]; then
  pass "on-unknown = drain: a stalled check drains with 'launchguard: node check unknown'"
else
  fail "on-unknown = drain: state '$(node_state)', reason '$(node_reason)'"; tail -n 5 "$log" | show
fi
# Runs that started meanwhile still wait on the FIFO until they are killed:
# back to the recorded topology first, then a lazy unmount.
write_config "hwloc-xml = $fx/node.xml" "sysfs-root = $fx/sysfs"
"$cluster" node-exec "$state" umount -l /proc/cpuinfo && stall_mounted=""
if wait_for idle 30; then
  pass "the check passes again after the stall: launchguard's 'unknown' drain resumed"
else
  fail "not resumed after the stall: state '$(node_state)', reason '$(node_reason)'"
fi
line=$(grep -m1 'node check unknown' "$log")
ms=$(grep -m1 -oE 'unknown \(0 rules, [0-9]+ ms\)' "$log" | grep -oE '[0-9]+ ms' | grep -oE '[0-9]+')
if [ -n "$line" ] && [[ "$line" == *"did not finish within $bound s while refreshing the topology cache"* ]] \
   && [ -n "$ms" ] && [ "$ms" -lt $(((bound + 1) * 1000)) ]; then
  pass "stalled probe: the check ended after $ms ms (bound ${bound} s) and names the step: ${line#*: }"
else
  fail "stalled probe: line '$line', run time '${ms:-?}' ms"; show "$log"
fi
if [ "$state_during_stall" = idle ] && grep -q 'check unknown: node state left as it is (on-unknown = keep)' "$log"; then
  pass "stalled probe: node left as it was (on-unknown = keep)"
else
  fail "during the stall: state '$state_during_stall'"; head -n 5 "$log" | show
fi
if ! grep -q 'health_check failed: .*Killed\|health_check.*timed out' "$LG_SLURMD_LOG"; then
  pass "slurmd never had to kill the health check"
else
  fail "slurmd killed the health check"; grep health_check "$LG_SLURMD_LOG" | tail -n 5 | show
fi
# Runs come and go every interval; one older than the bound is a leftover
# unless it is still legitimately at work: a run may also wait on two
# scontrol calls (10 s each, node_check_slurm.cpp) when slurmctld is slow.
# A leftover is one that is still there once that time has passed.
stuck=$(ps -eo pid=,etimes=,args= | awk -v p="$lib/launchguard" -v b=$((bound + 2)) 'index($0, p) && $2 > b {print $1}' | tr '\n' ' ')
left=""
if [ -n "$stuck" ]; then
  # shellcheck disable=SC2086
  echo "INFO: runs older than $((bound + 2)) s: $(ps -o pid=,etimes=,stat=,wchan:24=,args= -p ${stuck// /,} | tr -s ' ' | tr '\n' ';')"
  for _ in $(seq $((bound + 2 * 10 + 2))); do
    left=""
    for pid in $stuck; do [ -d "/proc/$pid" ] && left+="$pid "; done
    [ -z "$left" ] && break
    sleep 1
  done
fi
if [ -z "$left" ]; then
  pass "no node-check process left behind"
else
  fail "node-check processes left: $left"
  # shellcheck disable=SC2086
  ps -o pid=,ppid=,etimes=,stat=,wchan:24=,args= -p ${left// /,} | show
fi

# ------------------------- 5. the topology cache task checks read is refreshed
# Live discovery, as on a real node: the health check writes the cache the
# SPANK plugin's task_init reads, once, and reuses it while it is fresh.
cache="$state/cache2/topology.json"
write_config "sysfs-root = $fx/sysfs" "topology-cache = $cache"
deadline=$((SECONDS + 30))
until [ -s "$cache" ] || [ "$SECONDS" -ge "$deadline" ]; do sleep 0.2; done
if [ -s "$cache" ] && [ "$(stat -c %a "$cache")" = 644 ] \
   && python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); sys.exit(c["version"] != 1 or "numa_nodes" not in c)' "$cache"; then
  first=$(stat -c %Y "$cache")
  sleep $((interval * 2 + 1))
  if [ "$(stat -c %Y "$cache")" = "$first" ]; then
    pass "health check wrote the topology cache (0644) and reuses it while fresh"
  else
    fail "the fresh topology cache was rewritten by the next check"
  fi
else
  fail "no topology cache at $cache after 30 s"; tail -n 5 "$log" | show
fi

echo "=== node_check: $passes passed, $fails failed ==="
[ "$fails" -eq 0 ]
