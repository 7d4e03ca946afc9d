#!/usr/bin/env bash
# fleet_bench.sh — `launchguard fleet` over N synthetic node records (default
# 10,000) against merely parsing them (fleet_bench), plus the whole CLI as a
# cron job runs it, with /usr/bin/time's wall time and peak memory.
# Usage: bench/fleet_bench.sh BUILD_DIR [N] [RUNS]
set -euo pipefail
build=${1:?usage: fleet_bench.sh BUILD_DIR [N] [RUNS]}
n=${2:-10000}
runs=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 "$here/../tests/integration/fleet/make_node_records.py" "$n" "$dir/records.jsonl"
echo "$n records, $(du -m "$dir/records.jsonl" | cut -f1) MiB of JSON lines"
"$build/bench/fleet_bench" "$dir/records.jsonl" "$runs"
for format in text json html; do
  /usr/bin/time -f "CLI --format $format: %e s wall, %U s user + %S s system, %M KiB peak RSS" \
    "$build/src/cli/launchguard" fleet --format "$format" -o "$dir/out.$format" "$dir/records.jsonl" || true
done
