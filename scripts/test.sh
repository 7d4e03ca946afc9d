#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine and runs every test: unit tests, CLI
# tests, the integration tests that start real services (munged,
# slurmctld, slurmd), build the container image (buildah) and install the
# Debian packages (dpkg -i, then purged), then the aarch64 build's unit and
# CLI tests under qemu-user-static (scripts/test-arm64.sh), then the sanitizer
# build of the unit and CLI tests and the fuzzers (scripts/sanitize.sh). Needs
# root for the Slurm daemons, dpkg and apt.
#
# The ctest stage runs each test as a process of its own. The arm64 and
# sanitize stages run the unit-test binary's cases as one process per core
# (scripts/run-unit-shards.sh: a start costs a second under qemu, and ASan's
# set-up in the sanitizer build) and their other tests through ctest; every
# test still runs.
#
# Each stage prints its wall time as it finishes, and a table of all of them
# ends the run, a failed one included, with what ccache saved.
#
# Every build goes through ccache when it is installed (install-deps.sh
# installs it; cmake/LaunchguardBuildSpeed.cmake), into ccache's own cache
# ($CCACHE_DIR, else ~/.cache/ccache), so a second run recompiles only what
# changed. The aarch64 stage builds nothing the native stages need: with
# LAUNCHGUARD_PARALLEL_STAGES=1 (the default from 4 cores up, where it does
# not slow the others) it runs beside the native build and tests, its output
# kept in build/test-arm64.log and shown when it ends. On 2 cores the stages run
# one after the other: compiling two builds at once there only interleaves
# them and stretches the time-bound tests of both.
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

# ccache's counters (hits, misses) now, as "hits misses"; nothing without ccache.
ccache_counters() {
  command -v ccache >/dev/null || return 0
  ccache --print-stats 2>/dev/null |
    awk '$1 ~ /^(direct|preprocessed)_cache_hit$/ {h += $2} $1 == "cache_miss" {m = $2} END {print h + 0, m + 0}'
}
ccache_at_start="$(ccache_counters)"

print_summary() {
  echo
  echo "== test.sh: stages"
  printf '%-14s %-9s %s\n' stage time result
  local i
  for i in "${!stage_names[@]}"; do
    printf '%-14s %-9s %s\n' "${stage_names[$i]}" "${stage_times[$i]}" "${stage_results[$i]}"
  done
  printf '%-14s %s\n' total "$(duration $((SECONDS - run_started)))"
  local now
  now="$(ccache_counters)"
  if [ -n "$now" ] && [ -n "$ccache_at_start" ]; then
    read -r hits_then misses_then <<< "$ccache_at_start"
    read -r hits_now misses_now <<< "$now"
    echo "ccache: $((hits_now - hits_then)) compilations from the cache, $((misses_now - misses_then)) compiled"
  else
    echo "ccache: not installed (scripts/install-deps.sh --with-test-tools installs it)"
  fi
}
arm64_pid=""
trap 'status=$?; [ -z "$arm64_pid" ] || kill -- "-$arm64_pid" 2>/dev/null; print_summary; exit $status' EXIT

run_stage "install deps" scripts/install-deps.sh --with-slurm --with-test-tools --with-arm64
run_stage format scripts/check-format.sh

parallel="${LAUNCHGUARD_PARALLEL_STAGES:-}"
if [ -z "$parallel" ]; then
  parallel=0
  if [ "$(nproc)" -ge 4 ]; then parallel=1; fi
fi
arm64_log="$build_dir/test-arm64.log"
# The unit and CLI tests of the aarch64 build (Grace nodes), cross-compiled and
# run under user-mode emulation; see scripts/test-arm64.sh for what it skips.
# LAUNCHGUARD_SKIP_ARM64=1 skips it for a quick run.
if [ "${LAUNCHGUARD_SKIP_ARM64:-0}" = 1 ]; then
  skip_stage arm64 "LAUNCHGUARD_SKIP_ARM64=1"
elif [ "$parallel" = 1 ]; then
  mkdir -p "$build_dir"
  echo "== test.sh: arm64 runs beside the native stages (output: $arm64_log)"
  arm64_started=$SECONDS
  # A session of its own, so that a failed native stage ends all of it.
  setsid scripts/test-arm64.sh > "$arm64_log" 2>&1 &
  arm64_pid=$!
fi
# Waits for the arm64 stage started beside the others and records it as a stage.
finish_arm64() {
  [ -n "$arm64_pid" ] || return 0
  local status=0 result=ok took
  wait "$arm64_pid" || status=$?
  arm64_pid=""
  took="$(duration $((SECONDS - arm64_started)))"
  cat "$arm64_log"
  [ "$status" -eq 0 ] || result="failed (exit $status)"
  stage_names+=("arm64 (beside)")
  stage_times+=("$took")
  stage_results+=("$result")
  echo "== test.sh: arm64 (beside): $result in $took"
  return "$status"
}
# ON explicitly: a build directory scripts/check-this-machine.sh configured has them off.
# The project's own code builds without a warning here (and so in CI).
run_stage build scripts/build.sh -DLAUNCHGUARD_BUILD_TESTS=ON -DLAUNCHGUARD_BUILD_BENCH=ON \
  -DLAUNCHGUARD_WARNINGS_AS_ERRORS=ON
# npm: Kubernetes API schemas and helm, into the build dir.
run_stage "test tools" scripts/install-test-tools.sh
run_stage ctest ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j "$(nproc)"

if [ "${LAUNCHGUARD_SKIP_ARM64:-0}" != 1 ] && [ "$parallel" != 1 ]; then
  run_stage arm64 scripts/test-arm64.sh
fi

# The same tests (less the Slurm daemons) built with clang, ASan and UBSan,
# and every parser's libFuzzer target for a bounded time; see
# scripts/sanitize.sh. LAUNCHGUARD_SKIP_SANITIZE=1 skips it for a quick run.
if [ "${LAUNCHGUARD_SKIP_SANITIZE:-0}" != 1 ]; then
  run_stage sanitize scripts/sanitize.sh
else
  skip_stage sanitize "LAUNCHGUARD_SKIP_SANITIZE=1"
fi
finish_arm64
