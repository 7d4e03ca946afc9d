#!/usr/bin/env bash
# Configures and builds launchguard into ./build (or $LAUNCHGUARD_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${LAUNCHGUARD_BUILD_DIR:-build}"
jobs="$(nproc)"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" "$@"
cmake --build "$build_dir" -j "$jobs"
