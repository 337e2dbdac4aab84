#!/usr/bin/env bash
# CephFS on the project's single-OSD cephx cluster (scripts/ceph/cluster.sh): the paper's
# file-based baseline on the same RADOS. Adds two pools, a file system, one ceph-mds and a
# ceph-fuse mount; Hadoop jobs reach it as file://MOUNT/... (BRIEF section 6).
#
# Usage:
#   scripts/ceph/cephfs.sh start|stop|status|env
#   eval "$(scripts/ceph/cephfs.sh start)"     # exports CEPHFS_MOUNT and CEPHFS_URI
#
# start: starts (or reuses) the cluster, creates the pools cephfs_metadata (pg_num 8) and
#   cephfs_data (pg_num 16), size 1, and the file system "blobfs" once; starts mds.a
#   unless it runs; waits (bounded, BLOBFS_CEPHFS_TIMEOUT s, default 120) until an MDS
#   is up:active; mounts with ceph-fuse as client.admin unless mounted, and checks that a
#   file written through the mount reads back. Every step is a no-op when already done.
#   On failure it prints the logs' tails, unmounts and stops the MDS it started.
#   stdout of start/env is only the exports: CEPHFS_MOUNT, CEPHFS_URI, CEPH_CONF.
# stop: unmounts (fusermount -u, retried for up to 30 s while the mount is busy; then
#   a lazy unmount, said on stderr), waits for ceph-fuse to exit (SIGTERM after 5 s,
#   SIGKILL after 10 s), then SIGTERM to the MDS (SIGKILL after 20 s: with a client session
#   still open, shutting down rank 0 took longer than that; a killed MDS replays its
#   journal on the next start, which cephfs-sh-test.sh checks by reading a file back). The
#   cluster keeps running: scripts/ceph/cluster.sh stop stops it.
# status: exit 0 when the MDS runs and the mount answers.
# Mount point: ${BLOBFS_CEPHFS_MOUNT:-$BLOBFS_CEPH_ROOT/mnt-cephfs}, outside the cluster's
#   own directory, so `cluster.sh purge` (rm -rf of that directory) never walks into it.
# Environment: as cluster.sh (BLOBFS_CEPH_ROOT, BLOBFS_CEPH_PORT_BASE, ...).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
unset CEPH_KEYRING CEPH_CONF CEPH_ARGS
log() { echo "[cephfs] $*" >&2; }
die() { echo "[cephfs] ERROR: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//' >&2; exit 2; }

CMD=${1:-}
[ -n "$CMD" ] || usage
umask 077
source "$HERE/../lib/owned-root.sh"
ROOT=$(owned_root "${BLOBFS_CEPH_ROOT:-/tmp/blobfs-ceph}" BLOBFS_CEPH_ROOT) || exit 1
DIR=$ROOT/single-cephx
CONF=$DIR/ceph.conf
ADMIN_KEYRING=$DIR/ceph.client.admin.keyring
MOUNT=${BLOBFS_CEPHFS_MOUNT:-$ROOT/mnt-cephfs}
FS_NAME=blobfs
META_POOL=cephfs_metadata
DATA_POOL=cephfs_data
MDS_DIR=$DIR/mds/mds.a
MDS_PID=$DIR/run/mds.a.pid
TIMEOUT=${BLOBFS_CEPHFS_TIMEOUT:-120}

c() { timeout 25 ceph -c "$CONF" --name client.admin --keyring "$ADMIN_KEYRING" --connect-timeout 20 "$@"; }

env_text() {
  cat <<EOF
export CEPHFS_MOUNT='$MOUNT'
export CEPHFS_URI='file://$MOUNT'
export CEPH_CONF='$CONF'
EOF
}

# pid of this cluster's MDS (checked against its command line), or fail
mds_pid() {
  local pid
  pid=$(cat "$MDS_PID" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$CONF" || return 1
  local st
  st=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
  [ "$st" != Z ] && [ "$st" != X ] || return 1
  echo "$pid"
}

mounted() { mountpoint -q "$MOUNT" 2>/dev/null && timeout 10 stat -f "$MOUNT" >/dev/null 2>&1; }

mds_active() { c mds stat 2>/dev/null | grep -q 'up:active'; }

wait_for() { # wait_for WHAT CMD...
  local what=$1 deadline=$(( $(date +%s) + TIMEOUT ))
  shift
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || { show_logs; die "timed out after ${TIMEOUT}s waiting for $what"; }
    sleep 1
  done
}

show_logs() {
  c -s >&2 2>/dev/null || true
  c fs status >&2 2>/dev/null || true
  local f
  for f in "$DIR"/log/mds.a.log "$DIR"/log/ceph-fuse.log "$DIR"/log/start-mds.a.log; do
    [ -s "$f" ] && { echo "---- tail $f ----" >&2; tail -n 15 "$f" >&2; }
  done
  return 0
}

ensure_pool() { # ensure_pool NAME PGS
  if ! c osd pool ls 2>/dev/null | grep -qx "$1"; then
    c osd pool create "$1" "$2" "$2" replicated --autoscale-mode=off >/dev/null 2>&1
  fi
  c osd pool set "$1" size 1 --yes-i-really-mean-it >/dev/null 2>&1
}

start_mds() {
  if mds_pid >/dev/null; then return 0; fi
  mkdir -p "$MDS_DIR" "$DIR/log" "$DIR/run"
  if [ ! -s "$MDS_DIR/keyring" ]; then
    c auth get-or-create mds.a mon 'allow profile mds' osd 'allow rwx' mds 'allow *' \
      mgr 'allow profile mds' -o "$MDS_DIR/keyring" >/dev/null
  fi
  log "starting mds.a"
  # The daemon's settings on its command line: cluster.sh rewrites ceph.conf on a restart.
  # 9>&-: the daemon must not hold cluster.sh's lock descriptor if a caller passed it on.
  ceph-mds -c "$CONF" -i a --keyring "$MDS_DIR/keyring" --mds-data "$MDS_DIR" \
    --log-file "$DIR/log/mds.a.log" --admin-socket "$DIR/run/mds.a.asok" \
    --pid-file "$MDS_PID" 9>&- >"$DIR/log/start-mds.a.log" 2>&1 ||
    { show_logs; die "ceph-mds failed to start"; }
}

stop_mds() {
  local pid n
  pid=$(mds_pid) || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((n = 0; n < 200; n++)); do mds_pid >/dev/null || break; sleep 0.1; done
  if mds_pid >/dev/null; then
    log "mds.a did not exit after SIGTERM; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$MDS_PID"
  log "mds.a stopped"
}

# pids of the ceph-fuse processes serving this cluster's mount
fuse_pids() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(cat "$p/comm" 2>/dev/null)" = ceph-fuse ] || continue
    tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "$CONF" || continue
    tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "$MOUNT" || continue
    echo "${p#/proc/}"
  done
}

# After the unmount ceph-fuse closes its session and exits; it must be gone before the
# MDS or the cluster stops, or it keeps retrying the monitor (seen: an hour).
wait_fuse_exit() {
  local n pids
  for ((n = 0; n < 100; n++)); do
    pids=$(fuse_pids)
    [ -z "$pids" ] && return 0
    [ "$n" = 50 ] && { log "ceph-fuse $pids still running 5 s after the unmount: SIGTERM"; kill -TERM $pids 2>/dev/null || true; }
    sleep 0.1
  done
  log "ceph-fuse $pids did not exit: SIGKILL"
  kill -KILL $pids 2>/dev/null || true
}

unmount() {
  if mountpoint -q "$MOUNT" 2>/dev/null; then
    local n done=
    for ((n = 0; n < 30; n++)); do
      timeout 15 fusermount -u "$MOUNT" 2>/dev/null && { log "unmounted $MOUNT"; done=1; break; }
      sleep 1
    done
    if [ -z "$done" ]; then
      log "$MOUNT stayed busy for 30 s (open files: $(timeout 10 fuser -m "$MOUNT" 2>&1 | tr -s ' ')); lazy unmount"
      timeout 15 fusermount -uz "$MOUNT" || die "cannot unmount $MOUNT"
    fi
  fi
  wait_fuse_exit
}

do_start() {
  eval "$("$HERE/cluster.sh" start --layout single --auth cephx)"
  for b in ceph-mds ceph-fuse; do
    command -v "$b" >/dev/null 2>&1 || die "$b missing: apt-get install ceph-mds ceph-fuse"
  done
  trap 'rc=$?; if [ $rc -ne 0 ]; then log "start failed: unmounting, stopping the MDS"; unmount || true; stop_mds; fi' EXIT
  if ! c fs ls 2>/dev/null | grep -q "name: $FS_NAME,"; then
    log "creating pools and the file system $FS_NAME"
    ensure_pool "$META_POOL" 8
    ensure_pool "$DATA_POOL" 16
    c fs new "$FS_NAME" "$META_POOL" "$DATA_POOL" >/dev/null 2>&1 ||
      c fs ls 2>/dev/null | grep -q "name: $FS_NAME," || die "ceph fs new failed"
  fi
  start_mds
  wait_for "an active MDS" mds_active
  if ! mounted; then
    # A dead ceph-fuse leaves a mount point that answers ENOTCONN: clear it first.
    mountpoint -q "$MOUNT" 2>/dev/null && timeout 15 fusermount -uz "$MOUNT" || true
    mkdir -p "$MOUNT"
    log "mounting $MOUNT"
    timeout "$TIMEOUT" ceph-fuse -c "$CONF" --name client.admin --keyring "$ADMIN_KEYRING" \
      --log-file "$DIR/log/ceph-fuse.log" "$MOUNT" >"$DIR/log/start-ceph-fuse.log" 2>&1 ||
      { cat "$DIR/log/start-ceph-fuse.log" >&2; show_logs; die "ceph-fuse failed"; }
    wait_for "the mount" mounted
  fi
  local probe=$MOUNT/.cephfs-sh-probe-$$
  echo "probe $$" >"$probe" && [ "$(cat "$probe")" = "probe $$" ] || die "$MOUNT does not read back what was written"
  rm -f "$probe"
  trap - EXIT
  log "ready: $MOUNT"
  env_text
}

case "$CMD" in
  start) do_start ;;
  stop) unmount; stop_mds ;;
  status)
    pid=$(mds_pid) || { log "mds.a not running"; exit 1; }
    mounted || { log "mds.a running (pid $pid), $MOUNT not mounted"; exit 1; }
    log "mds.a running (pid $pid), $MOUNT mounted"
    ;;
  env) env_text ;;
  -h|--help) usage ;;
  *) usage ;;
esac
