#!/usr/bin/env bash
# Wall time of `launchguard check` on this machine next to hwloc discovery
# alone (`lstopo --of xml`), interleaved in the same run so both see the same
# machine state. Target: check within 1.5x of discovery alone.
# Usage: bench/check_vs_lstopo.sh [RUNS] [LAUNCHGUARD_BINARY]
set -euo pipefail
runs="${1:-30}"
bin="${2:-build/src/cli/launchguard}"
command -v lstopo >/dev/null || { echo "lstopo not found (apt-get install hwloc)" >&2; exit 2; }
[ -x "$bin" ] || { echo "$bin not built" >&2; exit 2; }

ms_of() {  # runs a command, prints its wall time in microseconds
  local start end
  start=$(date +%s%N)
  "$@" >/dev/null 2>&1 || true
  end=$(date +%s%N)
  echo $(( (end - start) / 1000 ))
}

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print int((a[NR/2]+a[NR/2+1])/2)}'; }

check_times=(); lstopo_times=()
ms_of "$bin" check --format json >/dev/null; ms_of lstopo --of xml - >/dev/null  # warm the page cache
for ((i = 0; i < runs; i++)); do
  check_times+=("$(ms_of "$bin" check --format json)")
  lstopo_times+=("$(ms_of lstopo --of xml -)")
done
check_median=$(printf '%s\n' "${check_times[@]}" | median)
lstopo_median=$(printf '%s\n' "${lstopo_times[@]}" | median)
ratio=$(awk -v a="$check_median" -v b="$lstopo_median" 'BEGIN {printf "%.2f", a / b}')
echo "runs:                          $runs (interleaved)"
echo "lstopo --of xml (median):      ${lstopo_median} us"
echo "launchguard check (median):    ${check_median} us"
echo "ratio check / discovery:       ${ratio}x (target <= 1.5x)"
