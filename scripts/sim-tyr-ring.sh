#!/usr/bin/env bash
# "Toward 1,000 nodes" (issue 13; blobfs-tyr/README.md): builds the real Týr Ring with N
# members and reports its size, the balance of keys per node (exact from the arcs, and
# sampled over chunk keys), lookup cost against a 3-node ring (interleaved), the cost of a
# ring change to clients, and what one node's loss costs the others. No server runs.
#   scripts/sim-tyr-ring.sh [N, default 1000] [VNODES, default 128] [KEYS sampled, 2000000] [R, 2]
# Writes benchmarks/reports/tyr-ring-1000.md too (for the defaults). A reactor build:
# nothing is installed into ~/.m2.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-tools.sh >&2
cp_file=benchmarks/jmh/target/tyr-ring-sim.classpath
mvn -B -ntp -q -pl benchmarks/jmh -am package -DskipTests dependency:build-classpath \
  -Dmdep.outputFile="$PWD/$cp_file" >&2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
java -Xmx2g -cp "benchmarks/jmh/target/classes:$(cat "$cp_file")" \
  io.blobfs.bench.tyr.RingSimulation "$@" 2> >(grep -v '^SLF4J' >&2) | tee "$out"
if [[ $# -eq 0 ]]; then
  cp "$out" benchmarks/reports/tyr-ring-1000.md
fi
