#!/usr/bin/env bash
# The paper's comparison (section 8.4, Figures 12-14): the five Spark workloads on HDFS
# (NameNode + DataNode processes, replication 1, 64 MiB blocks), blob:// on a Týr server
# process and on RADOS (64 MiB stripes, pool size 1), CephFS (ceph-fuse, as file://) and
# file://, back ends interleaved, their order turning each round; every output checked.
#   scripts/bench-compare.sh [--size 64m] [--rounds 3] [--workloads all]
#       [--stores hdfs,tyr,rados,cephfs,file] [--name compare] (more: CompareBench's options)
# Report: benchmarks/reports/NAME.md and NAME-{time,read,write}.png.
#
#   scripts/bench-compare.sh --throughput [--files 4] [--file-size 256m] [--rounds 3]
#       [--stores hdfs,tyr,embedded,rados,file] [--name compare-throughput]
# The Spark throughput job of issue 11: a plain Spark application writes N files of S bytes
# in parallel tasks and reads them back (TestDFSIO's bytes), on TestDFSIO's targets (tyr =
# blob:// on a Týr server process, embedded = blob:// on a Týr node in the job's JVM).
#
# Starts what the chosen stores need (scripts/lib/bench-services.sh) and stops what it
# started. Builds the reactor (nothing is installed).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/bench-services.sh
main=io.blobfs.bench.compare.CompareBench
stores=hdfs,tyr,rados,cephfs,file
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --throughput) main=io.blobfs.bench.compare.ThroughputBench; stores=hdfs,tyr,embedded,rados,file; shift ;;
    --stores) stores=${2:?--stores needs a value}; shift 2 ;;
    --stores=*) stores=${1#*=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
scripts/ensure-tools.sh >&2
bench_build
trap bench_stop_services EXIT
bench_start_services "$stores"
bench_java "$main" --stores "$stores" "${args[@]}"
