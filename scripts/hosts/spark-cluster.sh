#!/usr/bin/env bash
# Spark standalone on the hosts of hosts.sh: a Master and one Worker per host, started from
# Spark's own jars (org.apache.spark.deploy.master.Master and ...worker.Worker; no BlobFS).
#
#   scripts/hosts/spark-cluster.sh up [N]    hosts 1..N up (hosts.sh up N), a Master, a
#                                            Worker on each host; idempotent: what runs is
#                                            kept; waits until N Workers are registered
#   scripts/hosts/spark-cluster.sh down      stops the Workers and the Master it started
#   scripts/hosts/spark-cluster.sh status    the master URL and the registered Workers;
#                                            exit 1 if the Master is not running
#   scripts/hosts/spark-cluster.sh master    the master URL (spark://ADDR:PORT)
#
# `up` prints `SPARK MASTER spark://ADDR:PORT` and `SPARK DRIVER-HOST ADDR` (the address a
# driver on this machine binds to, reachable from every host) as its last lines.
#
# Where things run. Namespace mode: the Master listens on the bridge's address
# (SUBNET.254, this namespace), which every host reaches and so does a driver started here;
# Worker I runs inside host I (hosts.sh exec I) and registers with --host 10.77.0.I, so its
# executors carry that address as their host. That is how Týr names its members
# (TyrClusterBlobStore.hostsOf gives the member's host as it is spelt), so the preferred
# locations of blob:// splits and the executors' hosts are the same strings, which is
# what Spark's NODE_LOCAL matching compares. Loopback mode (hosts.sh's fallback): the Master
# on 127.0.0.1, Worker I on 127.0.0.(10+I) in this namespace.
#
# Spark's jars: BLOBFS_SPARK_CLASSPATH, a classpath string or @FILE holding one; by default
# @blobfs-e2e/target/spark-submit.classpath, which `mvn -pl blobfs-e2e -am package
# -DskipTests` writes (Spark, Hadoop and their dependencies, no BlobFS). The script links
# them into STATE/spark-home/jars, the layout of a Spark distribution, since a Worker
# builds its executors' classpath from SPARK_HOME/jars.
#
# Environment: BLOBFS_SPARK_STATE (/tmp/blobfs-spark-$BLOBFS_HOSTS_PREFIX): logs
# (master.log, workerI.log), pids, executors' work dirs; BLOBFS_SPARK_PORT_BASE (7077):
# Master port, +1 its web UI, +2 each Worker's port, +3 its web UI (+2+2I and +3+2I in
# loopback mode, where the Workers share a namespace); BLOBFS_SPARK_WORKER_CORES (2),
# BLOBFS_SPARK_WORKER_MEMORY (2g); JAVA_HOME or java on the PATH. The hosts.sh variables
# (BLOBFS_HOSTS_*) choose the hosts.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
HOSTS="$HERE/hosts.sh"
PREFIX=${BLOBFS_HOSTS_PREFIX:-blobfs-h}
STATE=${BLOBFS_SPARK_STATE:-/tmp/blobfs-spark-$PREFIX}
PORT_BASE=${BLOBFS_SPARK_PORT_BASE:-7077}
CORES=${BLOBFS_SPARK_WORKER_CORES:-2}
MEMORY=${BLOBFS_SPARK_WORKER_MEMORY:-2g}
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java

die() { echo "spark-cluster.sh: $*" >&2; exit 1; }
say() { echo "spark-cluster.sh: $*" >&2; }

[[ $PORT_BASE =~ ^[0-9]+$ ]] && [ "$PORT_BASE" -ge 1024 ] && [ "$PORT_BASE" -le 65000 ] ||
  die "BLOBFS_SPARK_PORT_BASE '$PORT_BASE': 1024..65000"

# The flags Spark needs on Java 17 (the same list as the root pom's spark.test.jvm.opens).
JVM_OPENS=(-XX:+IgnoreUnrecognizedVMOptions --add-modules=jdk.incubator.vector
  --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.lang.invoke=ALL-UNNAMED
  --add-opens=java.base/java.lang.reflect=ALL-UNNAMED --add-opens=java.base/java.io=ALL-UNNAMED
  --add-opens=java.base/java.net=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED
  --add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.util.concurrent=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED
  --add-opens=java.base/jdk.internal.ref=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens=java.base/sun.nio.cs=ALL-UNNAMED --add-opens=java.base/sun.security.action=ALL-UNNAMED
  --add-opens=java.base/sun.util.calendar=ALL-UNNAMED -Djdk.reflect.useDirectMethodHandle=false
  -Dio.netty.tryReflectionSetAccessible=true)

hosts_mode() { bash "$HOSTS" status 2>/dev/null | sed -n '1s/^mode //p'; }

master_addr() { # the bridge's address in namespace mode; 127.0.0.1 on loopback
  if [ "$(hosts_mode)" = netns ]; then
    local a
    a=$(bash "$HOSTS" addr 1)
    echo "${a%.*}.254"
  else
    echo 127.0.0.1
  fi
}

worker_ports() { # $1 = I: "port webui-port"
  if [ "$(cat "$STATE/mode")" = netns ]; then
    echo "$((PORT_BASE + 2)) $((PORT_BASE + 3))"
  else
    echo "$((PORT_BASE + 2 + 2 * $1)) $((PORT_BASE + 3 + 2 * $1))"
  fi
}

alive() { # $1 = pid file
  [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

# Links Spark's jars into a SPARK_HOME of our own (rebuilt each `up`: the classpath may change).
spark_home() {
  local spec=${BLOBFS_SPARK_CLASSPATH:-@$ROOT/blobfs-e2e/target/spark-submit.classpath} cp
  if [[ $spec == @* ]]; then
    [ -f "${spec#@}" ] || die "no Spark classpath file ${spec#@}: build it with
  mvn -B -pl blobfs-e2e -am package -DskipTests
or set BLOBFS_SPARK_CLASSPATH to a classpath (or @FILE) holding Spark's jars"
    cp=$(cat "${spec#@}")
  else
    cp=$spec
  fi
  grep -q 'spark-core_' <<<"$cp" || die "the Spark classpath names no spark-core jar"
  rm -rf "$STATE/spark-home.new"
  mkdir -p "$STATE/spark-home.new/jars"
  local IFS=: jar
  for jar in $cp; do
    [ -f "$jar" ] && ln -sf "$jar" "$STATE/spark-home.new/jars/"
  done
  rm -rf "$STATE/spark-home"
  mv "$STATE/spark-home.new" "$STATE/spark-home"
}

# Waits (bounded) until a TCP port accepts.
wait_port() { # $1 = addr, $2 = port, $3 = what, $4 = log
  local deadline=$((SECONDS + 60))
  while [ "$SECONDS" -lt "$deadline" ]; do
    if timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; then return 0; fi
    sleep 0.5
  done
  tail -n 30 "$4" >&2 || true
  die "$3 did not listen on $1:$2 within 60 s (log $4)"
}

registered_workers() { # the Workers the Master knows ALIVE, one "host:port" per line
  curl -fsS --max-time 5 "http://$(cat "$STATE/master-addr"):$((PORT_BASE + 1))/json/" 2>/dev/null |
    jq -r '.workers[] | select(.state == "ALIVE") | "\(.host):\(.port)"' 2>/dev/null | sort -u
}

start_master() {
  local addr=$1
  if alive "$STATE/master.pid"; then return 0; fi
  SPARK_HOME="$STATE/spark-home" SPARK_LOCAL_IP=$addr nohup setsid "$JAVA" "${JVM_OPENS[@]}" \
    -Xmx512m -cp "$STATE/spark-home/jars/*" org.apache.spark.deploy.master.Master \
    --host "$addr" --port "$PORT_BASE" --webui-port "$((PORT_BASE + 1))" \
    >"$STATE/master.log" 2>&1 </dev/null &
  echo $! >"$STATE/master.pid"
  wait_port "$addr" "$PORT_BASE" Master "$STATE/master.log"
}

start_worker() { # $1 = I
  local i=$1 addr ports launcher=()
  if alive "$STATE/worker$i.pid"; then return 0; fi
  addr=$(bash "$HOSTS" addr "$i")
  read -r port uiport <<<"$(worker_ports "$i")"
  mkdir -p "$STATE/work$i"
  # exec'd all the way down (ip netns exec, unshare, sh): the pid is the Worker's JVM.
  [ "$(cat "$STATE/mode")" = netns ] && launcher=(bash "$HOSTS" exec "$i")
  SPARK_HOME="$STATE/spark-home" SPARK_SCALA_VERSION=2.13 SPARK_LOCAL_IP=$addr \
    SPARK_LOCAL_HOSTNAME=$addr nohup setsid "${launcher[@]}" "$JAVA" "${JVM_OPENS[@]}" \
    -Xmx512m -cp "$STATE/spark-home/jars/*" org.apache.spark.deploy.worker.Worker \
    --host "$addr" --port "$port" --webui-port "$uiport" --cores "$CORES" --memory "$MEMORY" \
    --work-dir "$STATE/work$i" "spark://$(cat "$STATE/master-addr"):$PORT_BASE" \
    >"$STATE/worker$i.log" 2>&1 </dev/null &
  echo $! >"$STATE/worker$i.pid"
}

cmd_up() {
  local n=${1:-3} i addr deadline
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] || die "N must be a positive number, got '$n'"
  command -v curl >/dev/null && command -v jq >/dev/null || die "curl and jq are needed"
  bash "$HOSTS" up "$n" >/dev/null
  mkdir -p "$STATE"
  hosts_mode >"$STATE/mode"
  addr=$(master_addr)
  echo "$addr" >"$STATE/master-addr"
  [ "$(cat "$STATE/mode")" = netns ] ||
    say "hosts are loopback addresses (no network namespaces): every Worker is on this host"
  if ! alive "$STATE/master.pid" || [ ! -d "$STATE/spark-home/jars" ]; then
    spark_home
  fi
  start_master "$addr"
  for i in $(seq 1 "$n"); do
    start_worker "$i"
  done
  deadline=$((SECONDS + 90))
  while [ "$(registered_workers | wc -l)" -lt "$n" ]; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      for i in $(seq 1 "$n"); do tail -n 15 "$STATE/worker$i.log" >&2 || true; done
      die "only $(registered_workers | wc -l) of $n Workers registered within 90 s (logs in $STATE)"
    fi
    sleep 1
  done
  say "Master spark://$addr:$PORT_BASE, Workers: $(registered_workers | tr '\n' ' ')(logs in $STATE)"
  echo "SPARK MASTER spark://$addr:$PORT_BASE"
  echo "SPARK DRIVER-HOST $addr"
}

stop_pid() { # $1 = pid file: SIGTERM, then SIGKILL after 10 s
  local pid
  [ -f "$1" ] || return 0
  pid=$(cat "$1")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$1"
}

cmd_down() {
  local f
  [ -d "$STATE" ] || { say "nothing to stop ($STATE absent)"; return 0; }
  for f in "$STATE"/worker*.pid; do
    [ -e "$f" ] && stop_pid "$f"
  done
  stop_pid "$STATE/master.pid"
  say "stopped (logs kept in $STATE)"
}

cmd_status() {
  alive "$STATE/master.pid" || { echo "master down"; return 1; }
  echo "master spark://$(cat "$STATE/master-addr"):$PORT_BASE"
  registered_workers | sed 's/^/worker /'
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  master) echo "spark://$(cat "$STATE/master-addr" 2>/dev/null || die "not up"):$PORT_BASE" ;;
  *) die "usage: spark-cluster.sh up [N] | down | status | master" ;;
esac
