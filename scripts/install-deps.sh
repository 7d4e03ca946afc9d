#!/usr/bin/env bash
# Installs everything launchguard needs to build and test on Debian 12 (bookworm).
# Usage: scripts/install-deps.sh [--with-slurm]
# Idempotent; must run as root (or with sudo available).
set -euo pipefail

with_slurm=0
for arg in "$@"; do
  case "$arg" in
    --with-slurm) with_slurm=1 ;;
    *) echo "install-deps.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

build_packages=(
  build-essential cmake ninja-build pkg-config git
  libboost1.81-dev libboost-json1.81-dev
  libssl-dev libspdlog-dev libfmt-dev
  libhwloc-dev hwloc
  libyaml-cpp-dev libcli11-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  util-linux openssl curl unzip
  python3 python3-yaml python3-jsonpatch
  clang libclang-rt-14-dev  # scripts/sanitize.sh: ASan/UBSan build and libFuzzer targets
)
slurm_packages=(munge slurmctld slurmd slurm-client libslurm-dev)

packages=("${build_packages[@]}")
if [ "$with_slurm" -eq 1 ]; then packages+=("${slurm_packages[@]}"); fi

# The webhook's schema check runs on Node.js (npm kubernetes-models); the
# machine's own node is used when there is one.
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
