#!/usr/bin/env bash
# The sanitizer build: the core, the CLI, the unit tests and the libFuzzer
# targets compiled with clang, AddressSanitizer and UndefinedBehaviorSanitizer
# into ./build-sanitize (or $LAUNCHGUARD_SANITIZE_BUILD_DIR), then every test
# except the Slurm integration tests (an ASan-built SPANK plugin cannot be
# loaded by slurmd), the Helm chart tests (no C++), the image and Debian
# package tests (they ship the normal build), and every fuzzer for $LAUNCHGUARD_FUZZ_SECONDS (20) each.
# The normal build in ./build stays g++ and unsanitized.
#
# The cases of the unit-test binary run as one process per core
# (scripts/run-unit-shards.sh), the other tests through ctest.
#
# Usage: scripts/sanitize.sh [ctest arguments, e.g. -L fuzz or -R Topo]
#   (with arguments, ctest runs the tests they select, one process per test)
# Needs the test tools (scripts/install-deps.sh --with-test-tools; scripts/test.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in clang clang++; do
  command -v "$tool" >/dev/null || { echo "sanitize.sh: $tool not found (scripts/install-deps.sh --with-test-tools)" >&2; exit 2; }
done
build_dir="${LAUNCHGUARD_SANITIZE_BUILD_DIR:-build-sanitize}"
fuzz_seconds="${LAUNCHGUARD_FUZZ_SECONDS:-20}"
jobs="$(nproc)"

CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLAUNCHGUARD_SANITIZE=ON -DLAUNCHGUARD_BUILD_FUZZERS=ON -DLAUNCHGUARD_FUZZ_SECONDS="$fuzz_seconds" \
  -DLAUNCHGUARD_BUILD_SLURM_PLUGIN=OFF -DLAUNCHGUARD_BUILD_BENCH=OFF \
  -DLAUNCHGUARD_TEST_TOOLS_DIR="$PWD/${LAUNCHGUARD_BUILD_DIR:-build}/npm"
cmake --build "$build_dir" -j "$jobs"

# Stop at the first report, with a stack; LeakSanitizer is on (the default).
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# The Helm chart tests run no C++, and the image and the packages are made
# from the normal build: its run covers them.
not_here='slurm|helm|image|deb'
if [ "$#" -gt 0 ]; then
  exec ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j "$jobs" -LE "$not_here" "$@"
fi
# The unit-test binary's cases as one process per core (each start of the
# sanitized binary costs ASan's set-up), then the rest through ctest (CLI
# and integration tests, the fuzzers); both run, then a failure stops.
status=0
scripts/run-unit-shards.sh "$build_dir" || status=$?
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j "$jobs" -LE "$not_here|unit_binary" || status=$?
exit "$status"
