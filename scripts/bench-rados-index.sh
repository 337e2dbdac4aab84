#!/usr/bin/env bash
# Metadata cost against the number of indexed names on RADOS, name index (index=omap)
# against the paper's pure-scan mode (index=scan), side by side and interleaved (issue 14):
# getFileStatus of a file, a directory and a missing path, create+close, listStatus of 100
# files, listFiles(recursive) of a 100-file subtree, through blob://. One pool per size,
# filled once with real file records (1,000 per directory) and indexed by the project's
# build, whose time is reported (first-open build cost of an existing pool).
# Report: benchmarks/reports/rados-metadata.md (+ .png).
#
# Usage: scripts/bench-rados-index.sh [--million] [REPS [SCAN_REPS]]
#   REPS (default 7) repetitions; pure scan on pools of 500k names or more runs only in
#   the first SCAN_REPS (default 3): it takes seconds per call there.
#   --million adds the pool of 1,000,000 names (filling it takes minutes and ~1M objects;
#   a bench, not a test).
# Environment: POOLS overrides the pools ("name=NAMES ..."; default
#   "blobfs-n1k=1000 blobfs-n100k=100000", with --million also "blobfs-n1m=1000000"; made
#   with 32 PGs, size 1, if missing), the cluster variables of scripts/ceph/cluster.sh
#   (BLOBFS_CEPH_ROOT, BLOBFS_CEPH_PORT_BASE).
# Builds with the reactor's classes (no mvn install): the run is of this checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
DEFAULT_POOLS="blobfs-n1k=1000 blobfs-n100k=100000"
if [[ ${1:-} == --million ]]; then
  DEFAULT_POOLS="$DEFAULT_POOLS blobfs-n1m=1000000"
  shift
fi
REPS=${1:-7}
SCAN_REPS=${2:-3}
POOLS=${POOLS:-$DEFAULT_POOLS}
scripts/ensure-tools.sh
scripts/ceph/ensure-ceph.sh
eval "$(scripts/ceph/cluster.sh start --layout single --auth cephx)"
export CEPH_CONF CEPH_KEYRING BLOBFS_CEPH_CLIENT_KEYRING BLOBFS_CEPH_POOL BLOBFS_CEPH_DIR
for spec in $POOLS; do
  pool=${spec%%=*}
  if ! ceph osd pool ls | grep -qx "$pool"; then
    ceph osd pool create "$pool" 32 32 >/dev/null
    ceph osd pool set "$pool" size 1 --yes-i-really-mean-it >/dev/null
    ceph osd pool application enable "$pool" rados >/dev/null
  fi
done
CP=$(mktemp)
trap 'rm -f "$CP"' EXIT
# test-compile: the module's test-jar dependency (blobfs-tyr's) resolves to its classes.
mvn -B -ntp -q -pl benchmarks/jmh -am test-compile dependency:build-classpath \
  -Dmdep.outputFile="$CP" -Dmdep.includeScope=runtime
# shellcheck disable=SC2086
exec java -Xmx2g -cp "benchmarks/jmh/target/classes:$(cat "$CP")" \
  io.blobfs.bench.rados.RadosMetadataCost benchmarks/reports "$REPS" "$SCAN_REPS" $POOLS
