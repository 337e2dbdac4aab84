#!/usr/bin/env bash
# The test command: installs what the tests need, then builds every module and runs
# every test (unit, Hadoop contract suites, FsShell, Spark end to end).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-tools.sh
# The RADOS tests start a real Ceph cluster with scripts/ceph/cluster.sh.
scripts/ceph/ensure-ceph.sh
exec mvn -B -ntp verify "$@"
