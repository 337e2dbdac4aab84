#!/usr/bin/env bash
# Mounts a BlobFS store through FUSE (the HPC adapter, blobfs-fuse):
#   scripts/blobfs-mount.sh --store embedded|tyr|rados|memory [--conf core-site.xml]
#       [--name STORE] [--dir DIR] [--address HOST:PORT] [--paper] MOUNTPOINT
# The same fs.blob.* keys as blob:// (one core-site.xml serves both); --name picks the
# store profile (default: fs.blob.default.store, else "default"). Runs in the foreground
# until SIGTERM/SIGINT or an unmount; a signal publishes every open file, then unmounts.
# Needs root and /dev/fuse. Builds the module first (compile only, nothing installed).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
BLOBFS_FUSE_TOOLS=1 "$root/scripts/ensure-tools.sh"
if [ ! -e /dev/fuse ] || [ "$(id -u)" -ne 0 ]; then
  echo "blobfs-mount: needs root and /dev/fuse" >&2
  exit 1
fi
if [ "${BLOBFS_MOUNT_SKIP_BUILD:-}" != 1 ]; then
  # test-compile, not compile: the classpath list (dependency:build-classpath) resolves the
  # module's test-jar dependencies too, which a reactor serves from test-classes only then
  (cd "$root" && mvn -B -q -pl blobfs-fuse -am test-compile -DskipTests)
fi
cp_file="$root/blobfs-fuse/target/classpath.txt"
exec java ${BLOBFS_MOUNT_JAVA_OPTS:-} -cp "$root/blobfs-fuse/target/classes:$(cat "$cp_file")" \
  io.blobfs.fuse.BlobMount "$@"
