#!/usr/bin/env bash
# Tests of cephfs.sh on a cluster of its own (fresh root under /tmp, port base 16340):
# start mounts a CephFS that reads back what was written; a second start is a no-op (same
# MDS process, same mount); stop unmounts and stops the MDS; the cluster then stops and
# starts again with its file system offline; a start after that finds the file again;
# status answers 1 when stopped. Stops and deletes everything it made.
#
# Usage: scripts/ceph/cephfs-sh-test.sh   (exit 0 when every check passes)
# Environment: BLOBFS_CEPHFS_TEST_PORT_BASE (16340).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d /tmp/blobfs-cephfs-sh-test.XXXXXX)
export BLOBFS_CEPH_ROOT=$WORK/root BLOBFS_CEPH_PORT_BASE=${BLOBFS_CEPHFS_TEST_PORT_BASE:-16340}
export BLOBFS_CEPH_BLOCK_SIZE=2G
FAILED=0
fail() { echo "FAIL: $*" >&2; FAILED=1; }
pass() { echo "ok: $*" >&2; }

cleanup() {
  timeout 120 bash "$HERE/cephfs.sh" stop >/dev/null 2>&1 || true
  timeout 120 bash "$HERE/cluster.sh" stop >/dev/null 2>&1 || true
  # only once nothing is mounted below it
  mountpoint -q "$WORK/root/mnt-cephfs" 2>/dev/null || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

mds_pid() { cat "$WORK/root/single-cephx/run/mds.a.pid" 2>/dev/null; }

eval "$(timeout 300 bash "$HERE/cephfs.sh" start)"
[ "$CEPHFS_URI" = "file://$CEPHFS_MOUNT" ] && pass "exports CEPHFS_URI $CEPHFS_URI" || fail "CEPHFS_URI=$CEPHFS_URI, CEPHFS_MOUNT=$CEPHFS_MOUNT"
grep -q " $CEPHFS_MOUNT fuse.ceph-fuse " /proc/mounts && pass "ceph-fuse mounted at $CEPHFS_MOUNT" || fail "no ceph-fuse mount at $CEPHFS_MOUNT: $(grep fuse /proc/mounts)"
head -c $((8 << 20)) /dev/urandom >"$WORK/data"
cp "$WORK/data" "$CEPHFS_MOUNT/data"
cmp -s "$WORK/data" "$CEPHFS_MOUNT/data" && pass "8 MiB read back through the mount" || fail "8 MiB differ through the mount"
pid1=$(mds_pid)

timeout 120 bash "$HERE/cephfs.sh" start >/dev/null
[ "$(mds_pid)" = "$pid1" ] && pass "second start kept mds.a (pid $pid1)" || fail "second start: mds pid $pid1 -> $(mds_pid)"
[ "$(grep -c " $CEPHFS_MOUNT " /proc/mounts)" = 1 ] && pass "second start kept one mount" || fail "mounts after second start: $(grep -c " $CEPHFS_MOUNT " /proc/mounts)"

timeout 120 bash "$HERE/cephfs.sh" stop
grep -q " $CEPHFS_MOUNT " /proc/mounts && fail "still mounted after stop" || pass "stop unmounted"
left=$(for p in /proc/[0-9]*; do [ "$(cat "$p/comm" 2>/dev/null)" = ceph-fuse ] && tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "$CEPHFS_MOUNT" && echo "${p#/proc/}"; done; true)
[ -z "$left" ] && pass "no ceph-fuse left after stop" || fail "ceph-fuse $left still running after stop"
[ -n "$pid1" ] && [ -d "/proc/$pid1" ] && [ "$(awk '{print $3}' "/proc/$pid1/stat")" != Z ] && fail "mds pid $pid1 alive after stop" || pass "stop ended the MDS"
rc=0; timeout 60 bash "$HERE/cephfs.sh" status 2>/dev/null || rc=$?
[ "$rc" = 1 ] && pass "status exits 1 when stopped" || fail "status exit $rc when stopped"

timeout 120 bash "$HERE/cluster.sh" stop >/dev/null 2>&1
timeout 300 bash "$HERE/cluster.sh" start >/dev/null \
  && pass "the cluster starts again while its file system's MDS is stopped" \
  || fail "cluster.sh start refused the cluster while the file system's MDS is stopped"

timeout 300 bash "$HERE/cephfs.sh" start >/dev/null
cmp -s "$WORK/data" "$CEPHFS_MOUNT/data" && pass "the file survived stop and start" || fail "file lost or different after a restart"
timeout 60 bash "$HERE/cephfs.sh" status 2>/dev/null && pass "status exits 0 when running" || fail "status failed when running"

exit "$FAILED"
