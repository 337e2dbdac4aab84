#!/usr/bin/env bash
# The main job: the paper's five Spark workloads (Sort, Grep, Decision Tree, Connected
# Components, Tokenizer), each spark-submitted as its own application, on the embedded
# default store (a Týr node inside the job's JVM, logging to benchmarks/target/main-job-tyr;
# no external service) and on file://; every output is checked against file:// and the data
# generators. Prints progress, then one table of times, bandwidths, storage calls and the
# directory operations of the paper's Table 2; writes benchmarks/target/main-job/main-job.md
# and storage-calls-*.png. Extra arguments go to MainJob, e.g. --size 64m, or
# --stores embedded,file,hdfs,tyr,rados,cephfs: the script starts what those need
# (scripts/lib/bench-services.sh: HDFS daemons, a Týr server process, the Ceph cluster,
# CephFS with ceph-fuse) and stops again what it started.
# Then the HPC-then-Spark step (scripts/lib/hpc-then-spark.sh): the MPI-IO program writes
# through a FUSE mount of the embedded default store, a Spark job reads and checks it
# through blob://; skipped, saying why, where FUSE or MPICH is missing.
# Builds the reactor (nothing is installed in ~/.m2).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/bench-services.sh
source scripts/lib/hpc-then-spark.sh
[ $# -gt 0 ] || set -- --size 8m
stores=embedded,file
data_dir=target/main-job-tyr # MainJob's --data-dir default, under benchmarks/
prev=
for a in "$@"; do
  [ "$prev" = --stores ] && stores=$a
  [ "$prev" = --data-dir ] && data_dir=$a
  case "$a" in --stores=*) stores=${a#*=} ;; --data-dir=*) data_dir=${a#*=} ;; esac
  prev=$a
done
case "$data_dir" in /*) ;; *) data_dir=$PWD/benchmarks/$data_dir ;; esac
scripts/ensure-tools.sh >&2
BENCH_EXTRA_MODULES=$(hpc_then_spark_modules) bench_build # the mount's module too
trap bench_stop_services EXIT
bench_start_services "$stores"
(cd benchmarks && bench_java io.blobfs.bench.MainJob "$@")
case ",$stores," in
  *,embedded,*) hpc_then_spark "$data_dir" ;;
  *) echo "HPC-then-Spark step skipped: the embedded default store is not among --stores" ;;
esac
