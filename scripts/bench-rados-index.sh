#!/usr/bin/env bash
# Metadata cost against pool size on RADOS, name index (index=omap) against the paper's
# pure-scan mode (index=scan), side by side and interleaved (issue 14): getFileStatus of a
# file, a directory and a missing path, create+close, listStatus of 100 files, through
# blob://, with one pool per size topped up with 16-byte filler objects.
# Report: benchmarks/reports/rados-metadata.md (+ .png).
#
# Usage: scripts/bench-rados-index.sh [REPS]   (default 7)
# Environment: POOLS (default "blobfs-p1k=1000 blobfs-p100k=100000 blobfs-p1m=1000000";
#   pools are made with 32 PGs, size 1, if missing), the cluster variables of
#   scripts/ceph/cluster.sh (BLOBFS_CEPH_ROOT, BLOBFS_CEPH_PORT_BASE).
# Builds with the reactor's classes (no mvn install): the run is of this checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-7}
POOLS=${POOLS:-"blobfs-p1k=1000 blobfs-p100k=100000 blobfs-p1m=1000000"}
scripts/ensure-tools.sh
scripts/ceph/ensure-ceph.sh
eval "$(scripts/ceph/cluster.sh start --layout single --auth cephx)"
export CEPH_CONF CEPH_KEYRING BLOBFS_CEPH_CLIENT_KEYRING BLOBFS_CEPH_POOL BLOBFS_CEPH_DIR
for spec in $POOLS; do
  pool=${spec%%=*}
  if ! ceph osd pool ls | grep -qx "$pool"; then
    ceph osd pool create "$pool" 32 32 >/dev/null
    ceph osd pool set "$pool" size 1 --yes-i-really-mean-it >/dev/null
    ceph osd pool application enable "$pool" rados >/dev/null
  fi
done
CP=$(mktemp)
trap 'rm -f "$CP"' EXIT
mvn -B -ntp -q -pl benchmarks/jmh -am compile dependency:build-classpath \
  -Dmdep.outputFile="$CP" -Dmdep.includeScope=runtime
# shellcheck disable=SC2086
exec java -Xmx2g -cp "benchmarks/jmh/target/classes:$(cat "$CP")" \
  io.blobfs.bench.rados.RadosMetadataCost benchmarks/reports "$REPS" $POOLS
