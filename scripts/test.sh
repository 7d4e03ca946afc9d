#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine and runs every test: unit tests, CLI
# tests, the integration tests that start real services (munged,
# slurmctld, slurmd), then the sanitizer build of the unit and CLI tests and
# the fuzzers (scripts/sanitize.sh). Needs root for the Slurm daemons and apt.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --with-slurm
scripts/build.sh
build_dir="${LAUNCHGUARD_BUILD_DIR:-build}"
# Offline Kubernetes API schemas for the webhook tests (npm registry).
if [ ! -d "$build_dir/npm/node_modules/kubernetes-models" ]; then
  npm install --no-audit --no-fund --loglevel=error --prefix "$build_dir/npm" kubernetes-models@5.1.0
fi
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j "$(nproc)"

# The same tests (less the Slurm daemons) built with clang, ASan and UBSan,
# and every parser's libFuzzer target for a bounded time; see
# scripts/sanitize.sh. LAUNCHGUARD_SKIP_SANITIZE=1 skips it for a quick run.
if [ "${LAUNCHGUARD_SKIP_SANITIZE:-0}" != 1 ]; then
  scripts/sanitize.sh
fi
