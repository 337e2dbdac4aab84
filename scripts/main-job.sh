#!/usr/bin/env bash
# The main job: generates a small dataset on blob:// (the embedded default store, a Týr
# node inside the job's JVM that keeps its log in benchmarks/target/main-job-tyr; no
# external service), runs the Spark workloads on it and prints a table of times and
# storage-call counts. Extra arguments go to MainJob (e.g. --size 256m).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-tools.sh
mvn -B -ntp -q install -DskipTests -pl benchmarks -am
args="${*:---size 32m}"
exec mvn -B -ntp -q -pl benchmarks exec:exec@main-job -Dbench.args="$args"
