#!/usr/bin/env bash
# `launchguard fleet --prometheus` against a real Prometheus. Three hours of
# checks (every 15 minutes) of N synthetic nodes are written as OpenMetrics by
# node-check's own metrics writer (make_node_metrics), together with one real
# `launchguard node-check --metrics-file` run over a fixture tree; promtool
# backfills them into TSDB blocks; Prometheus serves them on a free loopback
# port; `fleet --prometheus` at the last check (and over the three hours)
# must report the generated counts, drift and conformance over time, and the
# same as `fleet` over the same checks written as records in a directory.
# Prints both read times (docs/performance.md). Exit 77 (skip) only when
# prometheus or promtool is not installed, or LAUNCHGUARD_SHARED_FIXTURES (the
# public fixtures: the node's hwloc export) is missing.
# usage: run_prometheus_test.sh LAUNCHGUARD MAKE_NODE_METRICS FIXTURES OUT_DIR [N]
set -euo pipefail
launchguard="$1" generator="$2" fixtures="$3" out="$4" n="${5:-1000}"
here="$(cd "$(dirname "$0")" && pwd)"
for tool in prometheus promtool; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed (scripts/install-test-tools.sh installs it)"; exit 77; }
done
shared="${LAUNCHGUARD_SHARED_FIXTURES:-}"
[ -d "$shared/hwloc" ] || { echo "SKIP: needs the public fixtures: LAUNCHGUARD_SHARED_FIXTURES not found ($shared)"; exit 77; }
rm -rf "$out" && mkdir -p "$out/records" "$out/real" "$out/tsdb"

# One real node: node-check over a fixture tree with a host name of its own.
cp -r "$fixtures/sysfs/kvm-guest-2n" "$out/real/root"
mkdir -p "$out/real/root/proc/sys/kernel" && echo real-kvm-01 > "$out/real/root/proc/sys/kernel/hostname"
set +e
"$launchguard" node-check --no-topology-cache --hwloc-xml "$shared/hwloc/32em64t-2n8c2t-pci-normalio.xml" \
  --sysfs-root "$out/real/root" --node-class real-fixture --metrics-file "$out/real/launchguard.prom" >/dev/null
set -e
grep -q '^launchguard_node_info{node="real-kvm-01",node_class="real-fixture"' "$out/real/launchguard.prom" \
  || { echo "FAIL: node-check --metrics-file wrote no launchguard_node_info for real-kvm-01"; exit 1; }

# The last check a quarter hour ago, on a quarter hour, so that the blocks
# lie in the past and inside retention.
now=$(date +%s)
end=$(( (now - 900) / 900 * 900 ))
t0=$(date +%s.%N)
"$generator" "$n" 3 900 "$end" "$out" --extra "$out/real/launchguard.prom" real-kvm-01:9100
t1=$(date +%s.%N)
promtool tsdb create-blocks-from openmetrics -q "$out/metrics.om" "$out/tsdb" >"$out/promtool.log" 2>&1 \
  || { echo "FAIL: promtool"; tail -5 "$out/promtool.log"; exit 1; }
t2=$(date +%s.%N)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# Checks every 15 minutes: a lookback of 16 finds the last one at any time.
prometheus --config.file=/dev/null --web.listen-address="127.0.0.1:$port" --storage.tsdb.path="$out/tsdb" \
  --storage.tsdb.retention.time=10y --query.lookback-delta=16m >"$out/prometheus.log" 2>&1 &
prom=$!
trap 'kill $prom 2>/dev/null || true; wait $prom 2>/dev/null || true' EXIT
for _ in $(seq 1 150); do
  curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1 && break
  kill -0 $prom 2>/dev/null || { echo "FAIL: prometheus exited"; tail -5 "$out/prometheus.log"; exit 1; }
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null || { echo "FAIL: prometheus not ready"; exit 1; }
t3=$(date +%s.%N)

url="http://127.0.0.1:$port"
set +e
"$launchguard" fleet --prometheus "$url" --at "$end" --since 3h --step 15m --format json -o "$out/prometheus.json"
code_p=$?
t4=$(date +%s.%N)
"$launchguard" fleet --format json -o "$out/records.json" "$out/records"
code_r=$?
t5=$(date +%s.%N)
"$launchguard" fleet --prometheus "$url" --at "$end" --since 3h --step 15m --format html -o "$out/prometheus.html"
code_h=$?
# What an operator sees when Prometheus refuses the query range.
"$launchguard" fleet --prometheus "$url" --at "$end" --since 1000d --step 1s >"$out/refused.txt" 2>&1
code_e=$?
"$launchguard" fleet --prometheus "http://127.0.0.1:1" --timeout 2 >"$out/unreachable.txt" 2>&1
code_u=$?
set -e
[ "$code_p" -le 1 ] && [ "$code_r" -le 1 ] && [ "$code_h" -le 1 ] \
  || { echo "FAIL: fleet exited $code_p (prometheus), $code_r (records), $code_h (html)"; exit 1; }
[ "$code_e" -eq 2 ] && grep -q "11,000" "$out/refused.txt" || { echo "FAIL: range error: $(cat "$out/refused.txt")"; exit 1; }
[ "$code_u" -eq 2 ] && grep -q "http://127.0.0.1:1" "$out/unreachable.txt" \
  || { echo "FAIL: unreachable: $(cat "$out/unreachable.txt")"; exit 1; }
grep -q '<svg[^>]*class="history"' "$out/prometheus.html" || { echo "FAIL: no over-time plot in the page"; exit 1; }

python3 "$here/check_prometheus_report.py" "$out/expected.json" "$out/prometheus.json" "$out/records.json"
awk -v g="$(echo "$t1 - $t0" | bc)" -v b="$(echo "$t2 - $t1" | bc)" -v s="$(echo "$t3 - $t2" | bc)" \
    -v p="$(echo "$t4 - $t3" | bc)" -v r="$(echo "$t5 - $t4" | bc)" -v n="$n" 'BEGIN {
  printf "timing: %d nodes x 13 checks: generate %.2fs, promtool backfill %.2fs, prometheus start %.2fs\n", n, g, b, s
  printf "timing: fleet --prometheus (8 instant + 2 range queries) %.2fs; fleet over the same records in a directory %.2fs\n", p, r }'
