#!/usr/bin/env bash
# What a hostile LD_LIBRARY_PATH costs one `launchguard check` (rule
# net.verbs-missing, a 4-node job on the 32em64t node): peak RSS and wall
# time from /usr/bin/time -v, for
#   aliases: 200 entries that all name /lib, whose libibverbs/ holds 100,000 files;
#   chains:  10,000 entries /eN -> /l1 -> ... -> /l39 -> /lib (40 links each);
#   plain:   LD_LIBRARY_PATH=/lib on the aliases tree (the baseline).
# The check must end, decide the first and say unknown, naming the bound, for
# the second (tests/unit/cli/library_path_cli_test.cpp tests what it says).
# Usage: bench/library_path_bench.sh [path/to/launchguard]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/src/cli/launchguard}
fixtures=tests/fixtures
shared=${LAUNCHGUARD_SHARED_FIXTURES:-../shared/fixtures}
hwloc=$fixtures/hwloc/32em64t-2n8c2t-pci-normalio.xml
[ -f "$hwloc" ] || hwloc=$shared/hwloc/32em64t-2n8c2t-pci-normalio.xml
sysfs=$fixtures/sysfs/h100-baremetal
[ -d "$sysfs" ] || sysfs=$shared/sysfs/h100-baremetal
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

numbered() {  # numbered STEM COUNT -> STEM0:STEM1:...
  local stem=$1 count=$2 i out=""
  for ((i = 0; i < count; i++)); do out+="${out:+:}$stem$i"; done
  echo "$out"
}

make_root() {
  mkdir -p "$1/lib" "$1/dev/infiniband"
  echo elf >"$1/lib/libibverbs.so.1"
  : >"$1/dev/infiniband/uverbs0"
}

aliases=$dir/aliases
make_root "$aliases"
mkdir -p "$aliases/lib/libibverbs"
(cd "$aliases/lib/libibverbs" && seq 0 99999 | sed 's/.*/libvendor&-rdmav34.so/' | xargs touch)
for ((i = 0; i < 200; i++)); do ln -s /lib "$aliases/alias$i"; done

chains=$dir/chains
make_root "$chains"
for ((i = 1; i < 39; i++)); do ln -s "/l$((i + 1))" "$chains/l$i"; done
ln -s /lib "$chains/l39"
for ((i = 0; i < 10000; i++)); do ln -s /l1 "$chains/e$i"; done

run() {  # run NAME ROOT LD_LIBRARY_PATH
  local env=$dir/$1.env
  printf 'PATH=/usr/bin:/bin\nLD_LIBRARY_PATH=%s\n' "$3" >"$env"
  /usr/bin/time -v "$bin" check --root "$2" --env-file "$env" --hwloc-xml "$hwloc" --sysfs-root "$sysfs" \
    --cpus 0-3 --runtime bare --job-nodes 4 --rule net.verbs-missing --format text >"$dir/$1.out" 2>"$dir/$1.time" || true
  printf '%-8s max RSS %7s KiB  wall %s  %s\n' "$1" \
    "$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/$1.time")" \
    "$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/$1.time")" \
    "$(grep -m1 -E 'net.verbs-missing|unknown' "$dir/$1.out" | cut -c1-100)"
}

run plain "$aliases" /lib
run aliases "$aliases" "$(numbered /alias 200)"
run chains "$chains" "$(numbered /e 10000)"
