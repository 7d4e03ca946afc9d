#!/usr/bin/env bash
# What each SPANK file makes the process that loads it load (docs/performance.md):
#  - spank_launchguard.so and spank_launchguard_prolog.so (srun, sbatch, salloc,
#    slurmstepd): libc and libm only, no C++ runtime, none of the checks;
#  - spank_launchguard_core.so (the checks for embedded and compiled profiles):
#    no shared C++ runtime, no yaml-cpp, no libboost_json; hwloc, which
#    slurmstepd holds already;
#  - spank_launchguard_core_yaml.so (a YAML profile): yaml-cpp, so the choice
#    between the two is real.
# And both cores export nothing but the entry point, and resolve every symbol
# they use except Slurm's and libc's.
set -uo pipefail
dir=${1:?usage: core_dependencies_test.sh PLUGIN_DIR}
fails=0
passes=0
pass() { echo "PASS: $*"; passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
needed() { readelf -d "$dir/$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' '; }

for small in spank_launchguard.so spank_launchguard_prolog.so; do
  libs=$(needed "$small")
  if [ -n "$libs" ] && ! grep -qvE '^(libc|libm|ld-linux-x86-64)\.so' <<<"$(tr ' ' '\n' <<<"$libs" | sed '/^$/d')"; then
    pass "$small needs only: $libs"
  else
    fail "$small needs: $libs"
  fi
done

# None of the checks either: one call into an object file that also holds a
# profile reader once linked the whole rule registry, Boost.JSON and their
# static initialisers into srun (docs/performance.md).
for small in spank_launchguard.so spank_launchguard_prolog.so; do
  checks=$(nm -C "$dir/$small" | grep -cE 'launchguard::(all_rules|register_[a-z_]+_rules|evaluate|parse_profile_json)|boost::json' || true)
  text=$(size -A "$dir/$small" | awk '$1 == ".text" {print $2}')
  if [ "$checks" -eq 0 ] && [ "${text:-0}" -lt 400000 ]; then
    pass "$small carries none of the checks (.text $text bytes)"
  else
    fail "$small carries $checks symbols of the checks or Boost.JSON (.text ${text:-?} bytes)"
  fi
done

libs=$(needed spank_launchguard_core.so)
if grep -qE 'libstdc\+\+|libyaml-cpp|libboost_json|libgcc_s' <<<"$libs"; then
  fail "spank_launchguard_core.so needs: $libs"
else
  pass "spank_launchguard_core.so needs: $libs"
fi
if nm -D --undefined-only "$dir/spank_launchguard_core.so" | grep -E ' U .*(YAML|_ZNSt|_ZSt|boost)' | head -5 | grep -q .; then
  fail "spank_launchguard_core.so leaves C++ or YAML symbols unresolved: $(nm -D --undefined-only "$dir/spank_launchguard_core.so" | grep -E ' U .*(YAML|_ZNSt|_ZSt|boost)' | head -3 | tr '\n' ' ')"
else
  pass "spank_launchguard_core.so resolves its C++ runtime, Boost.JSON and profiles itself"
fi
libs=$(needed spank_launchguard_core_yaml.so)
if grep -q 'libyaml-cpp' <<<"$libs"; then
  pass "spank_launchguard_core_yaml.so needs yaml-cpp: $libs"
else
  fail "spank_launchguard_core_yaml.so does not need yaml-cpp: $libs"
fi
for core in spank_launchguard_core.so spank_launchguard_core_yaml.so; do
  exported=$(nm -D --defined-only "$dir/$core" | awk '$2 ~ /^[TDBVWR]$/ {print $3}' | tr '\n' ' ')
  if [ "$exported" = "launchguard_core_entry " ]; then
    pass "$core exports only launchguard_core_entry"
  else
    fail "$core exports: ${exported:0:300}"
  fi
done
echo "=== core dependencies: $passes passed, $fails failed ==="
[ "$fails" -eq 0 ]
