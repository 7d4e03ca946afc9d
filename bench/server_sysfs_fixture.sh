#!/usr/bin/env bash
# server_sysfs_fixture.sh — a sysfs/procfs tree shaped like a large GPU
# server's, for timing the node probes against something other than a small
# VM (which has no cpufreq or cpuidle, few CPUs and few PCI devices).
#
# Usage: bench/server_sysfs_fixture.sh DIR [CPUS] [IDLE_STATES] [PCI_DEVICES]
#   DIR          created (must not exist); give it as sysfs-root=DIR to the
#                Slurm plugin (bench/srun_overhead.sh) or --sysfs-root to the CLI
#   CPUS         default 128: cpuN/cpufreq (governor, scaling/cpuinfo max) and
#                cpuN/cpuidle/stateK (name, disable) for each
#   IDLE_STATES  default 4 (POLL C1 C1E C6, as intel_idle gives a Sapphire Rapids)
#   PCI_DEVICES  default 256: link speed/width files each, one IOMMU group each
#
# The files hold what a real node's hold; reading them from a disk or tmpfs is
# cheaper than from sysfs, where every attribute is produced by a kernel
# callback, so times measured on it are a lower bound for the same counts.
set -euo pipefail
dir=${1:?usage: $0 DIR [CPUS] [IDLE_STATES] [PCI_DEVICES]}
cpus=${2:-128}
states=${3:-4}
devices=${4:-256}
[ -e "$dir" ] && { echo "server_sysfs_fixture: $dir exists" >&2; exit 2; }

names=(POLL C1 C1E C6 C8 C10 C12 C14)
cpu_dir="$dir/sys/devices/system/cpu"
mkdir -p "$cpu_dir/intel_pstate" "$dir/proc/sys/kernel" "$dir/sys/bus/pci/devices" "$dir/sys/kernel/iommu_groups" \
  "$dir/sys/class/iommu/dmar0" "$dir/sys/class/net/lo" "$dir/sys/class/dmi/id"
echo 0 >"$cpu_dir/intel_pstate/no_turbo"
echo 0 >"$dir/proc/sys/kernel/numa_balancing"
echo "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro intel_iommu=on iommu=pt" >"$dir/proc/cmdline"
echo "Dell Inc." >"$dir/sys/class/dmi/id/sys_vendor"
echo "PowerEdge XE9680" >"$dir/sys/class/dmi/id/product_name"
echo unknown >"$dir/sys/class/net/lo/operstate"
for ((c = 0; c < cpus; c++)); do
  base="$cpu_dir/cpu$c"
  mkdir -p "$base/cpufreq"
  echo performance >"$base/cpufreq/scaling_governor"
  echo 3800000 >"$base/cpufreq/scaling_max_freq"
  echo 3800000 >"$base/cpufreq/cpuinfo_max_freq"
  for ((k = 0; k < states; k++)); do
    mkdir -p "$base/cpuidle/state$k"
    echo "${names[$k]}" >"$base/cpuidle/state$k/name"
    echo 0 >"$base/cpuidle/state$k/disable"
  done
done
for ((d = 0; d < devices; d++)); do
  busid=$(printf '0000:%02x:%02x.%x' $((d / 32)) $((d % 32)) 0)
  dev="$dir/sys/bus/pci/devices/$busid"
  mkdir -p "$dev" "$dir/sys/kernel/iommu_groups/$d/devices/$busid"
  echo "16.0 GT/s PCIe" >"$dev/current_link_speed"
  echo 16 >"$dev/current_link_width"
  echo "16.0 GT/s PCIe" >"$dev/max_link_speed"
  echo 16 >"$dev/max_link_width"
  echo DMA >"$dir/sys/kernel/iommu_groups/$d/type"
done
echo "$dir: $cpus CPUs x $states idle states, $devices PCI devices and IOMMU groups"
