#!/usr/bin/env bash
# Runs the GoogleTest cases of launchguard_unit_tests (ctest label
# unit_binary) as one process per core, each a GoogleTest shard
# (GTEST_TOTAL_SHARDS, GTEST_SHARD_INDEX), instead of one process per test as
# ctest does. Under qemu-user one start of the aarch64 test binary costs about
# a second, and in the sanitizer build each start pays ASan's set-up: a
# thousand starts cost more than the tests. scripts/test-arm64.sh and
# scripts/sanitize.sh run the other tests through ctest with -LE unit_binary.
#
# Usage: scripts/run-unit-shards.sh BUILD_DIR [EXCLUDE_REGEX]
#   EXCLUDE_REGEX: ctest's -E, for tests this build cannot run
#
# What a shard runs is what ctest would: the command, working directory and
# environment come from ctest's own list (ctest --show-only=json-v1, as
# gtest_discover_tests wrote it, the emulator of a cross build included),
# less each test's --gtest_filter; the tests EXCLUDE_REGEX takes out become a
# negative filter. The run fails when the shards did not run exactly the tests
# ctest lists. A shard that runs past $LAUNCHGUARD_SHARD_TIMEOUT seconds (900,
# ctest's --timeout in these stages) is ended by timeout(1). A failure prints
# each failed test's output and the command that reruns it alone. The shards'
# full output stays in BUILD_DIR/unit-shards/. Needs python3 (ctest's JSON).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:?usage: scripts/run-unit-shards.sh BUILD_DIR [EXCLUDE_REGEX]}"
excluded="${2:-}"
shards="${LAUNCHGUARD_UNIT_SHARDS:-$(nproc)}"
shard_timeout="${LAUNCHGUARD_SHARD_TIMEOUT:-900}"
log_dir="$build_dir/unit-shards"
rm -rf "$log_dir"
mkdir -p "$log_dir"

# ctest's view of the tests: all of them, and those left after -E.
ctest --test-dir "$build_dir" -L unit_binary --show-only=json-v1 > "$log_dir/all.json"
exclude_args=()
[ -z "$excluded" ] || exclude_args=(-E "$excluded")
ctest --test-dir "$build_dir" -L unit_binary "${exclude_args[@]}" --show-only=json-v1 > "$log_dir/run.json"
# Writes, as bash: the command without its --gtest_filter, the working
# directory, the environment, how many tests run and the negative filter.
python3 - "$log_dir/all.json" "$log_dir/run.json" > "$log_dir/plan.sh" <<'EOF'
import json, shlex, sys

def tests(path):
    with open(path) as f:
        return json.load(f)["tests"]

def properties(test):
    return {p["name"]: p["value"] for p in test.get("properties", [])}

def gtest_name(test):
    filters = [a for a in test["command"] if a.startswith("--gtest_filter=")]
    if len(filters) != 1:
        sys.exit(f"run-unit-shards: {test['name']} has no single --gtest_filter: {test['command']}")
    return filters[0].split("=", 1)[1]

def base(test):
    # Less --gtest_also_run_disabled_tests too: ctest marks a DISABLED_ test
    # disabled and does not run it, so neither does a shard.
    p = properties(test)
    command = [a for a in test["command"]
               if not a.startswith("--gtest_filter=") and a != "--gtest_also_run_disabled_tests"]
    return command, p.get("WORKING_DIRECTORY", ""), p.get("ENVIRONMENT", [])

all_tests, run_tests = tests(sys.argv[1]), tests(sys.argv[2])
if not run_tests:
    sys.exit("run-unit-shards: ctest lists no test labelled unit_binary (is launchguard_unit_tests built?)")
command, workdir, environment = base(run_tests[0])
for test in all_tests:
    if base(test) != (command, workdir, environment):
        sys.exit(f"run-unit-shards: {test['name']} does not run as {command} in {workdir}: "
                 "the tests labelled unit_binary must all be cases of one binary")
if not workdir:
    sys.exit("run-unit-shards: ctest gives the unit tests no WORKING_DIRECTORY")
run_names = {t["name"] for t in run_tests}
skipped = sorted(gtest_name(t) for t in all_tests if t["name"] not in run_names)
print("command=(" + " ".join(shlex.quote(a) for a in command) + ")")
print("workdir=" + shlex.quote(workdir))
binary = run_tests[0]["command"][run_tests[0]["command"].index("--gtest_filter=" + gtest_name(run_tests[0])) - 1]
print("binary=" + shlex.quote(binary))
print("environment=(" + " ".join(shlex.quote(e) for e in environment) + ")")
print(f"expected={len(run_tests)}")
print("gtest_filter=" + shlex.quote("-" + ":".join(skipped) if skipped else "*"))
EOF
command=() environment=() workdir="" binary="" expected=0 gtest_filter="*"
# shellcheck source=/dev/null
source "$log_dir/plan.sh"

# The command that reruns one test alone through ctest: its name escaped, and
# ctest's "  # GetParam() = ..." after a parameterized test's name allowed.
rerun_hint() {
  local regex
  regex="^$(printf '%s' "$1" | sed 's/[][\.*^$+?(){}|/]/\\&/g')( |\$)"
  case "$regex" in
    *"'"*) printf '  rerun it: ctest --test-dir %q -R %q --output-on-failure\n' "$build_dir" "$regex" ;;
    *) printf "  rerun it: ctest --test-dir %q -R '%s' --output-on-failure\n" "$build_dir" "$regex" ;;
  esac
}

echo "run-unit-shards: $expected tests of $binary in $shards processes (in $workdir)"
started=$SECONDS
pids=()
for ((i = 0; i < shards; i++)); do
  (
    cd "$workdir"
    env "${environment[@]}" GTEST_TOTAL_SHARDS="$shards" GTEST_SHARD_INDEX="$i" \
      timeout --kill-after=30 "$shard_timeout" "${command[@]}" --gtest_filter="$gtest_filter" </dev/null
  ) > "$log_dir/shard-$i.log" 2>&1 &
  pids+=($!)
done

failed=0
ran=0
# A test's end: "[       OK ] Suite.Test (12 ms)", FAILED or SKIPPED likewise.
end_line='^\[ +(OK|FAILED|SKIPPED) +\] .* \([0-9]+ ms\)$'
for ((i = 0; i < shards; i++)); do
  status=0
  wait "${pids[$i]}" || status=$?
  log="$log_dir/shard-$i.log"
  ended=$(grep -cE "$end_line" "$log" || true)
  ran=$((ran + ended))
  echo "run-unit-shards: shard $((i + 1)) of $shards: $ended tests, exit $status, after $((SECONDS - started)) s"
  mapfile -t failed_tests < <(grep -E '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$log" | sed -E 's/^\[  FAILED  \] //; s/(, where .*)? \([0-9]+ ms\)$//')
  for test in "${failed_tests[@]}"; do
    echo "---- FAILED: $test (shard $((i + 1)), $log)"
    awk -v run="[ RUN      ] $test" 'index($0, run) == 1 {on = 1} on {print} on && /^\[  FAILED  \]/ {exit}' "$log"
    rerun_hint "$test"
  done
  # The last test started and never ended: it crashed the shard, or hung it.
  unfinished="$(awk '/^\[ RUN      \] / {t = substr($0, 14)} $0 ~ /^\[ +(OK|FAILED|SKIPPED) +\] / {t = ""} END {print t}' "$log")"
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "---- shard $((i + 1)) did not end within ${shard_timeout} s (LAUNCHGUARD_SHARD_TIMEOUT) and was stopped${unfinished:+, in $unfinished}"
  elif [ -n "$unfinished" ]; then
    echo "---- shard $((i + 1)) ended (exit $status) in $unfinished; its output from there:"
  fi
  if [ -n "$unfinished" ]; then
    awk -v run="[ RUN      ] $unfinished" 'index($0, run) == 1 {on = 1} on {print}' "$log" | tail -n 200
    rerun_hint "$unfinished"
  elif [ "$status" -ne 0 ] && [ "${#failed_tests[@]}" -eq 0 ]; then
    # Every test passed, yet the process failed: a report at exit (LeakSanitizer).
    echo "---- shard $((i + 1)) exited $status after its tests passed; the end of $log:"
    tail -n 80 "$log"
    printf -v shown '%q ' "${command[@]}"
    printf '  rerun the shard: (cd %q && GTEST_TOTAL_SHARDS=%s GTEST_SHARD_INDEX=%s %s--gtest_filter=%q)\n' \
      "$workdir" "$shards" "$i" "$shown" "$gtest_filter"
  fi
  [ "$status" -eq 0 ] || failed=1
done
if [ "$ran" -ne "$expected" ]; then
  echo "run-unit-shards: the shards ran $ran tests, ctest lists $expected" >&2
  failed=1
fi
echo "run-unit-shards: $ran of $expected tests in $((SECONDS - started)) s: $([ "$failed" -eq 0 ] && echo passed || echo FAILED)"
exit "$failed"
