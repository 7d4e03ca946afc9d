#!/usr/bin/env bash
# static_binary_test.sh GATE [STRIP [EMULATOR...]]: the launch gate runs in any container image,
# so it must load nothing from it: `file` says "statically linked" and the
# ELF has no program interpreter. Stripped (as the image and the package
# carry it) it is at most 15 MB, what the contract with the webhook's
# injection allows for its emptyDir volume (sizeLimit 32Mi).
# STRIP is the build's strip (CMAKE_STRIP: the cross binutils' for the aarch64
# build, whose ELF the host's strip cannot write), and EMULATOR the command
# that runs the build's programs (CMAKE_CROSSCOMPILING_EMULATOR: qemu for the
# aarch64 build), empty for a native build.
set -euo pipefail
gate=$1
strip_tool=${2:-strip}
emulator=("${@:3}")
limit=$((15 * 1000 * 1000))
fail=0
description=$(file -b "$gate")
case "$description" in
  *"statically linked"*) echo "PASS: file says statically linked" ;;
  *) echo "FAIL: file says: $description"; fail=1 ;;
esac
if readelf -l "$gate" | grep -q "Requesting program interpreter"; then
  echo "FAIL: it names a program interpreter (a dynamic loader)"; fail=1
else
  echo "PASS: no program interpreter"
fi
stripped=$(mktemp)
trap 'rm -f "$stripped"' EXIT
"$strip_tool" --strip-unneeded -o "$stripped" "$gate"
size=$(stat -c %s "$stripped")
if [ "$size" -le "$limit" ]; then
  echo "PASS: stripped size $size bytes <= $limit"
else
  echo "FAIL: stripped size $size bytes > $limit"; fail=1
fi
# The stripped copy runs (no symbol it needs was only in what strip removed).
"${emulator[@]}" "$stripped" run --mode off -- /bin/true || { echo "FAIL: the stripped copy does not run"; fail=1; }
exit "$fail"
