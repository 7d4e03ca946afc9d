#!/usr/bin/env bash
# Builds the aarch64 sysroot that cmake/toolchains/aarch64-linux-gnu.cmake
# compiles and links against: Debian 12's arm64 development packages (and
# everything they depend on), downloaded with apt-get and unpacked with
# dpkg-deb -x into ./build-arm64-sysroot (or $1).
#
# Why a sysroot and not `dpkg --add-architecture arm64` with -dev:arm64
# packages installed next to the amd64 ones: several of the packages the
# project needs are not co-installable across architectures in Debian 12
# (libslurm-dev, libhwloc-dev, libbenchmark-dev and the Boost -dev packages
# that depend on arch-specific packages of the same name), so installing them
# would remove their amd64 versions. The sysroot touches nothing installed:
# apt runs with its own state directory and an architecture of arm64.
#
# Needs no root. Idempotent: does nothing when the sysroot was built from the
# same package list. Needs the network (deb.debian.org) the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
sysroot="$(realpath -m "${1:-build-arm64-sysroot}")"

# The amd64 names of scripts/install-deps.sh, for arm64. libc6-dev and
# libstdc++-12-dev come in as dependencies: the sysroot is complete, so the
# cross compiler finds every header and library in it.
packages=(
  libc6-dev libstdc++-12-dev
  libboost1.81-dev libboost-json1.81-dev
  libssl-dev libspdlog-dev libfmt-dev
  libhwloc-dev
  libyaml-cpp-dev libcli11-dev
  libgtest-dev libgmock-dev
  libslurm-dev
)
stamp="$sysroot/.launchguard-packages"
wanted="${packages[*]}"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
  echo "arm64-sysroot: $sysroot is up to date"
  exit 0
fi

apt_dir="$sysroot.apt"
rm -rf "$sysroot" "$apt_dir"
mkdir -p "$apt_dir"/{lists/partial,archives/partial,etc/sources.list.d,etc/preferences.d,etc/apt.conf.d} "$sysroot"
: >"$apt_dir/status"
# The suites this machine uses (scripts/install-deps.sh), for arm64 only.
cat >"$apt_dir/etc/sources.list" <<'EOF'
deb [arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
deb [arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-updates main
deb [arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main
EOF
apt_opts=(
  -o APT::Architecture=arm64 -o APT::Architectures::=arm64
  -o Dir::Etc="$apt_dir/etc" -o Dir::Etc::SourceList="$apt_dir/etc/sources.list"
  -o Dir::Etc::SourceParts="$apt_dir/etc/sources.list.d" -o Dir::Etc::Parts="$apt_dir/etc/apt.conf.d"
  -o Dir::Etc::PreferencesParts="$apt_dir/etc/preferences.d" -o Dir::Etc::TrustedParts=/etc/apt/trusted.gpg.d
  -o Dir::State="$apt_dir" -o Dir::State::Lists="$apt_dir/lists" -o Dir::State::status="$apt_dir/status"
  -o Dir::Cache="$apt_dir" -o Dir::Cache::Archives="$apt_dir/archives"
  -o Debug::NoLocking=1 -o APT::Install-Recommends=0 -o APT::Sandbox::User=root
)
echo "arm64-sysroot: downloading ${packages[*]} and their dependencies (arm64)"
apt-get "${apt_opts[@]}" update -qq
# With an empty status every dependency is "missing", so --download-only
# fetches the whole closure.
apt-get "${apt_opts[@]}" install -y -qq --download-only "${packages[@]}" >/dev/null

# Which package ships each shared library, and its version: what
# dpkg-shlibdeps would ask this machine's dpkg database, which holds none of
# these. cmake/CrossDebDepends.cmake turns it into the Depends of the arm64
# packages. Lines: SONAME PACKAGE VERSION.
shlibs="$sysroot/.launchguard-shlibs"
: >"$shlibs.tmp"
count=0
for deb in "$apt_dir"/archives/*.deb; do
  dpkg-deb -x "$deb" "$sysroot"
  package=$(dpkg-deb -f "$deb" Package)
  version=$(dpkg-deb -f "$deb" Version)
  dpkg-deb -c "$deb" | awk '{print $6}' | sed -n 's|.*/\([^/]*\.so\.[0-9][^/]*\)$|\1|p' \
    | while read -r soname; do echo "$soname $package $version"; done >>"$shlibs.tmp"
  count=$((count + 1))
done
# Debian 12 is /usr-merged: /lib is a link to usr/lib on a real system, and
# some packages still ship files under /lib. Merge them the same way.
for dir in lib lib64 bin sbin; do
  if [ -d "$sysroot/$dir" ] && [ ! -L "$sysroot/$dir" ]; then
    mkdir -p "$sysroot/usr/$dir"
    cp -a "$sysroot/$dir/." "$sysroot/usr/$dir/"
    rm -rf "${sysroot:?}/$dir"
  fi
  [ -e "$sysroot/$dir" ] || ln -s "usr/$dir" "$sysroot/$dir"
done
# Absolute links (libfoo.so -> /lib/aarch64-linux-gnu/libfoo.so.1) would point
# into this machine: make them relative, inside the sysroot.
while IFS= read -r -d '' link; do
  target="$(readlink "$link")"
  case "$target" in
    /*) ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$sysroot$target")" "$link" ;;
  esac
done < <(find "$sysroot" -type l -print0)
# Only headers, libraries and their CMake/pkg-config files are used. The
# programs, documentation and configuration go: qemu-aarch64 -L looks up every
# absolute path in the sysroot first, so a /usr/bin/dpkg or /etc/perl there
# would shadow this machine's for the emulated tests.
rm -rf "${sysroot:?}"/{bin,sbin,var,usr/bin,usr/sbin,usr/libexec,usr/src} "$sysroot"/usr/lib/aarch64-linux-gnu/perl*
find "$sysroot/etc" -mindepth 1 -maxdepth 1 ! -name 'ld.so.conf*' -exec rm -rf {} +
# usr/share/doc keeps each package's copyright file: the arm64 image carries
# those of the libraries it holds (deploy/image/make-rootfs.sh).
find "$sysroot/usr/share" -mindepth 1 -maxdepth 1 ! -name cmake ! -name pkgconfig ! -name gcc ! -name doc \
  -exec rm -rf {} +
find "$sysroot/usr/share/doc" -mindepth 2 ! -name copyright -exec rm -rf {} + 2>/dev/null || true
sort -u "$shlibs.tmp" >"$shlibs" && rm -f "$shlibs.tmp"
rm -rf "$apt_dir"
echo "$wanted" >"$stamp"
echo "arm64-sysroot: $count packages unpacked into $sysroot ($(du -sh "$sysroot" | cut -f1))"
