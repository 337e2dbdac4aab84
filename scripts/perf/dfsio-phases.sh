#!/usr/bin/env bash
# One traced TestDFSIO -write, -read, -clean on one file system, for where a job's time
# outside its reads and writes goes (benchmarks/reports/dfsio-s10-outside.md):
#   scripts/perf/dfsio-phases.sh OUT_DIR FS_ROOT [-Dkey=value ...]
# e.g. scripts/perf/dfsio-phases.sh /tmp/ph/tyr blob://tyrsrv \
#        -Dfs.blob.impl=io.blobfs.bench.trace.TracingFileSystem \
#        -Dfs.trace.blob.impl=io.blobfs.hadoop.BlobFileSystem \
#        -Dfs.blob.store.tyrsrv.type=tyr -Dfs.blob.store.tyrsrv.address=127.0.0.1:7400
# (file://: -Dfs.file.impl=io.blobfs.bench.trace.TracingLocalFileSystem; HDFS: the same
# two fs.* options with scheme hdfs and DistributedFileSystem, and EXTRA_CP=$HDFS_CONF_DIR).
# Every job logs each outermost file system call with its start and duration
# (blobfs.trace.log) and its class loads with wall-clock stamps; OUT_DIR/times has each
# job's process start and end. scripts/perf/dfsio-phases.py OUT_DIR... makes the table.
# Needs benchmarks/jmh built as scripts/bench-dfsio.sh builds it (bench-classpath.txt);
# JOPTS: more JVM options (OPNAME is replaced by the job's operation, e.g. for a JFR file).
set -euo pipefail
JOPTS=${JOPTS:-}
out=$1 root=$2
shift 2
cd "$(dirname "$0")/../.."
cpfile=benchmarks/jmh/target/bench-classpath.txt
[ -f "$cpfile" ] || { echo "build benchmarks/jmh first (scripts/bench-dfsio.sh does)" >&2; exit 1; }
# The tracing wrapper lives in benchmarks/, which the jmh classpath does not hold.
trace=benchmarks/jmh/target/trace-classes
mkdir -p "$trace" "$out"
javac -nowarn -d "$trace" -cp "$(cat "$cpfile")" benchmarks/src/main/java/io/blobfs/bench/trace/*.java
cp="$trace:${EXTRA_CP:+$EXTRA_CP:}benchmarks/jmh/target/classes:$(cat "$cpfile")"
for op in -write -read -clean; do
  args=()
  [ "$op" != -clean ] && args=(-nrFiles 4 -size 256MB -bufferSize 1000000 -resFile "$out/res$op.log")
  sync
  s=$(date +%s%3N)
  # shellcheck disable=SC2086
  java -Xmx2g ${JOPTS//OPNAME/$op} -Dblobfs.trace.log=true \
    -Xlog:class+load:file="$out/cl$op.log":uptime,time -cp "$cp" org.apache.hadoop.fs.TestDFSIO "$@" \
    -Dfs.defaultFS="$root/" -Dtest.build.data="$root/benchmarks/TestDFSIO" \
    -Dhadoop.tmp.dir="$out/hadoop-tmp" -Dmapreduce.client.progressmonitor.pollinterval=100 \
    "$op" "${args[@]}" > "$out/job$op.out" 2>&1
  echo "$op start_ms=$s end_ms=$(date +%s%3N)" >> "$out/times"
done
