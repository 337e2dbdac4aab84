#!/usr/bin/env bash
# Builds the local images that docker/docker-compose.yml and the RADOS tests use, from
# Debian's packages only (nothing is pulled from an image registry):
#   blobfs/debian-base:bookworm  debootstrap --variant=minbase, imported (only when missing)
#   blobfs/ceph:local            docker/Dockerfile: Ceph and scripts/ceph/cluster.sh (+ scripts/lib)
#   blobfs/tyr:local             docker/tyr.Dockerfile: a JRE and the Týr server jar
# An image is rebuilt only when its inputs changed: it carries the hash of its build
# context and base image in the label io.blobfs.inputs. The Týr image's input is the jar
# Maven builds; this script runs `mvn -pl blobfs-tyr -am package -DskipTests` for it
# (BLOBFS_TYR_JAR=PATH uses that jar instead).
# Usage: scripts/docker/build-images.sh [ceph|tyr|all]   (default all; as root, see
# ensure-docker.sh). Exits non-zero with one line saying why when an image cannot be had.
set -euo pipefail
cd "$(dirname "$0")/../.."
BASE=blobfs/debian-base:bookworm
MIRROR=http://deb.debian.org/debian
what=${1:-all}
case $what in ceph|tyr|all) ;; *) echo "usage: $0 [ceph|tyr|all]" >&2; exit 2;; esac

fail() { echo "build-images: $*" >&2; exit 1; }
# image_field FORMAT IMAGE: empty when there is no such image.
image_field() { timeout 30 docker image inspect -f "$1" "$2" 2>/dev/null || true; }

scripts/docker/ensure-docker.sh || exit 1   # it said why
# The engine and its images are shared by every checkout on the machine.
exec 9>/tmp/blobfs-build-images.lock
flock -w 1800 9 || fail "another build-images.sh held /tmp/blobfs-build-images.lock for 30 min"
work=$(mktemp -d /tmp/blobfs-images.XXXXXX)
trap 'rm -rf "$work"' EXIT

make_base() {
  [ -z "$(image_field '{{.Id}}' "$BASE")" ] || return 0
  [ "$(id -u)" -eq 0 ] || fail "$BASE is missing and debootstrap, which makes it, needs root"
  echo "build-images: making $BASE with debootstrap (about a minute)" >&2
  local root=$work/rootfs start=$SECONDS
  timeout 900 debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
    || { cp "$work/debootstrap.log" /tmp/blobfs-debootstrap.log
         fail "debootstrap failed; see /tmp/blobfs-debootstrap.log"; }
  # Same suites as Debian's own images, so the images get current point releases.
  cat >"$root/etc/apt/sources.list" <<SOURCES
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
SOURCES
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | timeout 600 docker import -c 'CMD ["bash"]' - "$BASE" >/dev/null \
    || fail "docker import of the base image failed"
  rm -rf "$root"
  echo "build-images: $BASE made in $((SECONDS - start)) s" >&2
}

# build IMAGE DOCKERFILE CONTEXT: the context is a staged directory holding only the
# inputs, so that the hash covers exactly them and the engine gets no stray files.
build() {
  local image=$1 dockerfile=$2 ctx=$3 hash start=$SECONDS
  hash=$( { tar -C "$ctx" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -c .
            image_field '{{.Id}}' "$BASE"; } | sha256sum | cut -c1-16)
  if [ "$(image_field '{{index .Config.Labels "io.blobfs.inputs"}}' "$image")" = "$hash" ]; then
    echo "build-images: $image is up to date ($hash)" >&2
    return 0
  fi
  local old
  old=$(image_field '{{.Id}}' "$image")
  echo "build-images: building $image ($hash), log $work/$(basename "$ctx").log" >&2
  # The legacy builder uses the local base as is; BuildKit may try to resolve it remotely.
  DOCKER_BUILDKIT=0 timeout 1800 docker build --network host --build-arg BASE="$BASE" \
    --label io.blobfs.inputs="$hash" -f "$ctx/$dockerfile" -t "$image" "$ctx" \
    >"$work/$(basename "$ctx").log" 2>&1 \
    || { cp "$work/$(basename "$ctx").log" "/tmp/blobfs-$(basename "$ctx")-build.log"
         fail "docker build of $image failed; see /tmp/blobfs-$(basename "$ctx")-build.log"; }
  echo "build-images: $image built in $((SECONDS - start)) s" >&2
  # vfs keeps a full copy of every layer: drop the superseded image unless a container uses it.
  [ -z "$old" ] || timeout 60 docker rmi "$old" >/dev/null 2>&1 || true
}

ceph_image() {
  local ctx=$work/ceph
  mkdir -p "$ctx/scripts" "$ctx/docker"
  cp -p -r scripts/ceph "$ctx/scripts/ceph"
  cp -p -r scripts/lib "$ctx/scripts/lib" # cluster.sh sources its root check from there
  cp -p docker/Dockerfile docker/run-cluster.sh "$ctx/docker/"
  build blobfs/ceph:local docker/Dockerfile "$ctx"
}

tyr_image() {
  local ctx=$work/tyr jar=${BLOBFS_TYR_JAR:-}
  if [ -z "$jar" ]; then
    timeout 1200 mvn -B -ntp -pl blobfs-tyr -am package -DskipTests >"$work/mvn.log" 2>&1 \
      || { cp "$work/mvn.log" /tmp/blobfs-tyr-package.log
           fail "mvn package of blobfs-tyr failed; see /tmp/blobfs-tyr-package.log"; }
    jar=$(ls blobfs-tyr/target/blobfs-tyr-*-server.jar)
  fi
  [ -f "$jar" ] || fail "no Týr server jar at $jar"
  mkdir -p "$ctx"
  cp -p "$jar" "$ctx/tyr-server.jar"
  cp -p docker/tyr.Dockerfile "$ctx/"
  build blobfs/tyr:local tyr.Dockerfile "$ctx"
}

make_base
case $what in
  ceph) ceph_image ;;
  tyr) tyr_image ;;
  all) ceph_image; tyr_image ;;
esac
