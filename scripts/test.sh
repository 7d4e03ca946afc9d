#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine and runs every test: unit tests, CLI
# tests, the integration tests that start real services (munged,
# slurmctld, slurmd), build the container image (buildah) and install the
# Debian packages (dpkg -i, then purged), then the aarch64 build's unit and
# CLI tests under qemu-user-static (scripts/test-arm64.sh), then the sanitizer
# build of the unit and CLI tests and the fuzzers (scripts/sanitize.sh). Needs
# root for the Slurm daemons, dpkg and apt.
#
# Each stage prints its wall time as it finishes, and a table of all of them
# ends the run, a failed one included.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${LAUNCHGUARD_BUILD_DIR:-build}"

stage_names=()
stage_times=()
stage_results=()
run_started=$SECONDS

duration() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# run_stage NAME COMMAND...: runs the command and records how long it took.
run_stage() {
  local name="$1" start=$SECONDS status=0
  shift
  "$@" || status=$?
  local took=$((SECONDS - start)) result=ok
  [ "$status" -eq 0 ] || result="failed (exit $status)"
  stage_names+=("$name")
  stage_times+=("$(duration "$took")")
  stage_results+=("$result")
  echo "== test.sh: $name: $result in $(duration "$took")"
  return "$status"
}

skip_stage() {
  stage_names+=("$1")
  stage_times+=("-")
  stage_results+=("skipped ($2)")
}

print_summary() {
  echo
  echo "== test.sh: stages"
  printf '%-14s %-9s %s\n' stage time result
  local i
  for i in "${!stage_names[@]}"; do
    printf '%-14s %-9s %s\n' "${stage_names[$i]}" "${stage_times[$i]}" "${stage_results[$i]}"
  done
  printf '%-14s %s\n' total "$(duration $((SECONDS - run_started)))"
}
trap 'status=$?; print_summary; exit $status' EXIT

run_stage "install deps" scripts/install-deps.sh --with-slurm --with-test-tools --with-arm64
run_stage format scripts/check-format.sh
# ON explicitly: a build directory scripts/check-this-machine.sh configured has them off.
# The project's own code builds without a warning here (and so in CI).
run_stage build scripts/build.sh -DLAUNCHGUARD_BUILD_TESTS=ON -DLAUNCHGUARD_BUILD_BENCH=ON \
  -DLAUNCHGUARD_WARNINGS_AS_ERRORS=ON
# npm: Kubernetes API schemas and helm, into the build dir.
run_stage "test tools" scripts/install-test-tools.sh
run_stage ctest ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j "$(nproc)"

# The unit and CLI tests of the aarch64 build (Grace nodes), cross-compiled and
# run under user-mode emulation; see scripts/test-arm64.sh for what it skips.
# LAUNCHGUARD_SKIP_ARM64=1 skips it for a quick run.
if [ "${LAUNCHGUARD_SKIP_ARM64:-0}" != 1 ]; then
  run_stage arm64 scripts/test-arm64.sh
else
  skip_stage arm64 "LAUNCHGUARD_SKIP_ARM64=1"
fi

# The same tests (less the Slurm daemons) built with clang, ASan and UBSan,
# and every parser's libFuzzer target for a bounded time; see
# scripts/sanitize.sh. LAUNCHGUARD_SKIP_SANITIZE=1 skips it for a quick run.
if [ "${LAUNCHGUARD_SKIP_SANITIZE:-0}" != 1 ]; then
  run_stage sanitize scripts/sanitize.sh
else
  skip_stage sanitize "LAUNCHGUARD_SKIP_SANITIZE=1"
fi
