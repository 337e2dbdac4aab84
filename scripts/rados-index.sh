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
#   scripts/rados-index.sh compact --pool P [--namespace NS]
#       compacts the RocksDB of every OSD that holds a shard of the index (ceph tell
#       osd.N compact, one OSD after another) and prints each one's time. A finished
#       directory rename or recursive delete removes its intent's entry from the index,
#       which leaves a RocksDB tombstone on the shard; every later read of the intents
#       steps over all of them until RocksDB compacts them away, so those reads slow
#       down with each operation before (benchmarks/reports/rados-spark-repetitions.md).
#       Uses the ceph CLI with its own environment (CEPH_CONF, CEPH_KEYRING, CEPH_ARGS).
# Options: --conf /etc/ceph/ceph.conf --client-id admin --keyring FILE --mon-host HOST
#          --shards 8 --grace 10m (both for a new index only: an existing one keeps its own)
# A client in index mode refuses a pool that has names but no index until build has run.
# Runs from this checkout's classes (built here, no mvn install).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ${1:-} == compact ]]; then
  shift
  pool= ns=
  while (($#)); do
    case $1 in
      --pool) pool=$2; shift 2 ;;
      --namespace) ns=$2; shift 2 ;;
      *) echo "compact: unknown option $1 (takes --pool P [--namespace NS])" >&2; exit 2 ;;
    esac
  done
  [[ -n $pool ]] || { echo "compact: --pool is required" >&2; exit 2; }
  # The index lives in RADOS namespace NS/index (or "/index"); its description says how
  # many shards it has (RadosIndexes.Meta).
  index_ns="$ns/index"
  meta=$(rados -p "$pool" --namespace "$index_ns" get meta /dev/stdout) || {
    echo "compact: pool $pool namespace '$ns' has no name index" >&2; exit 1; }
  shards=$(sed -n 's/^shards=//p' <<<"$meta")
  osds=$(for ((s = 0; s < shards; s++)); do
    ceph osd map "$pool" "shard.$s" "$index_ns" -f json |
      python3 -c 'import json,sys; print("\n".join(str(o) for o in json.load(sys.stdin)["acting"]))'
  done | sort -un)
  for osd in $osds; do
    t0=$(date +%s%N)
    ceph tell "osd.$osd" compact >/dev/null
    echo "osd.$osd compacted in $((($(date +%s%N) - t0) / 1000000)) ms"
  done
  exit 0
fi
CP=$(mktemp)
trap 'rm -f "$CP"' EXIT
mvn -B -ntp -q -pl blobfs-rados -am compile dependency:build-classpath \
  -Dmdep.outputFile="$CP" -Dmdep.includeScope=runtime >&2
java -cp "blobfs-rados/target/classes:$(cat "$CP")" io.blobfs.rados.RadosIndexTool "$@"
