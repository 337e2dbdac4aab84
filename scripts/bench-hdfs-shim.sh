#!/usr/bin/env bash
# The paper's section 7 experiment: the five Spark workloads on HDFS with its hierarchical
# namespace (hdfs://) against the same workloads on the flat namespace over the same HDFS
# (flat://, blobfs-hdfs-shim), completion time and directory-operation latency (Figures 4
# and 5, as tables in the report and as REPORT-time.png and REPORT-dirops.png beside it):
#   scripts/bench-hdfs-shim.sh [--size 64m] [--seed 1] [--rounds 5] [--warmup 1]
#       [--committer classic|manifest]
#       [--workloads sort,grep,decision-tree,connected-components,tokenizer] [--dirop-reps 30]
#       [--root-names 0,1000,5000] [--report benchmarks/reports/hdfs-shim.md]
# Starts (or reuses) HDFS's daemons (scripts/hdfs/hdfs.sh) and stops them again if it
# started them. Builds the reactor (nothing is installed) and runs
# io.blobfs.bench.shim.ShimExperiment, which submits each workload (spark-submit in its
# JVM, Spark in local mode) and fails if any output is wrong.
set -euo pipefail
cd "$(dirname "$0")/.."
started_hdfs=
scripts/hdfs/hdfs.sh status >/dev/null 2>&1 || started_hdfs=1
eval "$(scripts/hdfs/hdfs.sh start)"
[ -n "$started_hdfs" ] && trap 'scripts/hdfs/hdfs.sh stop' EXIT
mvn -B -ntp -q -pl benchmarks -am package -DskipTests dependency:build-classpath \
  -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=test
# Spark on Java 17 needs the opens the root pom lists (spark.test.jvm.opens).
opens=$(sed -n 's:.*<spark.test.jvm.opens>\(.*\)</spark.test.jvm.opens>.*:\1:p' pom.xml)
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java
# shellcheck disable=SC2086 # the opens are separate words
SPARK_LOCAL_IP=127.0.0.1 "$JAVA" $opens -Xmx3g \
  -cp "benchmarks/target/classes:$(cat benchmarks/target/classpath.txt)" \
  io.blobfs.bench.shim.ShimExperiment --hdfs "$HDFS_URI" "$@"
