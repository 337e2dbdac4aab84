#!/usr/bin/env bash
# Starts and manages small, self-contained Ceph (Pacific) clusters for BlobFS tests,
# without systemd or Docker. Each (layout, auth) pair is its own cluster in its own
# directory with its own monitor port, so several can run side by side.
#
# Usage:
#   scripts/ceph/cluster.sh start  [--layout single|multi] [--auth cephx|none]
#   scripts/ceph/cluster.sh stop   [--layout ...] [--auth ...]
#   scripts/ceph/cluster.sh status [--layout ...] [--auth ...]
#   scripts/ceph/cluster.sh env    [--layout ...] [--auth ...]
#   scripts/ceph/cluster.sh purge  [--layout ...] [--auth ...]
#   scripts/ceph/cluster.sh osd-stop|osd-start --id N [--layout ...] [--auth ...]
#   scripts/ceph/cluster.sh wait   [--layout ...] [--auth ...]
#   eval "$(scripts/ceph/cluster.sh start --layout single --auth cephx)"
#
# Defaults: --layout single --auth cephx.
#   single: 1 mon + 1 mgr + 1 bluestore OSD (CRUSH host bucket host-a, chooseleaf type 0)
#   multi:  1 mon + 1 mgr + 3 bluestore OSDs in CRUSH host buckets host-a, host-b,
#           host-c (chooseleaf type 1: one replica per host)
# Cluster directory: ${BLOBFS_CEPH_ROOT:-/tmp/blobfs-ceph}/<layout>-<auth>/
#   The root is created mode 0700; an existing root (or a symlink to it) that is not
#   the caller's, or is group- or world-writable, is refused (exit 1). Every file the
#   script and its daemons create, keyrings included, is mode 0600 (umask 077).
# Monitor: 127.0.0.1, msgr v1, port ${BLOBFS_CEPH_PORT_BASE:-16100} + offset
#   (single-cephx +0, single-none +10, multi-cephx +20, multi-none +30). Defaults stay
#   below Linux's ephemeral range (32768-60999), where an outgoing connection can take
#   the port before the monitor binds it, and below 20000-32000, where the tests pick
#   theirs (TestPorts); a BLOBFS_CEPH_PORT_BASE of one's own should too.
# Pools: blobfs (pg_num 32) and blobfs-other (pg_num 8), size 1, application rados.
# cephx: client.admin (full), client.blobfs (pool blobfs only), client.blobfs-all
#   (both pools), each with its own keyring file in the cluster directory.
# stdout of start/env is only the shell exports (start also writes <dir>/env.sh):
#   CEPH_CONF, CEPH_KEYRING (admin; empty with auth none),
#   BLOBFS_CEPH_CLIENT_KEYRING (client.blobfs), BLOBFS_CEPH_ALL_CLIENT_KEYRING
#   (client.blobfs-all), BLOBFS_CEPH_POOL, BLOBFS_CEPH_OTHER_POOL, BLOBFS_CEPH_MON,
#   BLOBFS_CEPH_DIR, BLOBFS_CEPH_AUTH, BLOBFS_CEPH_LAYOUT. Progress goes to stderr.
# start: no-op when running and serving I/O (the I/O probe below); restarts dead
#   daemons on existing data; otherwise creates the cluster. A cluster made for another
#   monitor address (another port base; or made by a cluster.sh that did not record it)
#   is stopped and created anew: its monmap keeps the address it was made with. A cluster whose daemons all
#   run but that fails the probe (e.g. an OSD that was SIGSTOPped, and SIGCONTed or not,
#   stays up in the osdmap while no op completes) is stopped and restarted on its data,
#   and created anew if that does not serve I/O either; stderr says so. One with some
#   daemons dead and another frozen (SIGSTOP) is stopped whole and restarted on its
#   data. Waits (bounded)
#   until all OSDs are up and in, every PG is active+clean, health is OK (or only
#   harmless warnings) and the probe passes; on failure it prints logs and stops the
#   daemons it started.
# I/O probe: the monitor answers, and a small object is written, read back (same
#   bytes) and deleted in pool blobfs (namespace cluster-sh-probe), each step bounded
#   by BLOBFS_CEPH_PROBE_TIMEOUT.
# stop: stops the daemons (OSDs, then mgr, then mon; a stopped daemon is SIGCONTed
#   first); purge: stop + delete the dir.
# wait: waits (bounded, as start) until the running cluster is usable again, as start
#   judges it (every OSD active, every PG active+clean), without starting anything: for
#   fault tests after an OSD was frozen or marked down.
# status: `ceph -s`, exit 1 when not running or failing the I/O probe.
# BLOBFS_CEPH_OSD_ARGS: extra options for the OSDs this run starts (e.g.
#   "--osd_memory_target=6442450944"); they win over ceph.conf. Running OSDs keep theirs.
# Disk: each OSD's block file is sparse but only grows (freed space is not punched
#   back); purge reclaims it.
#
# Environment: BLOBFS_CEPH_ROOT, BLOBFS_CEPH_PORT_BASE (16100),
#   BLOBFS_CEPH_START_TIMEOUT (s, 180), BLOBFS_CEPH_BLOCK_SIZE (20G),
#   BLOBFS_CEPH_CLI_TIMEOUT (s, 20), BLOBFS_CEPH_PROBE_TIMEOUT (s, 20),
#   BLOBFS_CEPH_KEEP_ON_FAIL=1 (leave daemons of a
#   failed start running), BLOBFS_CEPH_ALLOWED_WARNINGS (health codes to accept).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The daemons started here must not inherit a client's settings: librados and the
# daemons honour CEPH_KEYRING / CEPH_CONF / CEPH_ARGS from the environment, and with
# the admin keyring from env.sh exported, ceph-mgr/ceph-osd fail cephx
# ("failed to fetch mon config"; the monitor logs "failed to decode
# CephXAuthenticate: End of buffer").
unset CEPH_KEYRING CEPH_CONF CEPH_ARGS

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//' >&2; exit 2; }
T_START=$(date +%s%N)
log() { local ms=$(( ($(date +%s%N) - T_START) / 1000000 )); printf '[ceph-cluster %s +%d.%01ds] %s\n' "$LAYOUT-$AUTH" $((ms / 1000)) $((ms % 1000 / 100)) "$*" >&2; }
die() { echo "[ceph-cluster ${LAYOUT:-?}-${AUTH:-?}] ERROR: $*" >&2; exit 1; }

CMD=${1:-}
[ -n "$CMD" ] || usage
shift
LAYOUT=single
AUTH=cephx
while [ $# -gt 0 ]; do
  case "$1" in
    --layout) LAYOUT=${2:?--layout needs a value}; shift 2 ;;
    --layout=*) LAYOUT=${1#*=}; shift ;;
    --auth) AUTH=${2:?--auth needs a value}; shift 2 ;;
    --auth=*) AUTH=${1#*=}; shift ;;
    --id) OSD_ID=${2:?--id needs a value}; shift 2 ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done
case "$LAYOUT" in single) NOSD=1; LOFF=0 ;; multi) NOSD=3; LOFF=20 ;; *) die "--layout must be single or multi" ;; esac
case "$AUTH" in cephx) AOFF=0 ;; none) AOFF=10 ;; *) die "--auth must be cephx or none" ;; esac

# Keyrings, and everything else this script or the daemons it starts create, are the
# caller's alone whatever umask the caller has.
umask 077
# The root holds every cluster's keyrings.
source "$HERE/../lib/owned-root.sh"
ROOT=$(owned_root "${BLOBFS_CEPH_ROOT:-/tmp/blobfs-ceph}" BLOBFS_CEPH_ROOT) || exit 1
DIR=$ROOT/$LAYOUT-$AUTH
PORT=$(( ${BLOBFS_CEPH_PORT_BASE:-16100} + LOFF + AOFF ))
MON_ADDR=127.0.0.1:$PORT
CONF=$DIR/ceph.conf
ADMIN_KEYRING=$DIR/ceph.client.admin.keyring
CLIENT_KEYRING=$DIR/ceph.client.blobfs.keyring
ALL_KEYRING=$DIR/ceph.client.blobfs-all.keyring
POOL=blobfs
OTHER_POOL=blobfs-other
HOSTS=(host-a host-b host-c)
START_TIMEOUT=${BLOBFS_CEPH_START_TIMEOUT:-180}
CLI_TIMEOUT=${BLOBFS_CEPH_CLI_TIMEOUT:-20}
PROBE_TIMEOUT=${BLOBFS_CEPH_PROBE_TIMEOUT:-20}
BLOCK_SIZE=${BLOBFS_CEPH_BLOCK_SIZE:-20G}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
# Health checks that do not make a test cluster unusable.
# The FS_* and MDS_* codes: a CephFS that scripts/ceph/cephfs.sh made on this cluster is
# offline while its MDS is stopped, which leaves RADOS as usable as ever (cephfs.sh checks
# its own MDS); refusing them left the cluster unstartable after any CephFS benchmark.
ALLOWED_WARNINGS=${BLOBFS_CEPH_ALLOWED_WARNINGS:-POOL_NO_REDUNDANCY AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED AUTH_INSECURE_GLOBAL_ID_RECLAIM MON_DISK_LOW RECENT_CRASH RECENT_MGR_MODULE_CRASH TOO_FEW_PGS POOL_TOO_FEW_PGS FS_DEGRADED FS_WITH_FAILED_MDS MDS_ALL_DOWN MDS_UP_LESS_THAN_MAX}

AUTH_ARGS=()
[ "$AUTH" = cephx ] && AUTH_ARGS=(--name client.admin --keyring "$ADMIN_KEYRING")

# Every CLI call names the conf and keyring and is bounded in time.
c() { timeout $(( CLI_TIMEOUT + 5 )) ceph -c "$CONF" "${AUTH_ARGS[@]}" --connect-timeout "$CLI_TIMEOUT" "$@"; }
# creation step: quiet on success, shows the command and its output on failure
# (retried: under heavy load, e.g. several clusters created at once, the monitor
# can take longer than the CLI timeout; every creation command is idempotent)
cm() {
  local out attempt
  for attempt in 1 2 3; do
    out=$(c "$@" 2>&1) && return 0
    log "ceph $* failed (attempt $attempt): $(echo "$out" | grep -v '^$' | tail -1)"
    sleep 2
  done
  echo "$out" >&2
  die "ceph $* failed"
}
# quiet variant, for polling
cq() { c "$@" 2>/dev/null; }
# rados CLI as the admin; a frozen OSD would make an op wait forever (the default
# rados_osd_op_timeout is 0), so every op and the process itself are bounded
r() {
  timeout $(( PROBE_TIMEOUT + 5 )) rados -c "$CONF" "${AUTH_ARGS[@]}" \
    --rados_osd_op_timeout "$PROBE_TIMEOUT" --rados_mon_op_timeout "$PROBE_TIMEOUT" \
    --client_mount_timeout "$PROBE_TIMEOUT" "$@"
}

daemons() {
  echo mon.a
  echo mgr.x
  local i
  for ((i = 0; i < NOSD; i++)); do echo "osd.$i"; done
}

# pid of a running daemon of THIS cluster (checked against its command line), or fail
daemon_pid() {
  local pf=$DIR/run/$1.pid pid cmd
  [ -f "$pf" ] || return 1
  pid=$(cat "$pf" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  # The daemon itself, as start_daemon runs it: a stale pid file's pid reused by another
  # process naming this ceph.conf (a `ceph -c ...` probe) is not it; taking it for the
  # daemon left osd.0 of a cluster unstarted once, and the start timed out.
  [[ "$cmd" == "ceph-${1%%.*} -c $CONF -i ${1#*.} "* ]] || return 1
  echo "$pid"
}

# a pid counts as alive unless gone or a zombie (PID 1 here may not reap orphans)
alive() {
  local st
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# a daemon stopped by a signal (SIGSTOP in fault tests: state T, or t when traced)
frozen() {
  local st
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ "$st" = T ] || [ "$st" = t ]
}

any_frozen() {
  local d pid
  for d in $(daemons); do pid=$(daemon_pid "$d") && frozen "$pid" && return 0; done
  return 1
}

all_running() {
  local d
  for d in $(daemons); do daemon_pid "$d" >/dev/null || return 1; done
}

any_running() {
  local d
  for d in $(daemons); do daemon_pid "$d" >/dev/null && return 0; done
  return 1
}

env_text() {
  local keyring="" client=""
  local all=""
  if [ "$AUTH" = cephx ]; then keyring=$ADMIN_KEYRING; client=$CLIENT_KEYRING; all=$ALL_KEYRING; fi
  cat <<EOF
export CEPH_CONF='$CONF'
export CEPH_KEYRING='$keyring'
export BLOBFS_CEPH_CLIENT_KEYRING='$client'
export BLOBFS_CEPH_ALL_CLIENT_KEYRING='$all'
export BLOBFS_CEPH_AUTH='$AUTH'
export BLOBFS_CEPH_LAYOUT='$LAYOUT'
export BLOBFS_CEPH_POOL='$POOL'
export BLOBFS_CEPH_OTHER_POOL='$OTHER_POOL'
export BLOBFS_CEPH_MON='$MON_ADDR'
export BLOBFS_CEPH_DIR='$DIR'
EOF
}

write_conf() {
  local fsid=$1 authmode=cephx chooseleaf=0 i
  [ "$AUTH" = none ] && authmode=none
  [ "$LAYOUT" = multi ] && chooseleaf=1
  cat >"$CONF" <<EOF
# Generated by scripts/ceph/cluster.sh for the BlobFS test cluster $LAYOUT-$AUTH.
[global]
fsid = $fsid
mon initial members = a
mon host = [v1:$MON_ADDR]
ms bind msgr2 = false
ms bind ipv6 = false
auth cluster required = $authmode
auth service required = $authmode
auth client required = $authmode
auth allow insecure global id reclaim = false
run dir = $DIR/run
crash dir = $DIR/crash
exit on mon conf = false
# pools: one replica, no autoscaler, no redundancy warnings
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon pg warn min per osd = 0
mon data avail warn = 2
mon data avail crit = 1
osd crush chooseleaf type = $chooseleaf
osd crush update on start = false
# map changes commit faster (default 1 s per proposal)
paxos propose interval = 0.1
# fast failure detection for tests
osd heartbeat interval = 2
osd heartbeat grace = 10
mon osd min down reporters = 1
mon osd reporter subtree level = osd
mon osd down out interval = 60
mon osd report timeout = 60
osd mon report interval = 2
osd beacon report interval = 30
mgr stats period = 1
mon mgr beacon grace = 15
mgr tick period = 1

[mon]
mon data = $DIR/mon/\$name
keyring = $DIR/mon/\$name/keyring
log file = $DIR/log/\$name.log
admin socket = $DIR/run/\$name.asok
pid file = $DIR/run/\$name.pid
mon cluster log file = $DIR/log/\$cluster.\$channel.log
mgr initial modules = iostat

[mgr]
# Do not even load modules the tests never use (less memory). Always-on modules
# (balancer, crash, devicehealth, orchestrator, pg_autoscaler, progress,
# rbd_support, status, telemetry, volumes) cannot be listed here: the mgr then
# reports MGR_MODULE_ERROR. The balancer and devicehealth are switched off through
# the config database at creation instead.
mgr disabled modules = alerts,cephadm,dashboard,diskprediction_local,influx,insights,k8sevents,localpool,mirroring,nfs,osd_perf_query,osd_support,prometheus,restful,rook,selftest,snap_schedule,stats,telegraf,test_orchestrator,zabbix
mgr data = $DIR/mgr/\$name
keyring = $DIR/mgr/\$name/keyring
log file = $DIR/log/\$name.log
admin socket = $DIR/run/\$name.asok
pid file = $DIR/run/\$name.pid
public addr = 127.0.0.1

[osd]
osd data = $DIR/osd/\$name
keyring = $DIR/osd/\$name/keyring
log file = $DIR/log/\$name.log
admin socket = $DIR/run/\$name.asok
pid file = $DIR/run/\$name.pid
public addr = 127.0.0.1
cluster addr = 127.0.0.1
osd objectstore = bluestore
# With auth none, an OSD starting in parallel with others sometimes sends its
# 'osd crush set-device-class' before it knows the cluster fsid; the monitor
# answers 'wrong fsid' (EPERM) and the OSD exits. Placement is set explicitly
# by cluster.sh anyway.
osd class update on start = false
# the block device is a sparse file OUTSIDE the OSD data dir
bluestore block path = $DIR/block/\$name.block
bluestore block create = true
bluestore block size = $BLOCK_SIZE
bluestore block db create = false
bluestore block wal create = false
# small memory footprint
osd memory target = 939524096
bluestore cache autotune = false
bluestore cache size = 134217728

[client]
EOF
  if [ "$AUTH" = cephx ]; then
    echo "keyring = $ADMIN_KEYRING" >>"$CONF"
  fi
  for ((i = 0; i < NOSD; i++)); do
    printf '\n[osd.%d]\ncrush location = root=default host=%s\n' "$i" "${HOSTS[$i]}" >>"$CONF"
  done
}

start_daemon() {
  local d=$1 type id
  type=${d%%.*}
  id=${d#*.}
  if daemon_pid "$d" >/dev/null; then return 0; fi
  local attempt extra=()
  # Options on the command line win over ceph.conf's (e.g. the benchmarks' OSD cache).
  if [ "$type" = osd ] && [ -n "${BLOBFS_CEPH_OSD_ARGS:-}" ]; then
    read -ra extra <<<"$BLOBFS_CEPH_OSD_ARGS"
  fi
  for attempt in 1 2 3; do
    rm -f "$DIR/run/$d.pid"
    # 9>&-: the daemon must not inherit the lock file descriptor. The command
    # returns once the daemon has initialised (or failed to).
    if "ceph-$type" -c "$CONF" -i "$id" "${extra[@]}" 9>&- >"$DIR/log/start-$d.log" 2>&1; then
      return 0
    fi
    log "ceph-$type -i $id failed to start (attempt $attempt): $(grep -v '^$' "$DIR/log/start-$d.log" | tail -1)"
    sleep 1
  done
  cat "$DIR/log/start-$d.log" >&2
  die "ceph-$type -i $id failed to start; see $DIR/log/$d.log"
}

# starts every OSD that is not running, in parallel (each takes ~2 s to init)
start_osds() {
  local i pids=() ids=()
  for ((i = 0; i < NOSD; i++)); do
    daemon_pid "osd.$i" >/dev/null && continue
    start_daemon "osd.$i" &
    pids+=($!)
    ids+=("$i")
  done
  [ ${#ids[@]} -gt 0 ] && log "starting osd.{${ids[*]}}"
  for ((i = 0; i < ${#pids[@]}; i++)); do
    wait "${pids[$i]}" || die "osd.${ids[$i]} did not start"
  done
}

show_logs() {
  local f
  echo "---- ceph -s ----" >&2
  cq -s >&2 || echo "(ceph -s failed)" >&2
  cq health detail >&2 || true
  for f in "$DIR"/log/mon.*.log "$DIR"/log/mgr.*.log "$DIR"/log/osd.*.log "$DIR"/log/start-*.log; do
    [ -s "$f" ] || continue
    echo "---- tail $f ----" >&2
    tail -n 15 "$f" >&2
  done
}

# One status probe; prints a one-line reason when not ready, nothing when ready.
ready_reason() {
  local st pools i ost
  # the osdmap may still list an OSD as up from before a restart: ask each daemon
  for ((i = 0; i < NOSD; i++)); do
    ost=$(timeout 10 ceph --admin-daemon "$DIR/run/osd.$i.asok" status 2>/dev/null |
      sed -n 's/.*"state": *"\([a-z_]*\)".*/\1/p')
    [ "$ost" = active ] || { echo "osd.$i state: ${ost:-no answer on admin socket}"; return 0; }
  done
  st=$(cq status -f json) || { echo "ceph status does not answer"; return 0; }
  pools=$(cq osd pool ls detail -f json) || { echo "pool list does not answer"; return 0; }
  "$PY" - "$NOSD" "$ALLOWED_WARNINGS" "$POOL $OTHER_POOL" "$st" "$pools" <<'PYEOF'
import json, sys
nosd = int(sys.argv[1]); allowed = set(sys.argv[2].split()); want = sys.argv[3].split()
st = json.loads(sys.argv[4]); pools = json.loads(sys.argv[5])
om = st.get("osdmap", {}); om = om.get("osdmap", om)
if om.get("num_osds") != nosd or om.get("num_up_osds") != nosd or om.get("num_in_osds") != nosd:
    print("osds: %s/%s up, %s in, want %d" % (om.get("num_up_osds"), om.get("num_osds"), om.get("num_in_osds"), nosd)); sys.exit()
if not st.get("mgrmap", {}).get("available", False):
    print("mgr not available"); sys.exit()
names = [p["pool_name"] for p in pools]
missing = [p for p in want if p not in names]
if missing:
    print("pools missing: %s" % missing); sys.exit()
expected = sum(p.get("pg_num", 0) for p in pools)
pm = st.get("pgmap", {})
if pm.get("num_pgs") != expected:
    print("pgmap knows %s pgs, pools have %d" % (pm.get("num_pgs"), expected)); sys.exit()
clean = sum(s["count"] for s in pm.get("pgs_by_state", []) if s["state_name"] == "active+clean")
if clean != expected:
    print("pgs: %d/%d active+clean (%s)" % (clean, expected, ", ".join("%d %s" % (s["count"], s["state_name"]) for s in pm.get("pgs_by_state", [])))); sys.exit()
h = st.get("health", {})
if h.get("status") != "HEALTH_OK":
    bad = [k for k in h.get("checks", {}) if k not in allowed]
    if bad:
        print("%s: %s" % (h.get("status"), ", ".join("%s (%s)" % (k, h["checks"][k].get("summary", {}).get("message", "")) for k in bad))); sys.exit()
PYEOF
}

wait_until() {
  # wait_until DEADLINE_EPOCH WHAT CMD...  (CMD succeeds when done)
  local deadline=$1 what=$2
  shift 2
  while ! "$@"; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "timed out waiting for $what"
      show_logs
      die "cluster not usable within ${START_TIMEOUT}s (waiting for $what)"
    fi
    sleep 1
  done
}

mon_answers() { cq mon stat >/dev/null; }

# The I/O probe: prints why the cluster does not serve I/O (one line), nothing when it
# does. Daemons that run and a monitor that reports HEALTH_OK are not enough: an OSD
# that was SIGSTOPped and SIGCONTed stayed active+clean+laggy and timed out every op.
# Every caller has just had an answer from the monitor (health, status or ceph -s): the
# probe does not ask it again (each CLI call costs 1-2 s at a load of 30).
io_reason() {
  local obj="probe-$$-$RANDOM" tmp rc=0 step
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/blobfs-ceph-probe.XXXXXX") ||
    { echo "no temporary directory for the probe's object"; return 0; }
  head -c 4096 /dev/urandom >"$tmp/in"
  for step in put get rm; do
    case $step in
      put) r -p "$POOL" -N cluster-sh-probe put "$obj" "$tmp/in" 2>"$tmp/err" || rc=$? ;;
      get) r -p "$POOL" -N cluster-sh-probe get "$obj" "$tmp/out" 2>"$tmp/err" || rc=$? ;;
      rm) r -p "$POOL" -N cluster-sh-probe rm "$obj" 2>"$tmp/err" || rc=$? ;;
    esac
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      echo "rados $step of a 4 KiB object in pool $POOL did not finish within $(( PROBE_TIMEOUT + 5 ))s"
      break
    elif [ "$rc" -ne 0 ]; then
      echo "rados $step of a 4 KiB object in pool $POOL failed (exit $rc): $(grep -v '^$' "$tmp/err" | tail -1)"
      break
    elif [ "$step" = get ] && ! cmp -s "$tmp/in" "$tmp/out"; then
      echo "rados get of a 4 KiB object in pool $POOL read back other bytes than were written"
      break
    fi
  done
  rm -rf "$tmp"
}

# Polls the I/O probe until it passes (0) or DEADLINE_EPOCH passes (1, reason logged).
wait_io() {
  local deadline=$1 reason
  while :; do
    reason=$(io_reason) || reason="I/O probe failed"
    [ -z "$reason" ] && return 0
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "no I/O: $reason"
      return 1
    fi
    log "waiting for I/O: $reason"
    sleep 1
  done
}

wait_ready() {
  local deadline=$1 reason last=""
  while :; do
    reason=$(ready_reason) || reason="status probe failed"
    [ -z "$reason" ] && return 0
    if [ "$reason" != "$last" ]; then log "waiting: $reason"; last=$reason; fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      show_logs
      die "cluster not usable within ${START_TIMEOUT}s: $reason"
    fi
    sleep 1
  done
}

create_cluster() {
  local deadline=$1 fsid i uuid id
  rm -rf "$DIR"
  mkdir -p "$DIR"/{run,log,crash,mon/mon.a,mgr/mgr.x,block}
  fsid=$(cat /proc/sys/kernel/random/uuid)
  write_conf "$fsid"

  log "creating monitor (port $PORT)"
  ceph-authtool --create-keyring "$DIR/mon.keyring.init" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  if [ "$AUTH" = cephx ]; then
    ceph-authtool --create-keyring "$ADMIN_KEYRING" --gen-key -n client.admin \
      --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' --cap mds 'allow *' >/dev/null
    ceph-authtool "$DIR/mon.keyring.init" --import-keyring "$ADMIN_KEYRING" >/dev/null
  fi
  monmaptool --create --fsid "$fsid" --addv a "[v1:$MON_ADDR]" "$DIR/monmap" >/dev/null
  ceph-mon -c "$CONF" --mkfs -i a --monmap "$DIR/monmap" --keyring "$DIR/mon.keyring.init" \
    >"$DIR/log/mkfs-mon.log" 2>&1 || { cat "$DIR/log/mkfs-mon.log" >&2; die "ceph-mon --mkfs failed"; }
  rm -f "$DIR/mon.keyring.init" "$DIR/monmap"
  start_daemon mon.a
  wait_until "$deadline" "monitor quorum" mon_answers

  log "creating manager"
  # no upmap balancer (placements must stay plain CRUSH, which tests compute
  # themselves) and no device_health_metrics pool
  cm config set mgr mgr/balancer/active false --force
  cm config set mgr mgr/devicehealth/enable_monitoring false --force
  if [ "$AUTH" = cephx ]; then
    cm auth get-or-create mgr.x mon 'allow profile mgr' osd 'allow *' mds 'allow *' \
      -o "$DIR/mgr/mgr.x/keyring"
  fi
  start_daemon mgr.x

  # OSD ids and keys first, then all bluestore mkfs runs in parallel (no monitor
  # needed), then CRUSH placement and daemons
  local uuids=() pids=()
  for ((i = 0; i < NOSD; i++)); do
    uuid=$(cat /proc/sys/kernel/random/uuid)
    uuids+=("$uuid")
    id=$(c osd new "$uuid") || id=$(c osd new "$uuid") || die "ceph osd new failed"
    [ "$id" = "$i" ] || die "expected osd id $i, got '$id'"
    mkdir -p "$DIR/osd/osd.$i"
    if [ "$AUTH" = cephx ]; then
      cm auth get-or-create "osd.$i" osd 'allow *' mon 'allow profile osd' mgr 'allow profile osd' \
        -o "$DIR/osd/osd.$i/keyring"
    fi
  done
  log "mkfs of $NOSD bluestore OSD(s)"
  for ((i = 0; i < NOSD; i++)); do
    ceph-osd -c "$CONF" -i "$i" --mkfs --no-mon-config --osd-uuid "${uuids[$i]}" \
      >"$DIR/log/mkfs-osd.$i.log" 2>&1 9>&- &
    pids+=($!)
  done
  for ((i = 0; i < NOSD; i++)); do
    wait "${pids[$i]}" || { cat "$DIR/log/mkfs-osd.$i.log" >&2; die "ceph-osd --mkfs failed for osd.$i"; }
  done
  for ((i = 0; i < NOSD; i++)); do
    log "osd.$i goes to CRUSH host bucket ${HOSTS[$i]}"
    # creates the host bucket under root=default when missing
    cm osd crush add "osd.$i" 1.0 root=default "host=${HOSTS[$i]}"
  done
  start_osds

  log "creating pools and clients"
  cm osd pool create "$POOL" 32 32 replicated --autoscale-mode=off
  cm osd pool create "$OTHER_POOL" 8 8 replicated --autoscale-mode=off
  for p in "$POOL" "$OTHER_POOL"; do
    cm osd pool set "$p" size 1 --yes-i-really-mean-it
    cm osd pool application enable "$p" rados
  done
  if [ "$AUTH" = cephx ]; then
    cm auth get-or-create client.blobfs mon 'allow r' osd "allow rwx pool=$POOL" \
      -o "$CLIENT_KEYRING"
    cm auth get-or-create client.blobfs-all mon 'allow r' \
      osd "allow rwx pool=$POOL, allow rwx pool=$OTHER_POOL" -o "$ALL_KEYRING"
  fi
  # the monitor address is in the monmap for good: start compares it (made_for)
  echo "$MON_ADDR" >"$DIR/.created"
}

# The monitor address a cluster directory was made for: its monmap keeps it, whatever
# ceph.conf says later. Empty when made before cluster.sh recorded it.
made_for() { cat "$DIR/.created" 2>/dev/null || true; }

# Fails, saying why, when the cluster in $DIR was made for another monitor address than
# this run's port base gives (another checkout, or an older cluster.sh, made it).
same_address() {
  local made
  made=$(made_for)
  [ "$made" = "$MON_ADDR" ] && return 0
  echo "made for monitor ${made:-at an unrecorded address}, while this run's port base gives $MON_ADDR"
  return 1
}

do_start() {
  local t0 deadline d
  t0=$(date +%s%N)
  deadline=$(( $(date +%s) + START_TIMEOUT ))
  for b in ceph-mon ceph-osd ceph-mgr ceph rados monmaptool ceph-authtool; do
    if ! command -v "$b" >/dev/null 2>&1; then
      log "$b missing: running ensure-ceph.sh"
      "$HERE/ensure-ceph.sh"
      break
    fi
  done
  # clusters made before keyrings were created under umask 077
  [ -d "$DIR" ] && find "$DIR" -name '*keyring*' -type f -perm /077 -exec chmod go= {} +
  local reason restarted=""
  # Restarting such a cluster on its data cannot work (the monitor binds the address in
  # its monmap, clients dial the one in ceph.conf) and reusing it would hand out the
  # wrong address: it is a test cluster, so it is made anew.
  if [ -f "$DIR/.created" ] && ! reason=$(same_address); then
    log "$reason: stopping it and creating a new cluster"
    do_stop
    rm -f "$DIR/.created"
  fi
  if [ -f "$DIR/.created" ] && all_running && cq health >/dev/null; then
    reason=$(io_reason) || reason="the I/O probe failed"
    if [ -z "$reason" ]; then
      log "already running"
      env_text
      return 0
    fi
    log "running, but does not serve I/O ($reason): stopping it and starting it afresh"
    do_stop
    restarted=1
  fi
  # a failed start leaves no half-started daemons behind (data and logs stay)
  [ -n "${BLOBFS_CEPH_KEEP_ON_FAIL:-}" ] ||
    trap 'rc=$?; if [ $rc -ne 0 ]; then log "start failed: stopping its daemons"; do_stop; fi' EXIT
  if [ -f "$DIR/.created" ] && any_frozen; then
    # Some daemons dead and one frozen: the restart below starts only the dead ones and
    # would wait on the frozen one until its deadline (a SIGCONTed OSD can stay laggy
    # too, see io_reason); the probe above, which replaces such a cluster, runs only when
    # every daemon runs. Stopping them all makes it a restart of every daemon.
    log "a daemon is stopped (SIGSTOP) while others are not running: stopping them all first"
    do_stop
  fi
  if [ -f "$DIR/.created" ]; then
    log "restarting daemons on existing data in $DIR"
    # regenerate ceph.conf (same fsid) so option changes in this script apply
    local fsid
    fsid=$(sed -n 's/^fsid = //p' "$CONF")
    [ -n "$fsid" ] || die "no fsid in $CONF"
    any_running || write_conf "$fsid"
    start_daemon mon.a
    wait_until "$deadline" "monitor quorum" mon_answers
    start_daemon mgr.x
    start_osds
  else
    any_running && do_stop
    log "creating a new cluster in $DIR"
    create_cluster "$deadline"
  fi
  wait_ready "$deadline"
  if ! wait_io "$deadline"; then
    # A cluster restarted because it served no I/O, still serving none on its own data:
    # the data is a test cluster's, so a new cluster is the cheaper fix than a diagnosis.
    [ -n "$restarted" ] || { show_logs; die "cluster serves no I/O within ${START_TIMEOUT}s"; }
    log "restarted on its data, it still serves no I/O: creating a new cluster in $DIR"
    do_stop
    deadline=$(( $(date +%s) + START_TIMEOUT ))
    create_cluster "$deadline"
    wait_ready "$deadline"
    wait_io "$deadline" || { show_logs; die "new cluster serves no I/O within ${START_TIMEOUT}s"; }
  fi
  trap - EXIT
  env_text >"$DIR/env.sh"
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  log "ready in $((ms / 1000)).$(printf '%03d' $((ms % 1000)))s"
  env_text
}

# TERM a group of daemons and wait for them to exit (KILL after a grace period)
stop_group() {
  local grace=$1 d pid n p any
  shift
  local pids=()
  for d in "$@"; do
    if pid=$(daemon_pid "$d"); then
      # a SIGSTOPped daemon (fault tests) handles SIGTERM only once continued
      kill -CONT "$pid" 2>/dev/null || true
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid:$d")
    fi
  done
  [ ${#pids[@]} -eq 0 ] && return 0
  for ((n = 0; n < grace * 10; n++)); do
    any=0
    for p in "${pids[@]}"; do alive "${p%%:*}" && any=1; done
    [ $any -eq 0 ] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do
    if alive "${p%%:*}"; then
      log "${p#*:} did not exit after SIGTERM; sending SIGKILL"
      kill -KILL "${p%%:*}" 2>/dev/null || true
    fi
  done
  for ((n = 0; n < 50; n++)); do
    any=0
    for p in "${pids[@]}"; do alive "${p%%:*}" && any=1; done
    [ $any -eq 0 ] && break
    sleep 0.1
  done
  STOPPED=$((STOPPED + ${#pids[@]}))
}

do_stop() {
  local d
  STOPPED=0
  # OSDs first while the monitor still runs (a stopping OSD waits up to
  # osd_mon_shutdown_timeout for the monitor to acknowledge it), then mgr, then mon
  # shellcheck disable=SC2046
  stop_group 30 $(daemons | grep '^osd\.')
  stop_group 30 mgr.x
  stop_group 30 mon.a
  for d in $(daemons); do rm -f "$DIR/run/$d.pid"; done
  if [ "$STOPPED" -eq 0 ]; then log "not running"; else log "stopped ($STOPPED daemons)"; fi
}

with_lock() {
  exec 9>"$ROOT/.$LAYOUT-$AUTH.lock"
  if command -v flock >/dev/null 2>&1; then
    flock -w "$START_TIMEOUT" 9 || die "another cluster.sh holds $ROOT/.$LAYOUT-$AUTH.lock"
  fi
  "$@"
}

case "$CMD" in
  start) with_lock do_start ;;
  stop) with_lock do_stop ;;
  osd-stop)
    # Fault tests: stop one OSD (SIGTERM, then SIGKILL) and leave the rest running.
    [ -n "${OSD_ID:-}" ] || die "osd-stop needs --id N"
    STOPPED=0
    with_lock stop_group 30 "osd.$OSD_ID"
    rm -f "$DIR/run/osd.$OSD_ID.pid"
    log "osd.$OSD_ID stopped"
    ;;
  osd-start)
    # Restarts whatever daemon is down (here: the stopped OSD) and waits until usable.
    with_lock do_start >/dev/null
    log "osd.${OSD_ID:-?} running again"
    ;;
  wait)
    [ -f "$DIR/.created" ] || die "no cluster in $DIR"
    wait_ready $(( $(date +%s) + START_TIMEOUT ))
    log "usable"
    ;;
  purge)
    with_lock do_stop
    rm -rf "$DIR"
    rm -f "$ROOT/.$LAYOUT-$AUTH.lock"
    log "purged $DIR"
    ;;
  status)
    if ! [ -f "$DIR/.created" ]; then log "no cluster in $DIR"; exit 1; fi
    if ! reason=$(same_address); then log "$reason"; exit 1; fi
    if ! all_running; then
      for d in $(daemons); do
        if pid=$(daemon_pid "$d"); then log "$d running (pid $pid)"; else log "$d NOT running"; fi
      done
      c -s 2>/dev/null || true
      exit 1
    fi
    c -s
    reason=$(io_reason) || reason="the I/O probe failed"
    [ -z "$reason" ] || { log "does not serve I/O: $reason"; exit 1; }
    log "serves I/O (4 KiB written, read back and deleted in pool $POOL)"
    ;;
  env)
    [ -f "$DIR/.created" ] || die "no cluster in $DIR (run: $0 start --layout $LAYOUT --auth $AUTH)"
    reason=$(same_address) || die "$reason (run: $0 start --layout $LAYOUT --auth $AUTH)"
    env_text
    ;;
  *) usage ;;
esac
