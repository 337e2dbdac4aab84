#!/usr/bin/env bash
# Týr cluster benchmark (issue 13): 4 concurrent blob:// streams on 1 node against 3 nodes
# (R = 1), and R = 1 against R = 2 on 3 nodes, the three clusters side by side on the hosts
# of scripts/hosts/hosts.sh (network namespaces as root, else loopback addresses), rounds
# interleaved; prints the ratios and writes benchmarks/reports/tyr-cluster-throughput.md.
#   scripts/bench-tyr-cluster.sh [SIZE per stream, default 64m] [ROUNDS, default 5]
# A reactor build (nothing installed into ~/.m2): the classpath names this checkout's jars.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-tools.sh >&2
cp_file=benchmarks/jmh/target/tyr-cluster-bench.classpath
# Every module of the reactor writes the file; benchmarks/jmh, built last, wins.
mvn -B -ntp -q -pl benchmarks/jmh -am package -DskipTests dependency:build-classpath \
  -Dmdep.outputFile="$PWD/$cp_file" >&2
exec java -Xmx2g -cp "benchmarks/jmh/target/classes:$(cat "$cp_file")" \
  io.blobfs.bench.tyr.TyrClusterThroughputReport "${1:-64m}" "${2:-5}" benchmarks/reports \
  benchmarks/jmh/target/tyr-cluster-bench
