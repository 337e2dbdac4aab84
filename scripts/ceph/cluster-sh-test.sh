#!/usr/bin/env bash
# Tests of cluster.sh's own safety: every keyring of a fresh cephx cluster is mode
# 0600 even under a permissive umask, and a cluster root that another user could
# control (group/world-writable, or owned by someone else) is refused before anything
# is written into it. Uses its own root under a fresh temporary directory and port
# base 40300, so it never meets the shared clusters; stops and deletes what it made.
#
# Usage: scripts/ceph/cluster-sh-test.sh   (exit 0 when every check passes)
# Environment: BLOBFS_CEPH_TEST_PORT_BASE (40300).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d /tmp/blobfs-cluster-sh-test.XXXXXX)
export BLOBFS_CEPH_PORT_BASE=${BLOBFS_CEPH_TEST_PORT_BASE:-40300}
FAILED=0
fail() { echo "FAIL: $*" >&2; FAILED=1; }
pass() { echo "ok: $*" >&2; }

cleanup() {
  BLOBFS_CEPH_ROOT=$WORK/root timeout 120 bash "$HERE/cluster.sh" stop >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# Refusals first: cheap, and no cluster is started for them.
refused() {
  local what=$1 root=$2 out rc=0
  out=$(BLOBFS_CEPH_ROOT=$root timeout 60 bash "$HERE/cluster.sh" start 2>&1 >/dev/null) || rc=$?
  if [ "$rc" -eq 0 ]; then
    fail "$what: cluster.sh start accepted $root"
    BLOBFS_CEPH_ROOT=$root timeout 120 bash "$HERE/cluster.sh" stop >/dev/null 2>&1 || true
  elif ! grep -q "refusing" <<<"$out"; then
    fail "$what: exit $rc without saying why: $out"
  elif [ -n "$(ls -A "$root")" ]; then
    fail "$what: refused, but wrote into $root: $(ls -A "$root")"
  else
    pass "$what refused: $(grep refusing <<<"$out")"
  fi
}

mkdir -m 700 "$WORK/open" && chmod 0777 "$WORK/open"
refused "world-writable root" "$WORK/open"
mkdir -m 700 "$WORK/group" && chmod 0770 "$WORK/group"
refused "group-writable root" "$WORK/group"
if [ "$(id -u)" = 0 ]; then
  mkdir -m 700 "$WORK/theirs" && chown nobody "$WORK/theirs"
  refused "root owned by nobody" "$WORK/theirs"
else
  echo "skip: a root owned by another user needs root to make" >&2
fi

# A cluster under a permissive umask: keyrings must still be 0600, the root 0700.
umask 000
BLOBFS_CEPH_ROOT=$WORK/root BLOBFS_CEPH_BLOCK_SIZE=2G bash "$HERE/cluster.sh" start \
  --layout single --auth cephx >/dev/null
umask 077
mode=$(stat -c %a "$WORK/root")
[ "$mode" = 700 ] && pass "root created mode 700" || fail "root created mode $mode"
n=0
while IFS= read -r -d '' k; do
  n=$((n + 1))
  mode=$(stat -c %a "$k")
  [ "$mode" = 600 ] || fail "keyring $k has mode $mode"
done < <(find "$WORK/root" -name '*keyring*' -type f -print0)
# admin, client.blobfs, client.blobfs-all, mon.a, mgr.x, osd.0
[ "$n" -ge 6 ] && pass "$n keyrings, all checked" || fail "only $n keyrings found"

exit "$FAILED"
