#!/usr/bin/env bash
# The main job: the paper's five Spark workloads (Sort, Grep, Decision Tree, Connected
# Components, Tokenizer), each spark-submitted as its own application, on the embedded
# default store (a Týr node inside the job's JVM, logging to benchmarks/target/main-job-tyr;
# no external service) and on file://; every output is checked against file:// and the data
# generators. Prints progress, then one table of times, bandwidths, storage calls and the
# directory operations of the paper's Table 2; writes benchmarks/target/main-job/main-job.md
# and storage-calls-*.png. Extra arguments go to MainJob, e.g. --size 64m, or
# --stores embedded,file,hdfs (MainJob says what each store needs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-tools.sh
mvn -B -ntp -q install -DskipTests -pl benchmarks -am
args="${*:---size 8m}"
exec mvn -B -ntp -q -pl benchmarks exec:exec@main-job -Dbench.args="$args"
