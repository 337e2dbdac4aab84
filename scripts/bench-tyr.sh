#!/usr/bin/env bash
# Týr benchmark: one blob:// stream on a local Týr server process against the raw Týr
# client and file:// on the same disk (SIZE each, default 2g), then 8 KiB random writes
# from 8 threads on Týr against RADOS (the project's single-OSD cluster, started here).
# Report: benchmarks/reports/tyr-benchmark.md (+ .png).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ceph/bench-env.sh
exec mvn -B -ntp -q -pl benchmarks/jmh exec:exec@tyr -Dbench.size="${1:-2g}"
