#!/usr/bin/env bash
# Fails when a tracked C or C++ source differs from what clang-format makes of
# it (.clang-format at the top). scripts/test.sh runs it first, so CI does too.
# Usage: scripts/check-format.sh [--fix]   (--fix rewrites the files instead)
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format="${CLANG_FORMAT:-clang-format-14}"
command -v "$clang_format" >/dev/null || { echo "check-format: $clang_format not found (apt-get install clang-format-14)" >&2; exit 2; }
mapfile -t sources < <(git ls-files -- '*.c' '*.cpp' '*.h' ':!:tests/fixtures/**')
if [ "${1:-}" = --fix ]; then
  "$clang_format" -i "${sources[@]}"
  exit 0
fi
report=$(mktemp)
trap 'rm -f "$report"' EXIT
if ! "$clang_format" --dry-run --Werror "${sources[@]}" 2> "$report"; then
  grep -E '^[^ ].*: (error|warning):' "$report" | cut -d: -f1 | sort -u | sed 's/^/  not formatted: /' >&2
  echo "check-format: run scripts/check-format.sh --fix (clang-format $("$clang_format" --version | grep -oE '[0-9]+\.[0-9.]+' | head -1))" >&2
  exit 1
fi
echo "check-format: ${#sources[@]} files formatted"
scripts/check-public-copies.sh
