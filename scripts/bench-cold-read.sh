#!/usr/bin/env bash
# What a TestDFSIO read job pays once per JVM, phase by phase, that a warm stream does not
# show: a fresh JVM per probe makes a file system, opens and reads FILES files with
# 1,000,000-byte reads; blob:// on a Týr server process (local reads, and over TCP) against
# file://, interleaved:
#   scripts/bench-cold-read.sh [--rounds N] [--files N] [--size S]
#                              [--targets tyr-server,tyr-server-tcp,file] [--name REPORT]
# Defaults: 5 rounds of 4 files x 256 MiB. Report: benchmarks/reports/REPORT.md (+ .png),
# REPORT defaulting to cold-read. BLOBFS_COLD_JVM_OPTS: extra options of every probe JVM
# (%t and %r become target and round), e.g.
# -XX:StartFlightRecording=filename=/tmp/%t-%r.jfr,settings=profile
set -euo pipefail
cd "$(dirname "$0")/.."
BLOBFS_BENCH_CEPH=0 # no RADOS target: build only
source scripts/ceph/bench-env.sh
jmh_java -Xmx512m io.blobfs.bench.dfsio.ColdReadBench "$@"
