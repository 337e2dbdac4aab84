#!/usr/bin/env bash
# Prints the cluster's exports with container paths turned into paths on this host.
# Usage: eval "$(docker/env-on-host.sh [/tmp/blobfs-ceph-docker] [single-cephx])"
set -euo pipefail
MOUNT=${1:-/tmp/blobfs-ceph-docker}
NAME=${2:-single-cephx}
sed "s#/var/lib/blobfs-ceph#$MOUNT#g" "$MOUNT/$NAME/env.sh"
