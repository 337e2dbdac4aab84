#!/usr/bin/env bash
# Týr benchmark: one blob:// stream on a local Týr server process against the raw Týr
# client and file:// on the same disk (SIZE each, default 2g), then 8 KiB random writes
# from 8 threads on Týr against RADOS (the project's single-OSD cluster, started here).
# Report: benchmarks/reports/tyr-benchmark.md (+ .png).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-tools.sh
scripts/ceph/ensure-ceph.sh
eval "$(scripts/ceph/cluster.sh start --layout single --auth cephx)"
export CEPH_CONF CEPH_KEYRING BLOBFS_CEPH_CLIENT_KEYRING BLOBFS_CEPH_POOL BLOBFS_CEPH_DIR
mvn -B -ntp -q install -DskipTests -pl benchmarks/jmh -am
exec mvn -B -ntp -q -pl benchmarks/jmh exec:exec@tyr -Dbench.size="${1:-2g}"
