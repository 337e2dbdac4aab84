#!/usr/bin/env bash
# The RADOS name index's commands (io.blobfs.rados.RadosIndexTool), safe on a live pool:
#   scripts/rados-index.sh build --pool P [--namespace NS] [options]
#       enters every existing name of a pool written in pure-scan mode (or whose build was
#       cut off) and declares the index ready; clients of this version that open the pool
#       meanwhile keep the index and scan by listing until then. Stop pure-scan clients
#       first: they do not keep it.
#   scripts/rados-index.sh fsck [--repair] --pool P [--namespace NS] [options]
#       checks index against objects: names without an entry (hidden from listings) and
#       committed entries without their object (shown but missing) are errors (exit 1);
#       pending entries of crashed writers and deletes' tombstones older than the grace
#       recorded in the index are stale. --repair fixes all with conditional updates.
# Options: --conf /etc/ceph/ceph.conf --client-id admin --keyring FILE --mon-host HOST
#          --shards 8 --grace 10m (both for a new index only: an existing one keeps its own)
# A client in index mode refuses a pool that has names but no index until build has run.
# Runs from this checkout's classes (built here, no mvn install).
set -euo pipefail
cd "$(dirname "$0")/.."
CP=$(mktemp)
trap 'rm -f "$CP"' EXIT
mvn -B -ntp -q -pl blobfs-rados -am compile dependency:build-classpath \
  -Dmdep.outputFile="$CP" -Dmdep.includeScope=runtime >&2
java -cp "blobfs-rados/target/classes:$(cat "$CP")" io.blobfs.rados.RadosIndexTool "$@"
