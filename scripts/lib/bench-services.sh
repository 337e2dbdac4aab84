# Sourced, from the repository's root, by the Spark benchmark scripts
# (scripts/bench-compare.sh, scripts/main-job.sh):
# starts the services a list of back ends needs, exports what MainJob and CompareBench read,
# and stops on exit what it started (a service already running is used and left running).
#   bench_build                 builds the reactor (nothing installed) and sets BENCH_CP;
#                               BENCH_EXTRA_MODULES adds modules to the same build
#   bench_start_services LIST   LIST: comma-separated store names (hdfs, tyr, rados, cephfs;
#                               others need no service)
#   bench_java CLASS ARGS...    runs CLASS with Spark's Java 17 opens on BENCH_CP
# Týr: a server process from the build's classpath, data in benchmarks/target/tyr-server, on a
#   port below the ephemeral range (within BLOBFS_TYR_PORT_BASE's hundred when set),
#   log synced every 100 ms (as HDFS, it does not sync a block before acknowledging it),
#   exported as TYR_ADDRESS. HDFS: scripts/hdfs/hdfs.sh (HDFS_URI). RADOS:
#   scripts/ceph/cluster.sh (CEPH_CONF, BLOBFS_CEPH_POOL, BLOBFS_CEPH_CLIENT_KEYRING).
#   CephFS: scripts/ceph/cephfs.sh (CEPHFS_MOUNT), on that cluster.
BENCH_STOPS=()
BENCH_TYR_PID=
BENCH_REPO=$PWD

bench_build() {
  # BENCH_EXTRA_MODULES (comma-separated): more modules built in the same reactor run
  mvn -B -ntp -q -pl "benchmarks${BENCH_EXTRA_MODULES:+,$BENCH_EXTRA_MODULES}" -am package \
    -DskipTests dependency:build-classpath \
    -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=test >&2
  BENCH_CP="$PWD/benchmarks/target/classes:$(cat benchmarks/target/classpath.txt)"
}

# Sets BENCH_JAVA_CMD to the java command line for CLASS ARGS...
bench_java_cmd() {
  local opens
  opens=$(sed -n 's:.*<spark.test.jvm.opens>\(.*\)</spark.test.jvm.opens>.*:\1:p' "$BENCH_REPO/pom.xml")
  # shellcheck disable=SC2206 # the opens are separate words
  BENCH_JAVA_CMD=("${JAVA_HOME:+$JAVA_HOME/bin/}java" $opens -Xmx3g
    -Dlog4j2.configurationFile="$BENCH_REPO/benchmarks/conf/log4j2-main-job.properties"
    -cp "$BENCH_CP" "$@")
}

bench_java() {
  bench_java_cmd "$@"
  SPARK_LOCAL_IP=127.0.0.1 "${BENCH_JAVA_CMD[@]}"
}

bench_stop_services() {
  local i
  for ((i = ${#BENCH_STOPS[@]} - 1; i >= 0; i--)); do
    eval "${BENCH_STOPS[$i]}" || true
  done
  BENCH_STOPS=()
}

# A port for the bench's Týr server, as the tests pick theirs (TyrProcessCluster, TestPorts):
# within [BLOBFS_TYR_PORT_BASE, +100) when that is set (helpers sharing a machine), else in
# 20000-29999; never 0, whose ephemeral port (32768-60999) any outgoing connection may take.
bench_tyr_port() {
  local base=${BLOBFS_TYR_PORT_BASE:-}
  if [ -n "$base" ]; then
    echo $((base + RANDOM % 100))
  else
    echo $((20000 + RANDOM % 10000))
  fi
}

bench_start_tyr() {
  local dir=$PWD/benchmarks/target/tyr-server log line n attempt port
  log=$dir.log
  # A port taken meanwhile makes the server exit at its bind: try another, a few times.
  for ((attempt = 1; attempt <= 5; attempt++)); do
    rm -rf "$dir" && mkdir -p "$dir"
    port=$(bench_tyr_port)
    bench_java_cmd io.blobfs.tyr.server.TyrServerMain --data-dir "$dir" --bind 127.0.0.1 \
      --port "$port" --sync interval --threads 4
    # Started directly (not through a function, which would run in a subshell): $! must be
    # the JVM's pid, or stopping it would stop only the subshell and leave the server running.
    "${BENCH_JAVA_CMD[@]}" >"$log" 2>&1 &
    BENCH_TYR_PID=$!
    line=
    for ((n = 0; n < 600; n++)); do
      line=$(grep -m1 '^TYR-SERVER LISTENING ' "$log" || true)
      [ -n "$line" ] && break
      kill -0 "$BENCH_TYR_PID" 2>/dev/null || break
      sleep 0.1
    done
    [ -n "$line" ] && break
    if kill -0 "$BENCH_TYR_PID" 2>/dev/null; then
      bench_stop_tyr
      cat "$log" >&2; echo "Týr server not listening after 60 s" >&2; return 1
    fi
    wait "$BENCH_TYR_PID" 2>/dev/null || true
    BENCH_TYR_PID=
    grep -q 'Address already in use\|cannot listen on' "$log" || { cat "$log" >&2; echo "Týr server exited" >&2; return 1; }
    echo "[bench] port $port taken, trying another" >&2
  done
  [ -n "$line" ] || { cat "$log" >&2; echo "Týr server found no free port" >&2; return 1; }
  BENCH_STOPS+=("bench_stop_tyr")
  export TYR_ADDRESS=${line#TYR-SERVER LISTENING }
  echo "[bench] Týr server pid $BENCH_TYR_PID at $TYR_ADDRESS (log $log)" >&2
}

bench_stop_tyr() {
  [ -n "$BENCH_TYR_PID" ] || return 0
  kill -TERM "$BENCH_TYR_PID" 2>/dev/null || true
  local n
  for ((n = 0; n < 200; n++)); do kill -0 "$BENCH_TYR_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$BENCH_TYR_PID" 2>/dev/null || true
  wait "$BENCH_TYR_PID" 2>/dev/null || true
  BENCH_TYR_PID=
}

bench_start_services() {
  local list=",$1,"
  if [[ $list == *,hdfs,* ]]; then
    scripts/hdfs/hdfs.sh status >/dev/null 2>&1 || BENCH_STOPS+=("scripts/hdfs/hdfs.sh stop")
    eval "$(scripts/hdfs/hdfs.sh start)"
    export HDFS_URI HDFS_CONF_DIR
  fi
  if [[ $list == *,rados,* || $list == *,cephfs,* ]]; then
    scripts/ceph/cluster.sh status >/dev/null 2>&1 ||
      BENCH_STOPS+=("scripts/ceph/cluster.sh stop --layout single --auth cephx")
    eval "$(scripts/ceph/cluster.sh start --layout single --auth cephx)"
    export CEPH_CONF BLOBFS_CEPH_POOL BLOBFS_CEPH_CLIENT_KEYRING
    unset CEPH_KEYRING
  fi
  if [[ $list == *,cephfs,* ]]; then
    scripts/ceph/cephfs.sh status >/dev/null 2>&1 || BENCH_STOPS+=("scripts/ceph/cephfs.sh stop")
    eval "$(scripts/ceph/cephfs.sh start)"
    export CEPHFS_MOUNT
  fi
  if [[ $list == *,tyr,* || $list == *,tyr-nogather,* ]]; then
    bench_start_tyr
  fi
}
