#!/usr/bin/env bash
# The main job: set up a fresh Debian 12 machine, build launchguard, and check
# this machine on the embedded default profile. Extra arguments go to
# `launchguard check` (e.g. --format json, --profile h100-cx7-ib).
# Exit code is launchguard's: 0 allow, 1 block, 2 bad input, 3 would patch.
#
# Only what compiles the CLI is installed and only the CLI is built: the tests,
# benchmarks and Slurm plugins are scripts/test.sh's. A build directory that is
# already configured (a developer's, or test.sh's) keeps its settings.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build_dir="${LAUNCHGUARD_BUILD_DIR:-build}"
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" \
    -DLAUNCHGUARD_BUILD_TESTS=OFF -DLAUNCHGUARD_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$build_dir" --target launchguard -j "$(nproc)" >/dev/null
echo "== launchguard check (embedded default profile) =="
exec "$build_dir/src/cli/launchguard" check "$@"
