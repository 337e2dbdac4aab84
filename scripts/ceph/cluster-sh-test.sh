#!/usr/bin/env bash
# Tests of cluster.sh's own safety: every keyring of a fresh cephx cluster is mode
# 0600 even under a permissive umask, a cluster root that another user could
# control (group/world-writable, or owned by someone else) is refused before anything
# is written into it, and a running cluster whose OSD was frozen (SIGSTOP, then
# SIGCONT or not) fails `status` and is replaced by `start` with one that serves I/O,
# as is one whose OSD is frozen while its manager is dead, and a cluster made for another port base is made anew on this one. Uses its own root
# under a fresh temporary directory and port bases 16300 and 16305, so it never meets
# the shared clusters; stops and deletes what it made.
#
# Usage: scripts/ceph/cluster-sh-test.sh   (exit 0 when every check passes)
# Environment: BLOBFS_CEPH_TEST_PORT_BASE (16300).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d /tmp/blobfs-cluster-sh-test.XXXXXX)
export BLOBFS_CEPH_PORT_BASE=${BLOBFS_CEPH_TEST_PORT_BASE:-16300}
FAILED=0
fail() { echo "FAIL: $*" >&2; FAILED=1; }
pass() { echo "ok: $*" >&2; }

cleanup() {
  BLOBFS_CEPH_ROOT=$WORK/root timeout 120 bash "$HERE/cluster.sh" stop >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# Default ports, cheap and first: every port base a script or image defaults to, plus the
# largest offset it adds (cluster.sh +30, hdfs.sh +7), stays below Linux's ephemeral range
# (32768-60999), where an outgoing connection can take a port before a daemon binds it.
REPO=$(cd "$HERE/../.." && pwd)
bases=$(grep -rhoE '_PORT_BASE(:-|=)[0-9]+' "$REPO/scripts" "$REPO/docker" | grep -oE '[0-9]+$' | sort -u)
[ -n "$bases" ] || fail "no default port base found under scripts/ and docker/"
for b in $bases; do
  if [ $((b + 30)) -lt 32768 ]; then pass "default port base $b (+30) is below 32768"
  else fail "default port base $b (+30) reaches Linux's ephemeral range (32768-60999)"; fi
done

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
  --layout single --auth cephx >"$WORK/first-env.sh"
umask 077
# The port base given in the environment wins over the default.
mon=$(sed -n "s/^export BLOBFS_CEPH_MON='\(.*\)'$/\1/p" "$WORK/first-env.sh")
[ "$mon" = "127.0.0.1:$BLOBFS_CEPH_PORT_BASE" ] && pass "monitor on the given port base ($mon)" ||
  fail "monitor at '$mon', not on the given port base $BLOBFS_CEPH_PORT_BASE"
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

# A frozen OSD: its daemon runs and the monitor still reports the cluster healthy, but
# no op completes. `status` must say so, and `start` must not reuse it as it is.
ENV_FILE=$WORK/env.sh
# A write, read back and delete through the env that start printed, as a test would do.
serves_io() {
  local k
  ( set -euo pipefail
    # shellcheck disable=SC1090
    . "$ENV_FILE"
    k=(-c "$CEPH_CONF" --name client.admin --keyring "$CEPH_KEYRING" -p "$BLOBFS_CEPH_POOL")
    head -c 65536 /dev/urandom >"$WORK/io.in"
    rm -f "$WORK/io.out"
    timeout 120 rados "${k[@]}" put sh-test-io "$WORK/io.in"
    timeout 120 rados "${k[@]}" get sh-test-io "$WORK/io.out"
    cmp -s "$WORK/io.in" "$WORK/io.out"
    timeout 120 rados "${k[@]}" rm sh-test-io ) >/dev/null 2>&1
}
frozen_osd() {
  local what=$1 cont=$2 pid out rc=0
  pid=$(cat "$WORK/root/single-cephx/run/osd.0.pid")
  kill -STOP "$pid"
  out=$(BLOBFS_CEPH_ROOT=$WORK/root timeout 300 bash "$HERE/cluster.sh" status 2>&1 >/dev/null) || rc=$?
  if [ "$rc" -eq 1 ] && grep -q "does not serve I/O" <<<"$out"; then
    pass "$what: status exits 1: $(grep "does not serve" <<<"$out")"
  else
    fail "$what: status with a frozen OSD exited $rc: $out"
  fi
  [ "$cont" = cont ] && kill -CONT "$pid"
  rc=0
  out=$(BLOBFS_CEPH_ROOT=$WORK/root BLOBFS_CEPH_BLOCK_SIZE=2G timeout 900 bash "$HERE/cluster.sh" start \
    2>"$WORK/start.err") || rc=$?
  echo "$out" >"$ENV_FILE"
  if [ "$rc" -ne 0 ]; then
    fail "$what: start exited $rc: $(tail -20 "$WORK/start.err")"
  elif ! serves_io; then
    fail "$what: start exited 0 but the cluster does not serve a write+read+delete: $(cat "$WORK/start.err")"
  elif [ "$cont" = stop ] && ! grep -q "does not serve I/O" "$WORK/start.err"; then
    fail "$what: start did not say it replaced the frozen cluster: $(cat "$WORK/start.err")"
  else
    pass "$what: start gives a cluster that serves I/O ($(grep -E "does not serve|already running" "$WORK/start.err" | head -1))"
  fi
  kill -CONT "$pid" 2>/dev/null || true
}
# Probes of a few seconds: a frozen OSD costs the probe this long.
export BLOBFS_CEPH_PROBE_TIMEOUT=10
frozen_osd "OSD frozen (SIGSTOP), then continued (SIGCONT)" cont
frozen_osd "OSD frozen (SIGSTOP) and left frozen" stop
if BLOBFS_CEPH_ROOT=$WORK/root timeout 300 bash "$HERE/cluster.sh" status >/dev/null 2>&1; then
  pass "status exits 0 on the replaced cluster"
else
  fail "status exits non-zero on the replaced cluster"
fi

# A frozen OSD while the manager is dead: not every daemon runs, so the probe that
# replaces a frozen cluster does not run; start must not wait on the frozen OSD until its
# deadline (it did: only the dead daemons were started).
pid=$(cat "$WORK/root/single-cephx/run/osd.0.pid")
mgr=$(cat "$WORK/root/single-cephx/run/mgr.x.pid")
kill -KILL "$mgr"
kill -STOP "$pid"
rc=0
out=$(BLOBFS_CEPH_ROOT=$WORK/root BLOBFS_CEPH_BLOCK_SIZE=2G timeout 600 bash "$HERE/cluster.sh" start \
  2>"$WORK/start.err") || rc=$?
echo "$out" >"$ENV_FILE"
if [ "$rc" -ne 0 ]; then
  fail "OSD frozen, manager dead: start exited $rc: $(tail -20 "$WORK/start.err")"
elif ! serves_io; then
  fail "OSD frozen, manager dead: start exited 0 but no write+read+delete: $(cat "$WORK/start.err")"
elif ! grep -q "is stopped (SIGSTOP)" "$WORK/start.err"; then
  fail "OSD frozen, manager dead: start did not say it stopped the frozen daemon: $(cat "$WORK/start.err")"
else
  pass "OSD frozen, manager dead: start restarts every daemon and serves I/O"
fi
kill -CONT "$pid" 2>/dev/null || true

# Another port base on the same root (another checkout's, or an older cluster.sh's
# default): the monmap keeps the address the cluster was made with, so a restart on its
# data never reaches quorum. status must say so, and start must make a cluster that
# serves I/O on the new address.
other=$((BLOBFS_CEPH_PORT_BASE + 5))
rc=0
out=$(BLOBFS_CEPH_ROOT=$WORK/root BLOBFS_CEPH_PORT_BASE=$other timeout 120 bash "$HERE/cluster.sh" status 2>&1 >/dev/null) || rc=$?
if [ "$rc" -eq 1 ] && grep -q "made for monitor 127.0.0.1:$BLOBFS_CEPH_PORT_BASE" <<<"$out"; then
  pass "status with another port base exits 1: $(grep "made for" <<<"$out")"
else
  fail "status with another port base exited $rc: $out"
fi
rc=0
out=$(BLOBFS_CEPH_ROOT=$WORK/root BLOBFS_CEPH_PORT_BASE=$other BLOBFS_CEPH_BLOCK_SIZE=2G timeout 900 \
  bash "$HERE/cluster.sh" start 2>"$WORK/start.err") || rc=$?
echo "$out" >"$ENV_FILE"
mon=$(sed -n "s/^export BLOBFS_CEPH_MON='\(.*\)'$/\1/p" "$ENV_FILE")
if [ "$rc" -ne 0 ]; then
  fail "start with another port base exited $rc: $(tail -20 "$WORK/start.err")"
elif [ "$mon" != "127.0.0.1:$other" ]; then
  fail "start with port base $other exported monitor '$mon'"
elif ! serves_io; then
  fail "start with another port base: no write+read+delete at $mon: $(cat "$WORK/start.err")"
else
  pass "start with another port base made a cluster serving I/O at $mon ($(grep "made for" "$WORK/start.err" | head -1))"
fi
export BLOBFS_CEPH_PORT_BASE=$other

exit "$FAILED"
