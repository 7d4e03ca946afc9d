#!/usr/bin/env bash
# Installs what launchguard needs on Debian 12 (bookworm).
# Usage: scripts/install-deps.sh [--with-test-tools] [--with-slurm] [--with-arm64] | --compile-only
#   (no flag)          what compiles and runs the CLI and the webhook: compilers, CMake, Ninja
#                      and the libraries (scripts/check-this-machine.sh)
#   --with-test-tools  also what the tests need: GoogleTest, Google Benchmark, clang and its
#                      sanitizer runtimes, buildah, dpkg-dev, systemd, podman and runc, Python
#                      and pytest, Node.js and npm, kubectl, and ccache, which every build of
#                      scripts/test.sh then goes through (scripts/test.sh, scripts/sanitize.sh)
#   --with-slurm       also the Slurm daemons and headers (the Slurm plugins and their tests)
#   --with-arm64       also the aarch64 cross build (Grace nodes): Debian's cross toolchain
#                      (crossbuild-essential-arm64), qemu-user-static to run its tests, and a
#                      sysroot of the arm64 -dev packages in ./build-arm64-sysroot
#                      (scripts/arm64-sysroot.sh; cmake/toolchains/aarch64-linux-gnu.cmake)
#   --compile-only     the default alone, named for the Containerfile's build stage
# Idempotent; must run as root (or with sudo available).
set -euo pipefail

with_slurm=0
with_test_tools=0
with_arm64=0
compile_only=0
for arg in "$@"; do
  case "$arg" in
    --with-slurm) with_slurm=1 ;;
    --with-test-tools) with_test_tools=1 ;;
    --with-arm64) with_arm64=1 ;;
    --compile-only) compile_only=1 ;;
    *) echo "install-deps.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
if [ "$compile_only" -eq 1 ] && [ $((with_slurm + with_test_tools + with_arm64)) -gt 0 ]; then
  echo "install-deps.sh: --compile-only excludes --with-slurm, --with-test-tools and --with-arm64" >&2; exit 2
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

compile_packages=(
  build-essential cmake ninja-build pkg-config
  libboost1.81-dev libboost-json1.81-dev
  libssl-dev libspdlog-dev libfmt-dev
  libhwloc-dev
  libyaml-cpp-dev libcli11-dev
)
test_packages=(
  git hwloc
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  util-linux openssl curl unzip
  python3 python3-yaml python3-jsonpatch
  python3-pytest            # tests/integration/webhook and helm are pytest modules
  ccache                    # every build goes through it when installed (cmake/LaunchguardBuildSpeed.cmake)
  clang libclang-rt-14-dev  # scripts/sanitize.sh: ASan/UBSan build and libFuzzer targets
  clang-format-14           # scripts/check-format.sh
  buildah                   # tests/integration/image: builds the Containerfile
  dpkg-dev                  # tests/integration/deb: cpack's DEB generator runs dpkg-shlibdeps
  systemd                   # tests/integration/deb: systemd-analyze verify on the webhook's unit
  podman runc catatonit     # tests/integration/podman: pods run by podman kube play with runc; catatonit
                            # is podman's pause process (its pods' infra container)
)
slurm_packages=(munge slurmctld slurmd slurm-client libslurm-dev)
# Host (amd64) packages only: the arm64 libraries go into a sysroot, not into
# this system (scripts/arm64-sysroot.sh says why).
arm64_packages=(crossbuild-essential-arm64 qemu-user-static)

packages=("${compile_packages[@]}")
if [ "$with_test_tools" -eq 1 ]; then
  packages+=("${test_packages[@]}")
  # The webhook's schema check runs on Node.js (npm kubernetes-models); the
  # machine's own node is used when there is one.
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
  # tests/integration/kubectl: `kubectl apply --dry-run=client` parses the
  # --patched output; any kubectl already installed does.
  command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)
fi
if [ "$with_slurm" -eq 1 ]; then packages+=("${slurm_packages[@]}"); fi
if [ "$with_arm64" -eq 1 ]; then packages+=("${arm64_packages[@]}"); fi

# The sysroot after the packages (it needs apt and dpkg-deb, not root).
arm64_sysroot() {
  if [ "$with_arm64" -eq 1 ]; then "$(dirname "$0")/arm64-sysroot.sh"; fi
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  arm64_sysroot
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
arm64_sysroot
