#!/usr/bin/env bash
# RADOS throughput benchmark: starts (or reuses) the project's single-OSD Ceph cluster,
# then writes and reads SIZE (default 2g) through one blob:// stream and runs rados bench
# with the same object size and bytes in flight, for stripes of 4, 16 and 64 MiB.
# Then measures listing cost against the pool's object count.
# Reports: benchmarks/reports/rados-throughput.md (+ .png), rados-listing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-tools.sh
scripts/ceph/ensure-ceph.sh
eval "$(scripts/ceph/cluster.sh start --layout single --auth cephx)"
export CEPH_CONF CEPH_KEYRING BLOBFS_CEPH_CLIENT_KEYRING BLOBFS_CEPH_POOL BLOBFS_CEPH_DIR
mvn -B -ntp -q install -DskipTests -pl benchmarks/jmh -am
mvn -B -ntp -q -pl benchmarks/jmh exec:exec@rados -Dbench.size="${1:-2g}"
exec mvn -B -ntp -q -pl benchmarks/jmh exec:exec@rados-listing
