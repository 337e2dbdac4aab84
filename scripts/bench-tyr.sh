#!/usr/bin/env bash
# Týr benchmark: one blob:// stream on a local Týr server process against the raw Týr
# client and file:// on the same disk (SIZE each, default 2g), then 8 KiB random writes
# from 8 threads on Týr against RADOS (the project's single-OSD cluster, started here).
# Report: benchmarks/reports/tyr-benchmark.md (+ .png).
# Built in the reactor and run from target/ (never installed into the shared ~/.m2).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ceph/bench-env.sh
# As the exec@tyr execution of benchmarks/jmh/pom.xml runs it.
jmh_java -Xmx2g io.blobfs.bench.tyr.TyrBenchmarkReport "${1:-2g}" benchmarks/reports \
  benchmarks/jmh/target/tyr-bench
