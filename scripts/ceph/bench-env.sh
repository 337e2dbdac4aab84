#!/usr/bin/env bash
# Sourced by the benchmark scripts: installs what they need, starts (or reuses) the
# project's single-OSD cephx cluster, exports its settings, and builds the benchmarks.
scripts/ensure-tools.sh
scripts/ceph/ensure-ceph.sh
eval "$(scripts/ceph/cluster.sh start --layout single --auth cephx)"
export CEPH_CONF CEPH_KEYRING BLOBFS_CEPH_CLIENT_KEYRING BLOBFS_CEPH_POOL BLOBFS_CEPH_DIR
mvn -B -ntp -q install -DskipTests -pl benchmarks/jmh -am
