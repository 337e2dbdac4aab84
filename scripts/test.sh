#!/usr/bin/env bash
# The test command: installs what the tests need, then builds every module and runs
# every test (unit, Hadoop contract suites, FsShell, Spark end to end).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-tools.sh
# The RADOS tests start a real Ceph cluster with scripts/ceph/cluster.sh.
scripts/ceph/ensure-ceph.sh
# blobfs-rados runs its store SPI and contract suites on Ceph in a container of a local
# image (failsafe run rados-docker); without one they fall back to the native cluster,
# and under CI=true they fail saying why.
scripts/docker/build-images.sh ceph \
  || echo "test.sh: no Ceph image (see above); continuing without Docker" >&2
exec mvn -B -ntp verify "$@"
