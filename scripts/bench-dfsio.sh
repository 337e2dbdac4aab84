#!/usr/bin/env bash
# Hadoop's TestDFSIO side by side on HDFS (NameNode + DataNode processes), blob:// on a Týr
# server process, blob:// on an embedded Týr node, blob:// on RADOS and file://:
#   scripts/bench-dfsio.sh [--rounds N] [--files N] [--size S] [--buffer B] [--cold]
#                          [--targets hdfs,tyr-server,tyr-embedded,rados,file] [--name REPORT]
# (more targets, not in the default list: tyr-server-tcp, the server with local reads off;
# tyr-server-8m, the server written with 8 MiB writes, the Týr default before session 8;
# tyr-server-nosync, a server whose log is not synced, as HDFS does not sync its blocks;
# X-baseline, target X on another build, named colon-separated by BLOBFS_DFSIO_BASELINE_CP
# (its jars first on the job's classpath, and on tyr-server-baseline's own server): a
# change side by side with the commit it starts from)
# Defaults: 3 rounds of 4 files x 256MB (S as TestDFSIO takes it: 256MB, 1GB), warm reads.
# --cold drops the page cache between each write and its read (root only; it empties the
# cache of everything else on the machine too). Starts (or reuses) the project's
# single-OSD Ceph cluster and HDFS; stops HDFS again if it started it.
# Report: benchmarks/reports/REPORT.md (+ .png), REPORT defaulting to dfsio.
set -euo pipefail
cd "$(dirname "$0")/.."
# Built in the reactor and run from target/ (never installed into the shared ~/.m2).
# BLOBFS_DFSIO_JVM_OPTS: extra options of every job's JVM (e.g. a JFR recording per job:
# -XX:StartFlightRecording=filename=/tmp/%t-%o-%r.jfr,settings=profile).
# Ceph is started only when a RADOS target runs (it is in the default list): a run of the
# other targets leaves the OSD's 6 GiB cache out of a machine it shares.
targets=hdfs,tyr-server,tyr-embedded,rados,file
prev=
for a in "$@"; do
  [ "$prev" = --targets ] && targets=$a
  prev=$a
done
BLOBFS_BENCH_CEPH=0
[[ ",$targets," == *,rados,* ]] && BLOBFS_BENCH_CEPH=1
source scripts/ceph/bench-env.sh
started_hdfs=
scripts/hdfs/hdfs.sh status >/dev/null 2>&1 || started_hdfs=1
eval "$(scripts/hdfs/hdfs.sh start)"
export HDFS_URI HDFS_CONF_DIR
[ -n "$started_hdfs" ] && trap 'scripts/hdfs/hdfs.sh stop' EXIT
# As the exec@dfsio execution of benchmarks/jmh/pom.xml runs it.
jmh_java -Xmx512m io.blobfs.bench.dfsio.DfsioReport "$@" --report-dir benchmarks/reports \
  --work-dir benchmarks/jmh/target/dfsio
