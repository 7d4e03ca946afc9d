#!/usr/bin/env bash
# Builds the launchguard-webhook image (the Containerfile) for amd64, arm64 or
# both from binaries built already, and a manifest list that names them, with
# buildah:
#
#   scripts/build-image.sh [--arch ARCH]... [--tag NAME] [--storage DIR]
#     --arch     amd64 (./build, or $LAUNCHGUARD_BUILD_DIR) and/or arm64
#                (./build-arm64, or $LAUNCHGUARD_ARM64_BUILD_DIR: the cross build of
#                scripts/test-arm64.sh --packages); both by default
#     --tag      the manifest list's name (default
#                localhost/launchguard-webhook:VERSION); each image is NAME-ARCH
#     --storage  buildah's storage under DIR (vfs driver), not the machine's
#
# No RUN step runs for either architecture: deploy/image/make-rootfs.sh lays
# out the root filesystem here (for arm64 from the sysroot's libraries,
# scripts/arm64-sysroot.sh) and replaces the Containerfile's build stage
# (--build-context rootfs=DIR), and the remaining stages only COPY. So no
# arm64 emulation (binfmt_misc) is needed to build the arm64 image.
#
# Push both with: buildah manifest push --all NAME docker://REGISTRY/launchguard-webhook:VERSION
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "build-image.sh: $*" >&2; exit 2; }
arches=()
tag=""
storage=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --arch) [ "$#" -ge 2 ] || die "--arch needs amd64 or arm64"; arches+=("$2"); shift 2 ;;
    --tag) [ "$#" -ge 2 ] || die "--tag needs a name"; tag=$2; shift 2 ;;
    --storage)
      [ "$#" -ge 2 ] || die "--storage needs a directory"
      storage=(--root "$2/storage" --runroot "$2/run" --storage-driver vfs)
      shift 2 ;;
    *) die "unknown argument '$1'" ;;
  esac
done
[ "${#arches[@]}" -gt 0 ] || arches=(amd64 arm64)
version=$(sed -n 's/^project(launchguard VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[ -n "$tag" ] || tag="localhost/launchguard-webhook:$version"
command -v buildah >/dev/null || die "buildah not found (scripts/install-deps.sh --with-test-tools)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
images=()
for arch in "${arches[@]}"; do
  case "$arch" in
    amd64)
      build="${LAUNCHGUARD_BUILD_DIR:-build}"
      rootfs_args=() ;;
    arm64)
      build="${LAUNCHGUARD_ARM64_BUILD_DIR:-build-arm64}"
      grep -q '^CMAKE_TOOLCHAIN_FILE:.*aarch64-linux-gnu\.cmake$' "$build/CMakeCache.txt" 2>/dev/null ||
        die "$build is not an aarch64 cross build (scripts/test-arm64.sh --packages)"
      rootfs_args=(--sysroot "${LAUNCHGUARD_ARM64_SYSROOT:-build-arm64-sysroot}") ;;
    *) die "--arch: amd64 or arm64, not '$arch'" ;;
  esac
  cli="$build/src/cli/launchguard"
  webhook="$build/webhook/launchguard-webhook"
  gate="$build/gate/launchguard-gate"
  [ -x "$cli" ] && [ -x "$webhook" ] && [ -x "$gate" ] || die "$arch: build $cli, $webhook and $gate first"
  deploy/image/make-rootfs.sh "${rootfs_args[@]}" "$work/rootfs-$arch" "$cli" "$webhook" "$gate"
  buildah "${storage[@]}" rmi --force "$tag-$arch" >/dev/null 2>&1 || true
  buildah "${storage[@]}" bud --isolation chroot --arch "$arch" --os linux --build-context "rootfs=$work/rootfs-$arch" \
    --file Containerfile --tag "$tag-$arch" .
  images+=("$tag-$arch")
done

buildah "${storage[@]}" manifest rm "$tag" >/dev/null 2>&1 || true
buildah "${storage[@]}" manifest create "$tag"
for image in "${images[@]}"; do
  buildah "${storage[@]}" manifest add "$tag" "containers-storage:$image"
done
buildah "${storage[@]}" manifest inspect "$tag"
echo "build-image.sh: $tag: ${images[*]}"
