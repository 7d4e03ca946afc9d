#!/usr/bin/env bash
# The main job: set up a fresh Debian 12 machine, build launchguard, and check
# this machine on the embedded default profile. Extra arguments go to
# `launchguard check` (e.g. --format json, --profile h100-cx7-ib).
# Exit code is launchguard's: 0 allow, 1 block, 2 bad input, 3 would patch.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh >/dev/null
echo "== launchguard check (embedded default profile) =="
exec "${LAUNCHGUARD_BUILD_DIR:-build}/src/cli/launchguard" check "$@"
