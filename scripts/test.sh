#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine and runs every test: unit tests, CLI
# tests, and the integration tests that start real services (munged,
# slurmctld, slurmd). Needs root for the Slurm daemons and apt.
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
