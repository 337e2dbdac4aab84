#!/usr/bin/env bash
# HDFS as its users run it, for side-by-side benchmarks: one NameNode and one DataNode,
# each a JVM of its own, from the hadoop-hdfs jars Maven resolves (scripts/hdfs/pom.xml;
# no Hadoop distribution is needed). Replication 1, 64 MiB blocks, loopback only.
#
# Usage:
#   scripts/hdfs/hdfs.sh start|stop|status|env|purge
#   eval "$(scripts/hdfs/hdfs.sh start)"      # exports HDFS_URI and the rest
#
# Directory: ${BLOBFS_HDFS_ROOT:-/tmp/blobfs-hdfs} holds conf/, name/, data/, logs/,
#   run/ (pids) and classpath.txt. It is created mode 0700; a root (or a symlink to it)
#   that is not the caller's, or is group- or world-writable, is refused (exit 1), as
#   scripts/ceph/cluster.sh refuses its own (scripts/lib/owned-root.sh).
# Ports (127.0.0.1 only): ${BLOBFS_HDFS_PORT_BASE:-16500} + 0 NameNode RPC, +1 NameNode
#   HTTP, +2 DataNode data transfer, +3 DataNode HTTP, +4 DataNode IPC (+5..+7 are
#   bound to loopback too but unused: secondary NameNode, HTTPS). The default stays below
#   Linux's ephemeral range (32768-60999), where an outgoing connection can take a port
#   before a daemon binds it, as scripts/ceph/cluster.sh's does.
# start: no-op when both daemons run and answer; restarts a dead daemon on its data, and
#   both on its data when started for another port base;
#   formats the NameNode on first use. Waits (bounded, BLOBFS_HDFS_START_TIMEOUT s,
#   default 120) until the NameNode is out of safe mode and the DataNode registered with
#   space to write; on failure prints the logs' tails and stops both daemons.
#   stdout of start/env is only the exports: HDFS_URI, HDFS_CONF_DIR, HDFS_CLASSPATH_FILE,
#   BLOBFS_HDFS_DIR. Progress goes to stderr.
# stop: SIGTERM, then SIGKILL after 20 s. purge: stop, then delete the directory.
# Short-circuit local reads are off: they need the native libhadoop (a domain socket
#   through JNI), which neither the Maven artifacts nor Debian's packages carry, so a
#   client here reads every block through the DataNode's TCP port.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
log() { echo "[hdfs] $*" >&2; }
die() { echo "[hdfs] ERROR: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//' >&2; exit 2; }

CMD=${1:-}
[ -n "$CMD" ] || usage

umask 077
source "$HERE/../lib/owned-root.sh"
ROOT=$(owned_root "${BLOBFS_HDFS_ROOT:-/tmp/blobfs-hdfs}" BLOBFS_HDFS_ROOT) || exit 1

BASE=${BLOBFS_HDFS_PORT_BASE:-16500}
NN_PORT=$BASE
NN_HTTP=$((BASE + 1))
START_TIMEOUT=${BLOBFS_HDFS_START_TIMEOUT:-120}
CONF=$ROOT/conf
CP_FILE=$ROOT/classpath.txt
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java

env_text() {
  cat <<EOF
export HDFS_URI='hdfs://127.0.0.1:$NN_PORT'
export HDFS_CONF_DIR='$CONF'
export HDFS_CLASSPATH_FILE='$CP_FILE'
export BLOBFS_HDFS_DIR='$ROOT'
EOF
}

prop() { printf '  <property><name>%s</name><value>%s</value></property>\n' "$1" "$2"; }

write_conf() {
  mkdir -p "$CONF" "$ROOT/logs" "$ROOT/run" "$ROOT/tmp"
  # The daemons' HTTP servers (which also serve /jmx, polled below) look their web apps
  # up on the classpath; the distribution ships them as directories, the Maven jars do
  # not have them at all. Empty ones are enough.
  mkdir -p "$CONF/webapps/hdfs" "$CONF/webapps/datanode" "$CONF/webapps/static"
  {
    echo '<?xml version="1.0"?><configuration>'
    prop fs.defaultFS "hdfs://127.0.0.1:$NN_PORT"
    prop hadoop.tmp.dir "$ROOT/tmp"
    echo '</configuration>'
  } >"$CONF/core-site.xml"
  {
    echo '<?xml version="1.0"?><configuration>'
    prop dfs.replication 1
    prop dfs.blocksize 67108864
    prop dfs.namenode.name.dir "file://$ROOT/name"
    prop dfs.datanode.data.dir "file://$ROOT/data"
    prop dfs.namenode.rpc-address "127.0.0.1:$NN_PORT"
    prop dfs.namenode.http-address "127.0.0.1:$NN_HTTP"
    prop dfs.datanode.address "127.0.0.1:$((BASE + 2))"
    prop dfs.datanode.http.address "127.0.0.1:$((BASE + 3))"
    prop dfs.datanode.ipc.address "127.0.0.1:$((BASE + 4))"
    prop dfs.namenode.secondary.http-address "127.0.0.1:$((BASE + 5))"
    prop dfs.namenode.https-address "127.0.0.1:$((BASE + 6))"
    prop dfs.datanode.https.address "127.0.0.1:$((BASE + 7))"
    # One DataNode holds every block: once it has reported, waiting 30 s more proves nothing.
    prop dfs.namenode.safemode.extension 0
    # Without libhadoop the client would only log a warning and read through TCP anyway.
    prop dfs.client.read.shortcircuit false
    echo '</configuration>'
  } >"$CONF/hdfs-site.xml"
  cat >"$CONF/log4j.properties" <<EOF
log4j.rootLogger=INFO, RFA
log4j.appender.RFA=org.apache.log4j.RollingFileAppender
log4j.appender.RFA.File=\${hadoop.log.dir}/\${hadoop.log.file}
log4j.appender.RFA.MaxFileSize=32MB
log4j.appender.RFA.MaxBackupIndex=2
log4j.appender.RFA.layout=org.apache.log4j.PatternLayout
log4j.appender.RFA.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
EOF
}

classpath() {
  local pom=$HERE/pom.xml
  if [ ! -s "$CP_FILE" ] || [ "$pom" -nt "$CP_FILE" ] || [ "$REPO/pom.xml" -nt "$CP_FILE" ]; then
    log "resolving the hadoop-hdfs classpath (mvn dependency:build-classpath)"
    # Bounded: a registry that stops answering must not hang a test run.
    timeout 600 mvn -B -ntp -q -f "$pom" dependency:build-classpath \
      -Dmdep.outputFile="$CP_FILE" >&2 ||
      die "could not resolve hadoop-hdfs with Maven"
  fi
}

# pid of a running daemon of THIS directory (its command line names our conf), or fail
daemon_pid() {
  local pf=$ROOT/run/$1.pid pid st
  [ -f "$pf" ] || return 1
  pid=$(cat "$pf" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  st=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
  [ "$st" != Z ] && [ "$st" != X ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "-Dblobfs.hdfs.dir=$ROOT " || return 1
  echo "$pid"
}

# Sets JCMD to the command line of daemon NAME running CLASS ARGS...
java_cmd() {
  local name=$1 class=$2
  shift 2
  # The marker property ties the process to this directory for daemon_pid and stop.
  JCMD=("$JAVA" -Xmx1g -Dblobfs.hdfs.dir="$ROOT" -Dproc_"$name" \
    -Dhadoop.log.dir="$ROOT/logs" -Dhadoop.log.file="$name.log" \
    -Dhadoop.home.dir="$ROOT" -Dhadoop.id.str="$(id -un)" \
    -Djava.net.preferIPv4Stack=true \
    -cp "$CONF:$(cat "$CP_FILE")" "$class" "$@")
}

start_daemon() {
  local name=$1 class=$2
  daemon_pid "$name" >/dev/null && return 0
  log "starting $name"
  java_cmd "$name" "$class"
  # setsid: the daemon outlives the shell that started it and gets no terminal signals.
  setsid "${JCMD[@]}" </dev/null >"$ROOT/logs/$name.out" 2>&1 &
  echo $! >"$ROOT/run/$name.pid"
}

# jmx PORT BEAN ATTRIBUTE: one attribute of a daemon's bean, through its HTTP server
jmx() {
  python3 - "http://127.0.0.1:$1/jmx?qry=$2" "$3" <<'EOF' 2>/dev/null
import json, sys, urllib.request
b = json.load(urllib.request.urlopen(sys.argv[1], timeout=5))["beans"]
print(b[0][sys.argv[2]] if b else "")
EOF
}

# Empty when ready; otherwise one line saying what is missing.
not_ready() {
  local d
  for d in namenode datanode; do
    daemon_pid "$d" >/dev/null || { echo "$d is not running"; return 0; }
  done
  local sm live free
  sm=$(jmx $NN_HTTP Hadoop:service=NameNode,name=NameNodeInfo Safemode) || { echo "NameNode does not answer on :$NN_HTTP"; return 0; }
  [ -z "$sm" ] || { echo "NameNode in safe mode: $sm"; return 0; }
  live=$(jmx $NN_HTTP Hadoop:service=NameNode,name=FSNamesystemState NumLiveDataNodes) || live=0
  [ "${live:-0}" -ge 1 ] || { echo "no DataNode registered yet"; return 0; }
  # After a DataNode restart the NameNode still counts the old one as live for a while:
  # ask the DataNode itself whether it has registered and heartbeats.
  jmx $((BASE + 3)) Hadoop:service=DataNode,name=DataNodeInfo BPServiceActorInfo | grep -q '"ActorState":"RUNNING"' ||
    { echo "the DataNode has not registered yet"; return 0; }
  free=$(jmx $NN_HTTP Hadoop:service=NameNode,name=FSNamesystemState CapacityRemaining) || free=0
  [ "${free:-0}" -gt 0 ] || { echo "the DataNode has reported no free space yet"; return 0; }
}

show_logs() {
  local f
  for f in "$ROOT"/logs/*.log "$ROOT"/logs/*.out; do
    [ -s "$f" ] || continue
    echo "---- tail $f ----" >&2
    tail -n 20 "$f" >&2
  done
}

stop_all() {
  local d pid i
  for d in datanode namenode; do
    pid=$(daemon_pid "$d") || continue
    log "stopping $d (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 40; i++)); do daemon_pid "$d" >/dev/null || break; sleep 0.5; done
    if daemon_pid "$d" >/dev/null; then
      log "$d did not exit in 20 s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$ROOT/run/$d.pid"
  done
}

case "$CMD" in
  start)
    if [ -z "$(not_ready)" ]; then
      log "running (NameNode hdfs://127.0.0.1:$NN_PORT, dir $ROOT)"
      env_text
      exit 0
    fi
    command -v python3 >/dev/null || die "python3 is needed to poll the NameNode"
    # Daemons of this directory started for another port base (another checkout's
    # default) answer where this run does not poll, and would hold the data dirs: restart
    # them on this run's ports (the data carries no ports).
    if [ -f "$CONF/core-site.xml" ] && ! grep -qF "<value>hdfs://127.0.0.1:$NN_PORT</value>" "$CONF/core-site.xml"; then
      log "started for $(grep -o 'hdfs://[0-9.:]*' "$CONF/core-site.xml" | head -1), this run's port base gives hdfs://127.0.0.1:$NN_PORT: restarting"
      stop_all
    fi
    classpath
    write_conf
    if [ ! -d "$ROOT/name/current" ]; then
      log "formatting the NameNode in $ROOT/name"
      java_cmd namenode-format org.apache.hadoop.hdfs.server.namenode.NameNode -format -nonInteractive -force
      timeout 120 "${JCMD[@]}" >"$ROOT/logs/namenode-format.out" 2>&1 || { show_logs; die "NameNode -format failed"; }
    fi
    start_daemon namenode org.apache.hadoop.hdfs.server.namenode.NameNode
    start_daemon datanode org.apache.hadoop.hdfs.server.datanode.DataNode
    deadline=$(( $(date +%s) + START_TIMEOUT ))
    last=""
    while reason=$(not_ready) && [ -n "$reason" ]; do
      [ "$reason" != "$last" ] && { log "waiting: $reason"; last=$reason; }
      if [[ "$reason" == *"is not running" ]] || [ "$(date +%s)" -ge "$deadline" ]; then
        show_logs
        stop_all
        die "HDFS not ready ($reason; limit ${START_TIMEOUT}s); logs in $ROOT/logs"
      fi
      sleep 1
    done
    log "ready: hdfs://127.0.0.1:$NN_PORT (dir $ROOT)"
    env_text
    ;;
  stop) stop_all ;;
  purge) stop_all; rm -rf "$ROOT"; log "removed $ROOT" ;;
  env) env_text ;;
  status)
    reason=$(not_ready)
    for d in namenode datanode; do
      echo "$d: $(daemon_pid "$d" || echo 'not running')"
    done
    if [ -n "$reason" ]; then echo "not ready: $reason"; exit 1; fi
    echo "ready: hdfs://127.0.0.1:$NN_PORT, live DataNodes $(jmx $NN_HTTP Hadoop:service=NameNode,name=FSNamesystemState NumLiveDataNodes), remaining $(jmx $NN_HTTP Hadoop:service=NameNode,name=FSNamesystemState CapacityRemaining) bytes"
    ;;
  -h|--help) usage ;;
  *) echo "unknown command: $CMD" >&2; usage ;;
esac
