#!/usr/bin/env bash
# The data moved when a fourth node joins a 3-node Týr cluster (issue 13's benchmark; see
# blobfs-tyr/README.md, "Adding a node"): runs TyrClusterJoinIT (3 server processes on the
# hosts of scripts/hosts/hosts.sh, R = 2, 128 vnodes; a writer overwrites blobs all through
# the join) with BLOBS blobs, and writes its figures (keys and bytes the joiner holds and
# copied, and that the old members dropped, against the ideal R/N) to
# benchmarks/reports/tyr-join.md.
#   scripts/bench-tyr-join.sh [BLOBS, default 3000]
# A reactor build (nothing installed into ~/.m2). Hosts: BLOBFS_HOSTS_* as for hosts.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-tools.sh >&2
rm -f blobfs-tyr/target/failsafe-reports/failsafe-summary*.xml
mvn -B -ntp -q -pl blobfs-tyr -am verify -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false \
  -Dit.test=TyrClusterJoinIT -Dfailsafe.failIfNoSpecifiedTests=false \
  -Dblobfs.join.blobs="${1:-3000}" >&2
report=benchmarks/reports/tyr-join.md
{
  echo "# Data moved when a fourth Týr node joins (scripts/bench-tyr-join.sh ${1:-3000})"
  echo
  echo "$(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo '```'
  grep -a -E '^(JOIN-IT|TYR-JOIN)' \
    blobfs-tyr/target/failsafe-reports/io.blobfs.tyr.cluster.TyrClusterJoinIT-output.txt
  echo '```'
} | tee "$report"
