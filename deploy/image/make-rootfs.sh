#!/usr/bin/env bash
# make-rootfs.sh OUT BINARY... — the whole root filesystem of the launchguard
# image in the directory OUT: each BINARY stripped into OUT/usr/bin, every
# shared library it loads (ldd) at the path the loader looks for it, the
# Debian copyright file of each library's package, /etc/passwd and /etc/group
# with root and nonroot (65532), and /tmp.
#
# Runs in the Containerfile's build stage and, for the test suite, on the
# machine that built the binaries (tests/integration/image/): both are Debian
# 12, whose merged /usr this layout mirrors (/lib and /lib64 are links into
# /usr). OUT must not exist yet, so a stale library can never slip in.
set -euo pipefail

die() { echo "make-rootfs.sh: $*" >&2; exit 2; }
[ "$#" -ge 2 ] || die "usage: make-rootfs.sh OUT BINARY..."
out=$1; shift
[ ! -e "$out" ] || die "$out already exists"
for tool in ldd strip dpkg-query; do
  command -v "$tool" >/dev/null || die "$tool not found (Debian packages libc-bin, binutils, dpkg)"
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

for binary in "$@"; do
  [ -f "$binary" ] && [ -x "$binary" ] || die "$binary is not an executable file"
  install -m 0755 "$binary" "$out/usr/bin/"
  strip --strip-unneeded "$out/usr/bin/$(basename "$binary")"
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
