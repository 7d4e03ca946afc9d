#!/usr/bin/env bash
# `launchguard topo FILE --paths --format json` on a generated 16-GPU, 16-NIC
# topology (two sockets, eight PCIe switches each holding two GPUs and two
# NICs, every GPU on one NVSwitch), against `launchguard topo FILE` on the same
# file (parse only) and `launchguard --version` (process start alone) as the
# baselines in the same run. Target: under 50 ms. On a loaded machine the
# process start dominates; the difference to the baselines is the model's cost.
# Usage: bench/nccl_paths_bench.sh [path/to/launchguard] [runs]
set -euo pipefail
bin=${1:-build/src/cli/launchguard}
runs=${2:-50}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
file=$dir/topo16.xml

{
  echo '<system version="1">'
  gpu=0
  nic=0
  for socket in 0 1; do
    echo "  <cpu numaid=\"$socket\" affinity=\"ffffffff\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"143\">"
    for sw in 0 1 2 3; do
      bus=$(printf '%02x' $((socket * 128 + sw * 16 + 16)))
      echo "    <pci busid=\"0000:$bus:00.0\" class=\"0x060400\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">"
      for slot in 1 2; do
        echo "      <pci busid=\"0000:$bus:0$slot.0\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">"
        echo "        <gpu dev=\"$gpu\" sm=\"90\" rank=\"$gpu\" gdr=\"1\"><nvlink target=\"fffffff:ff:ff.0\" count=\"18\" tclass=\"0x068000\"/></gpu>"
        echo "      </pci>"
        gpu=$((gpu + 1))
      done
      for slot in 3 4; do
        echo "      <pci busid=\"0000:$bus:0$slot.0\" class=\"0x020700\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">"
        echo "        <nic><net name=\"mlx5_$nic\" dev=\"$nic\" speed=\"400000\" port=\"1\" gdr=\"1\"/></nic>"
        echo "      </pci>"
        nic=$((nic + 1))
      done
      echo "    </pci>"
    done
    echo "  </cpu>"
  done
  echo '</system>'
} > "$file"

# Median and 90th percentile of `runs` wall times (ms) of one command.
time_runs() {
  local samples=()
  for _ in $(seq "$runs"); do
    local start end
    start=$(date +%s%N)
    "$@" > /dev/null || [ $? -eq 1 ]
    end=$(date +%s%N)
    samples+=($(((end - start) / 1000)))
  done
  printf '%s\n' "${samples[@]}" | sort -n | awk -v n="$runs" '{ a[NR] = $1 } END {
    printf "median %.2f ms  p90 %.2f ms  max %.2f ms\n", a[int((n + 1) / 2)] / 1000, a[int(n * 0.9)] / 1000, a[n] / 1000 }'
}

echo "16 GPUs, 16 NICs, $runs runs each"
echo -n "launchguard --version:             "
time_runs "$bin" --version
echo -n "topo FILE (parse only):            "
time_runs "$bin" topo "$file" --format json
echo -n "topo FILE --paths --format json:   "
time_runs "$bin" topo "$file" --paths --format json
"$bin" topo "$file" --paths --format json | grep -c '"busid"' | sed 's/^/GPUs in the answer: /'
