#!/usr/bin/env bash
# make-rootfs.sh [--sysroot DIR] OUT BINARY... — the whole root filesystem of the launchguard
# image in the directory OUT: each BINARY stripped into OUT/usr/bin, every
# shared library it loads (ldd; none for the static launchguard-gate) at the path the loader looks for it, the
# Debian copyright file of each library's package, /etc/passwd and /etc/group
# with root and nonroot (65532), and /tmp.
#
# Runs in the Containerfile's build stage and, for the test suite, on the
# machine that built the binaries (tests/integration/image/): both are Debian
# 12, whose merged /usr this layout mirrors (/lib and /lib64 are links into
# /usr). OUT must not exist yet, so a stale library can never slip in.
#
# With --sysroot, the binaries are another architecture's (the aarch64 cross
# build, cmake/toolchains/aarch64-linux-gnu.cmake), which ldd cannot run: the
# libraries are the sysroot's, found by following readelf's NEEDED entries,
# their packages and copyright files come from the sysroot too
# (scripts/arm64-sysroot.sh), and the tools are the cross binutils
# ($READELF, $STRIP; aarch64-linux-gnu-readelf and -strip by default).
set -euo pipefail

die() { echo "make-rootfs.sh: $*" >&2; exit 2; }
sysroot=""
if [ "${1:-}" = "--sysroot" ]; then
  [ "$#" -ge 2 ] || die "--sysroot needs a directory"
  sysroot=$(cd "$2" && pwd -P) || die "no sysroot $2"
  shift 2
fi
[ "$#" -ge 2 ] || die "usage: make-rootfs.sh [--sysroot DIR] OUT BINARY..."
out=$1; shift
[ ! -e "$out" ] || die "$out already exists"
if [ -n "$sysroot" ]; then
  strip_tool=${STRIP:-aarch64-linux-gnu-strip}
  readelf_tool=${READELF:-aarch64-linux-gnu-readelf}
  tools=("$strip_tool" "$readelf_tool")
  [ -f "$sysroot/.launchguard-shlibs" ] || die "$sysroot has no .launchguard-shlibs (scripts/arm64-sysroot.sh)"
else
  strip_tool=strip
  tools=(ldd strip dpkg-query)
fi
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null || die "$tool not found (Debian packages libc-bin, binutils, dpkg, binutils-aarch64-linux-gnu)"
done

mkdir -p "$out/usr/bin" "$out/usr/lib" "$out/usr/lib64" "$out/etc" "$out/usr/share/doc"
ln -s usr/lib "$out/lib"
ln -s usr/lib64 "$out/lib64"
ln -s usr/bin "$out/bin"
install -d -m 1777 "$out/tmp"

# Copies FILE (a library as ldd names it) to the same path under OUT, written
# through the merged-/usr links above; its package's copyright file follows.
copy_library() {
  local path=$1 dir real package
  dir=$(cd "$(dirname "$path")" && pwd -P)
  real="$dir/$(basename "$path")"
  [ -e "$out$real" ] && return 0
  mkdir -p "$out$dir"
  cp -L "$path" "$out$real"
  # dpkg knows a library by the path its package shipped, /lib or /usr/lib.
  package=$(dpkg-query -S "$path" 2>/dev/null || dpkg-query -S "$real" 2>/dev/null) \
    || die "$path belongs to no Debian package: cannot tell its licence"
  package=${package%%:*}
  if [ -f "/usr/share/doc/$package/copyright" ] && [ ! -e "$out/usr/share/doc/$package" ]; then
    install -D -m 0644 "/usr/share/doc/$package/copyright" "$out/usr/share/doc/$package/copyright"
  fi
}

# The sysroot's copy of what a binary loads, the loader first, then every
# library its NEEDED entries name, theirs in turn, each once: "SYSROOT-PATH
# IMAGE-PATH" lines. The loader resolves them in the multiarch directories.
declare -A sysroot_seen
sysroot_libraries() {
  local file=$1 interpreter soname dir
  interpreter=$("$readelf_tool" -l "$file" | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')
  if [ -n "$interpreter" ] && [ -z "${sysroot_seen[$interpreter]:-}" ]; then
    sysroot_seen[$interpreter]=1
    [ -e "$sysroot$interpreter" ] || die "$file: its loader $interpreter is not in $sysroot"
    echo "$sysroot$interpreter $interpreter"
  fi
  for soname in $("$readelf_tool" -d "$file" | sed -n 's/.*Shared library: \[\(.*\)\]$/\1/p'); do
    [ -z "${sysroot_seen[$soname]:-}" ] || continue
    sysroot_seen[$soname]=1
    local found=""
    for dir in /usr/lib/aarch64-linux-gnu /lib/aarch64-linux-gnu /usr/lib /lib; do
      if [ -e "$sysroot$dir/$soname" ]; then found="$dir/$soname"; break; fi
    done
    [ -n "$found" ] || die "$file: $soname is not in $sysroot"
    echo "$sysroot$found $found"
    sysroot_libraries "$sysroot$found"
  done
}

# A sysroot library at IMAGE-PATH in OUT (written through the merged-/usr
# links), and the copyright file of the sysroot package that ships it. A file
# wanted under a second path (the loader: /lib/ld-linux-aarch64.so.1 and
# /usr/lib/aarch64-linux-gnu/) is a link to the first copy.
declare -A sysroot_copied
copy_sysroot_library() {
  local from=$1 path=$2 soname package real
  [ -e "$out$path" ] && return 0
  mkdir -p "$out$(dirname "$path")"
  real=$(realpath "$from")
  if [ -n "${sysroot_copied[$real]:-}" ]; then
    ln -s "$(realpath -m --relative-to="$(dirname "$path")" "${sysroot_copied[$real]}")" "$out$path"
    return 0
  fi
  sysroot_copied[$real]=$path
  cp -L "$from" "$out$path"
  soname=$(basename "$path")
  package=$(awk -v s="$soname" '$1 == s {print $2; exit}' "$sysroot/.launchguard-shlibs")
  [ -n "$package" ] || die "$soname belongs to no package of $sysroot: cannot tell its licence"
  if [ -f "$sysroot/usr/share/doc/$package/copyright" ] && [ ! -e "$out/usr/share/doc/$package" ]; then
    install -D -m 0644 "$sysroot/usr/share/doc/$package/copyright" "$out/usr/share/doc/$package/copyright"
  fi
}

for binary in "$@"; do
  [ -f "$binary" ] && [ -x "$binary" ] || die "$binary is not an executable file"
  install -m 0755 "$binary" "$out/usr/bin/"
  "$strip_tool" --strip-unneeded "$out/usr/bin/$(basename "$binary")"
  if [ -n "$sysroot" ]; then
    sysroot_libraries "$binary" >"$out/.libraries"
    while read -r from path; do copy_sysroot_library "$from" "$path"; done <"$out/.libraries"
    rm -f "$out/.libraries"
    continue
  fi
  # A static executable (launchguard-gate) loads nothing.
  ldd_output=$(LC_ALL=C ldd "$binary" 2>&1 || true)
  case "$ldd_output" in *"not a dynamic executable"* | *"statically linked"*) continue ;; esac
  # ldd lines: "libfoo.so.1 => /usr/lib/.../libfoo.so.1 (0x...)" and the
  # loader itself as "/lib64/ld-linux-x86-64.so.2 (0x...)"; linux-vdso has no file.
  libraries=$(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
  ! ldd "$binary" | grep -q "not found" || die "$binary: $(ldd "$binary" | grep "not found" | head -1)"
  for library in $libraries; do copy_library "$library"; done
done

cat >"$out/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/usr/sbin/nologin
nonroot:x:65532:65532:nonroot:/nonexistent:/usr/sbin/nologin
PASSWD
cat >"$out/etc/group" <<'GROUP'
root:x:0:
nonroot:x:65532:
GROUP
chmod 0644 "$out/etc/passwd" "$out/etc/group"
