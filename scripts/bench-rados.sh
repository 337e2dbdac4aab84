#!/usr/bin/env bash
# RADOS throughput benchmark: starts (or reuses) the project's single-OSD Ceph cluster,
# then writes and reads SIZE (default 2g) through one blob:// stream and runs rados bench
# with the same object size and bytes in flight, for stripes of 4, 16 and 64 MiB.
# Then measures listing cost against the pool's object count.
# Reports: benchmarks/reports/rados-throughput.md (+ .png), rados-listing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ceph/bench-env.sh
mvn -B -ntp -q -pl benchmarks/jmh exec:exec@rados -Dbench.size="${1:-2g}"
exec mvn -B -ntp -q -pl benchmarks/jmh exec:exec@rados-listing
