#!/usr/bin/env bash
# node_check_cost.sh — what one `launchguard node-check` costs on this node,
# the figure that HealthCheckProgram (once per HealthCheckInterval) and NPD
# (once per invoke_interval) pay instead of the prolog plugin's cost per job.
#
# Usage: bench/node_check_cost.sh LAUNCHGUARD [RUNS]     (default 30 runs each)
#
# Times whole processes, as slurmd and NPD start them, against /bin/true in
# the same loop (the cost of starting any process here):
#   cached:    --topology-cache in a temporary dir, written by a first run and
#              reused while fresh (what a node pays every interval)
#   discovery: --no-topology-cache, so hwloc discovers the node each time
#              (the first run after a boot, or a cache that cannot be written)
# Prints median and p90 in milliseconds. Exit codes of the checks are ignored:
# this node's findings do not change what a check costs.
set -uo pipefail
lg=${1:?usage: node_check_cost.sh LAUNCHGUARD [RUNS]}
runs=${2:-30}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

now_us() { local t; t=$(date +%s%N); echo $((t / 1000)); }
time_runs() { # time_runs NAME CMD...: one line with median and p90
  local name=$1 i t0 t1; shift
  : >"$dir/$name.us"
  for ((i = 0; i < runs; i++)); do
    t0=$(now_us); "$@" >/dev/null 2>&1; t1=$(now_us)
    echo $((t1 - t0)) >>"$dir/$name.us"
  done
  sort -n "$dir/$name.us" | awk -v n="$name" '{v[NR]=$1} END {
    printf "%-10s median %7.1f ms   p90 %7.1f ms   (%d runs)\n", n, v[int((NR+1)/2)]/1000, v[int(NR*0.9+0.5)]/1000, NR}'
}

"$lg" node-check --topology-cache "$dir/topology.json" >/dev/null 2>&1  # writes the cache
[ -s "$dir/topology.json" ] || echo "note: the cache was not written; 'cached' measures discovery too" >&2
time_runs true /bin/true
time_runs cached "$lg" node-check --topology-cache "$dir/topology.json"
time_runs discovery "$lg" node-check --no-topology-cache
