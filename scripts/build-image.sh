#!/usr/bin/env bash
# Builds the small local OCI image the runc backend's tests and demo use, with no
# network but Debian's mirror: `debootstrap --variant=minbase bookworm` plus python3,
# trimmed, and turned into an OCI image layout with umoci.
#
#   scripts/build-image.sh            -> .work/images/debian-python (tag: latest)
#   INCLUDE_NODE=0 scripts/build-image.sh   without nodejs (JavaScript code contexts
#                                           need it; about -20 MB compressed)
#
# Use it in a create request as  {"image": {"uri": "oci:/abs/path/.work/images/debian-python:latest"}}.
# Cached: does nothing when the layout already holds the tag (delete the directory to
# rebuild). A built layout is also kept in $IMAGE_CACHE (default
# /var/cache/opensandbox/images), outside the checkout, so that a fresh clone on the same
# machine (CI) copies it instead of running debootstrap again.
# Needs root and the Debian packages debootstrap and umoci.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
IMAGES="${IMAGES_DIR:-$ROOT/.work/images}"
NAME="${IMAGE_NAME:-debian-python}"
TAG="${IMAGE_TAG:-latest}"
SUITE="${SUITE:-bookworm}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
LAYOUT="$IMAGES/$NAME"
IMAGE_CACHE="${IMAGE_CACHE:-/var/cache/opensandbox/images}"
INCLUDE_NODE="${INCLUDE_NODE:-1}"
include="python3-minimal,libpython3.11-stdlib"
[ "$INCLUDE_NODE" = 1 ] && include="$include,nodejs"
# What the image is made of: a layout built from another recipe is rebuilt (an image
# made before nodejs was added lacks what the conformance cases need).
RECIPE="$SUITE $include pyc"
CACHED="$IMAGE_CACHE/$SUITE-$NAME-node$INCLUDE_NODE"

has_tag() {
    [ -f "$1/index.json" ] && grep -q "\"org.opencontainers.image.ref.name\":\"$TAG\"" "$1/index.json" \
        && [ "$(cat "$1/opensandbox-recipe" 2>/dev/null)" = "$RECIPE" ]
}
if has_tag "$LAYOUT"; then
    echo "build-image: $LAYOUT:$TAG exists (cached)"
    exit 0
fi
if has_tag "$CACHED"; then
    mkdir -p "$IMAGES"; rm -rf "$LAYOUT.tmp"
    cp -a "$CACHED" "$LAYOUT.tmp" && rm -rf "$LAYOUT" && mv "$LAYOUT.tmp" "$LAYOUT"
    echo "build-image: $LAYOUT:$TAG copied from the machine's cache $CACHED"
    exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "build-image: needs root (debootstrap)" >&2; exit 1; }
for tool in debootstrap umoci; do
    command -v "$tool" >/dev/null 2>&1 || { echo "build-image: missing $tool (apt-get install $tool)" >&2; exit 1; }
done

start=$(date +%s)
mkdir -p "$IMAGES"
WORK="$(mktemp -d "$IMAGES/.build-XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
ROOTFS="$WORK/rootfs"

echo "build-image: debootstrap $SUITE ($include) from $MIRROR"
debootstrap --variant=minbase --include="$include" "$SUITE" "$ROOTFS" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 || {
    tail -20 "$WORK/debootstrap.log" >&2
    exit 1
}

# Trim what a sandbox never needs: package caches, docs, man pages, locales.
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* \
    "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/* \
    "$ROOTFS"/var/log/*.log "$ROOTFS"/var/cache/debconf/*-old
find "$ROOTFS"/usr/share/locale -mindepth 1 -maxdepth 1 ! -name 'C.*' -exec rm -rf {} + 2>/dev/null || true
# Debian compiles only part of the standard library at install time (asyncio, json,
# ... stay source): every new sandbox would compile them again on first import (its
# writable layer is its own), which made the code interpreter's start-up take ~0.8 s.
# Compile them once, with the image's own python.
chroot "$ROOTFS" /usr/bin/python3 -m compileall -q /usr/lib/python3.11 >"$WORK/compileall.log" 2>&1 \
    || { tail -5 "$WORK/compileall.log" >&2; echo "build-image: compileall failed (not fatal)" >&2; }
# The directories the reference server's sandboxes work in.
mkdir -p "$ROOTFS/workspace" "$ROOTFS/tmp"
chmod 1777 "$ROOTFS/tmp"

rm -rf "$WORK/layout"
umoci init --layout "$WORK/layout"
umoci new --image "$WORK/layout:$TAG"
umoci insert --image "$WORK/layout:$TAG" "$ROOTFS" /
umoci config --image "$WORK/layout:$TAG" \
    --config.env "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --config.env "LANG=C.UTF-8" \
    --config.workingdir /workspace \
    --config.cmd /bin/sh \
    --os linux --architecture "$(dpkg --print-architecture)"
umoci gc --layout "$WORK/layout"
echo "$RECIPE" >"$WORK/layout/opensandbox-recipe"

rm -rf "$LAYOUT"
mv "$WORK/layout" "$LAYOUT"
if mkdir -p "$IMAGE_CACHE" 2>/dev/null; then
    rm -rf "$CACHED.tmp" && cp -a "$LAYOUT" "$CACHED.tmp" && rm -rf "$CACHED" && mv "$CACHED.tmp" "$CACHED" \
        || echo "build-image: could not keep a copy in $IMAGE_CACHE (not needed)"
fi
end=$(date +%s)
echo "build-image: built $LAYOUT:$TAG in $((end - start)) s; $(du -sh "$LAYOUT" | cut -f1) compressed, rootfs $(du -sh "$ROOTFS" | cut -f1)"
