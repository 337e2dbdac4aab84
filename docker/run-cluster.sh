#!/usr/bin/env bash
# Container entry point: start the cluster, say so, and stay up until stopped.
set -euo pipefail
LAYOUT=${BLOBFS_CEPH_LAYOUT:-single}
AUTH=${BLOBFS_CEPH_AUTH:-cephx}
/opt/blobfs/scripts/ceph/cluster.sh start --layout "$LAYOUT" --auth "$AUTH" >/dev/null
echo "BLOBFS CEPH READY $LAYOUT-$AUTH"
trap '/opt/blobfs/scripts/ceph/cluster.sh stop --layout "$LAYOUT" --auth "$AUTH"; exit 0' TERM INT
while true; do sleep 3600 & wait $!; done
