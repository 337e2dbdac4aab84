#!/usr/bin/env bash
# Metadata-heavy Spark work on RADOS, name index against pure scan (issue 14): a Spark SQL
# write of a table with many partitions, then reads back, on pools that
# scripts/bench-rados-index.sh filled with indexed names (run that first).
# Report: benchmarks/reports/rados-spark-partitions.md.
#
# Usage: scripts/bench-rados-spark.sh [--pools blobfs-n1k,blobfs-n100k] [--partitions 500]
#   [--rows 50000] [--reps 3] [--scan-reps 3] [--modes omap,scan] [--between CMD]
#   (CMD: a bash command run before each cell, with REP, POOL and MODE set)
# Environment: the cluster variables of scripts/ceph/cluster.sh (BLOBFS_CEPH_ROOT,
#   BLOBFS_CEPH_PORT_BASE). Builds with the reactor's classes (no mvn install).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-tools.sh
scripts/ceph/ensure-ceph.sh
eval "$(scripts/ceph/cluster.sh start --layout single --auth cephx)"
export CEPH_CONF CEPH_KEYRING
source scripts/lib/bench-services.sh
bench_build
bench_java io.blobfs.bench.meta.PartitionedTableBench --report benchmarks/reports "$@"
