#!/usr/bin/env bash
# RADOS throughput benchmark: starts (or reuses) the project's single-OSD Ceph cluster,
# then writes and reads SIZE (default 2g) through one blob:// stream and runs rados bench
# with the same object size and bytes in flight, for stripes of 4, 16 and 64 MiB.
# Then measures listing cost against the pool's object count.
# Reports: benchmarks/reports/rados-throughput.md (+ .png), rados-listing.md.
# Built in the reactor and run from target/ (never installed into the shared ~/.m2).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ceph/bench-env.sh
# As the exec@rados and exec@rados-listing executions of benchmarks/jmh/pom.xml run them.
jmh_java -Xmx4g io.blobfs.bench.rados.RadosThroughputReport "${1:-2g}" benchmarks/reports \
  scripts/ceph/rados-bench.sh
jmh_java io.blobfs.bench.rados.RadosListingCost benchmarks/reports scripts/ceph/rados-bench.sh
