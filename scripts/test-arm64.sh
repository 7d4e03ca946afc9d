#!/usr/bin/env bash
# The aarch64 variant (NVIDIA Grace: GB200 and GB300 NVL72 compute nodes):
# cross-compiled with Debian's toolchain against ./build-arm64-sysroot
# (cmake/toolchains/aarch64-linux-gnu.cmake) into ./build-arm64 (or
# $LAUNCHGUARD_ARM64_BUILD_DIR), then its unit and CLI tests (ctest -L unit)
# run on this x86-64 machine under qemu-user-static, which the toolchain file
# names as CMAKE_CROSSCOMPILING_EMULATOR (no binfmt_misc needed): the cases of
# launchguard_unit_tests in one process per core (scripts/run-unit-shards.sh),
# the others (gate.static_binary, layering) through ctest. Needs
# scripts/install-deps.sh --with-arm64. A stage of scripts/test.sh.
#
# Usage: scripts/test-arm64.sh [--packages] [CMAKE_ARG...]
#   (no flag)   builds what the tests run, the unit-test binary and the CLI
#               (the webhook and Slurm-plugin logic they test is linked in),
#               and the static launch gate, which gate.static_binary checks
#               (static, at most 15 MB stripped, runs under qemu). The gate's
#               decision tests (launchguard_gate_tests) are not built here:
#               they start the gate through a shell, which cannot run an
#               aarch64 program without binfmt_misc
#   --packages  builds everything instead, then the arm64 Debian packages
#               (cpack, into BUILD/packages) after the tests
#
# Every unit and CLI test runs under emulation (the CLI tests start the
# aarch64 CLI through tests/launchguard-emulated, a script that runs it under
# qemu) except these, skipped for this stage only (ctest's -E below):
#   ConfLint.IsLinearInTheNumberOfLines: a wall-clock bound (200,000 lines in
#                     20 s) set for native speed; under qemu-user the same
#                     linear work takes about ten times as long
#   GateRun.*, GateInstall.*: built only with --packages; they start the
#                     aarch64 gate through a shell (see above)
# The integration tests (real Slurm daemons, the buildah image build, dpkg -i
# of the packages) are not labelled unit and run in the amd64 build only:
# daemons and package installs need a machine of the packages' architecture.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${LAUNCHGUARD_ARM64_BUILD_DIR:-build-arm64}"
jobs="$(nproc)"
packages=0
if [ "${1:-}" = "--packages" ]; then
  packages=1
  shift
fi
excluded='^ConfLint\.IsLinearInTheNumberOfLines$|^GateRun\.|^GateInstall\.'

# Release at -O2 (RelWithDebInfo's optimisation without its debug
# information): the tests run the code the packages ship, and the debug
# information, which no one reads here, is a third of the compile time.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
  -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG" \
  -DLAUNCHGUARD_BUILD_TESTS=ON -DLAUNCHGUARD_BUILD_BENCH=OFF -DLAUNCHGUARD_WARNINGS_AS_ERRORS=ON "$@"
if [ "$packages" -eq 1 ]; then
  cmake --build "$build_dir" -j "$jobs"
else
  cmake --build "$build_dir" -j "$jobs" --target launchguard_unit_tests launchguard launchguard-gate
fi
# The unit-test binary's cases as one emulated process per core (a start of
# the binary under qemu costs about a second, a thousand of them more than the
# tests), then the other unit tests through ctest; both run, then a failure stops.
status=0
scripts/run-unit-shards.sh "$build_dir" "$excluded" || status=$?
ctest --test-dir "$build_dir" -L unit -LE unit_binary -E "$excluded" --output-on-failure --timeout 900 -j "$jobs" ||
  status=$?
[ "$status" -eq 0 ] || exit "$status"
if [ "$packages" -eq 1 ]; then
  rm -rf "$build_dir/packages"
  (cd "$build_dir" && cpack -G DEB)
  # What dpkg -i would check first on a Grace node, which this machine cannot do.
  debs=("$build_dir"/packages/*.deb)
  [ "${#debs[@]}" -eq 3 ] || { echo "test-arm64.sh: expected 3 packages, got ${debs[*]}" >&2; exit 1; }
  for deb in "${debs[@]}"; do
    arch=$(dpkg-deb -f "$deb" Architecture)
    [ "$arch" = arm64 ] || { echo "test-arm64.sh: $deb is for $arch" >&2; exit 1; }
    echo "$(basename "$deb"): Depends: $(dpkg-deb -f "$deb" Depends)"
  done
  dpkg-deb -c "$build_dir"/packages/launchguard-slurm_*_arm64.deb |
    grep -q ' \./usr/lib/aarch64-linux-gnu/slurm-wlm/spank_launchguard\.so$' ||
    { echo "test-arm64.sh: the SPANK plugin is not in Debian's arm64 PluginDir" >&2; exit 1; }
fi
