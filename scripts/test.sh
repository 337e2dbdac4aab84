#!/usr/bin/env bash
# The test command: installs what the tests need, then builds every module and runs
# every test (unit, Hadoop contract suites, FsShell, Spark end to end), then runs the
# Hadoop contract suites again under Hadoop 3.4.2 (profile hadoop-3.4.2).
set -euo pipefail
cd "$(dirname "$0")/.."
BLOBFS_FUSE_TOOLS=1 scripts/ensure-tools.sh  # also fuse3, fio, rsync: the FUSE tests
# The RADOS tests start a real Ceph cluster with scripts/ceph/cluster.sh.
scripts/ceph/ensure-ceph.sh
# blobfs-rados runs its store SPI and contract suites on Ceph in a container of a local
# image (failsafe run rados-docker); without one they fall back to the native cluster,
# and under CI=true they fail saying why.
scripts/docker/build-images.sh ceph \
  || echo "test.sh: no Ceph image (see above); continuing without Docker" >&2
status=0
mvn -B -ntp verify "$@" || status=$?

# Hadoop 3.4.2: Spark 4.0.1 ships 3.4.1, but users run 3.4.2 too. The contract suites of
# each binding (memory store, Týr, RADOS, flat:// over HDFS), compiled and run against 3.4.2; the profile
# builds into target/hadoop-3.4.2, so the run above keeps its classes and reports.
# Suites are chosen by package and suffix: every contract suite lives under a package
# named contract; surefire runs the *Test ones and failsafe the *IT ones. (Surefire's
# -Dtest overrides its excludes, so a suffix-less pattern would run *IT suites twice; and
# -Dit.test overrides the includes of both RADOS runs, so the native one is skipped.)
CONTRACT_MODULES=blobfs-core,blobfs-tyr,blobfs-rados,blobfs-hdfs-shim
if [ $status -eq 0 ]; then
  mvn -B -ntp -P hadoop-3.4.2 verify -pl "$CONTRACT_MODULES" -am \
    -Dtest='**/contract/**/*Test' -Dit.test='**/contract/**/*IT' \
    -Dsurefire.failIfNoSpecifiedTests=false -Dfailsafe.failIfNoSpecifiedTests=false \
    -Drados.native.skip=true || status=$?
fi

# The counts of each tier (and of the 3.4.2 run) in one place at the end of the log.
scripts/test-summary.sh
exit $status
