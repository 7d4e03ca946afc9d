#!/usr/bin/env bash
# Fails when a tracked file's bytes equal a file of the public fixtures
# (LAUNCHGUARD_SHARED_FIXTURES, by default ../shared/fixtures beside the
# project): the repository never carries a copy of a public file; tests read
# them from there (tests/fixtures/README.md). scripts/check-format.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
shared="${LAUNCHGUARD_SHARED_FIXTURES:-../shared/fixtures}"
if [ ! -d "$shared" ]; then
  echo "check-public-copies: skipped: $shared not found (set LAUNCHGUARD_SHARED_FIXTURES)"
  exit 0
fi
declare -A public
while read -r hash file; do
  public["$hash"]="${file#"$shared"/}"
done < <(find "$shared" -type f -print0 | xargs -0 sha256sum)
copies=0
tracked=0
# Regular files only: a symlink is not a copy, and a deleted file is not there.
while read -r hash file; do
  tracked=$((tracked + 1))
  if [ -n "${public[$hash]:-}" ]; then
    echo "  copy of a public fixture: $file = $shared/${public[$hash]}" >&2
    copies=$((copies + 1))
  fi
done < <(git ls-files -z | while IFS= read -r -d '' f; do [ -f "$f" ] && [ ! -L "$f" ] && printf '%s\0' "$f"; done |
         xargs -0 sha256sum)
if [ "$copies" -gt 0 ]; then
  echo "check-public-copies: $copies tracked files are copies of public fixtures: delete them and read them from LAUNCHGUARD_SHARED_FIXTURES" >&2
  exit 1
fi
echo "check-public-copies: none of $tracked tracked files copies one of the ${#public[@]} public fixtures"
