#!/usr/bin/env bash
# Sourced by the benchmark scripts: installs what they need, starts (or reuses) the
# project's single-OSD cephx cluster, exports its settings, and builds the benchmarks in
# the reactor (jmh_java runs them).
scripts/ensure-tools.sh
# BLOBFS_BENCH_CEPH=0: build only, no Ceph (a bench whose targets leave RADOS out).
if [ "${BLOBFS_BENCH_CEPH:-1}" != 0 ]; then
  scripts/ceph/ensure-ceph.sh
  # The OSD's memory, as a user who runs RADOS for reads sets it: the test cluster's 128 MiB
  # cache (autotune off) would compare bluestore, which reads around the page cache, with
  # HDFS reading warm data from the page cache. BLOBFS_BENCH_OSD_MEMORY (bytes, default
  # 6 GiB) becomes the bluestore cache (the memory target 1 GiB above it), and written data
  # is kept in the cache (bluestore_default_buffered_write), as the page cache keeps what
  # HDFS's DataNode writes. BLOBFS_BENCH_OSD_MEMORY=0 keeps the cluster's own settings.
  osd_memory=${BLOBFS_BENCH_OSD_MEMORY:-6442450944}
  if [ "$osd_memory" != 0 ]; then
    # Autotune would start the data cache small and grow it slowly; a fixed size, 80 % of
    # it for data (meta and kv 10 % each), in plain LRU order (2Q keeps data read once in
    # its smaller first list) puts the bytes of a TestDFSIO run in the cache.
    export BLOBFS_CEPH_OSD_ARGS="--osd_memory_target=$((osd_memory + (1 << 30))) --bluestore_cache_autotune=false --bluestore_cache_size=$osd_memory --bluestore_cache_meta_ratio=0.1 --bluestore_cache_kv_ratio=0.1 --bluestore_cache_type=lru --bluestore_default_buffered_write=true"
  fi
  eval "$(scripts/ceph/cluster.sh start --layout single --auth cephx)"
  export CEPH_CONF CEPH_KEYRING BLOBFS_CEPH_CLIENT_KEYRING BLOBFS_CEPH_POOL BLOBFS_CEPH_DIR
  osd_conf() {
    timeout 30 ceph -c "$CEPH_CONF" --name client.admin --keyring "$CEPH_KEYRING" \
      config show osd.0 "$1" 2>/dev/null || echo unknown
  }
  if [ "$osd_memory" != 0 ] && [ "$(osd_conf bluestore_cache_size) $(osd_conf bluestore_cache_type)" != "$osd_memory lru" ]; then
    # A running OSD keeps the options it was started with: restart it with the bench's.
    scripts/ceph/cluster.sh osd-stop --id 0 --layout single --auth cephx >&2
    scripts/ceph/cluster.sh osd-start --id 0 --layout single --auth cephx >&2
  fi
  # What the reports say the RADOS figures had.
  BLOBFS_BENCH_OSD_CACHE="bluestore_cache_size $(osd_conf bluestore_cache_size) bytes (autotune $(osd_conf bluestore_cache_autotune), meta/kv ratios $(osd_conf bluestore_cache_meta_ratio)/$(osd_conf bluestore_cache_kv_ratio), cache type $(osd_conf bluestore_cache_type)), osd_memory_target $(osd_conf osd_memory_target), buffered writes $(osd_conf bluestore_default_buffered_write)"
  export BLOBFS_BENCH_OSD_CACHE
  # The benchmarks are built in the reactor and run from benchmarks/jmh/target (nothing is
  # installed into ~/.m2, which other checkouts share: an install there made every checkout
  # run the last installer's jars). Every module of the reactor writes the classpath file;
  # benchmarks/jmh, built last, wins.
fi
BENCH_CP_FILE=$PWD/benchmarks/jmh/target/bench-classpath.txt
mvn -B -ntp -q -pl benchmarks/jmh -am package -DskipTests dependency:build-classpath \
  -Dmdep.outputFile="$BENCH_CP_FILE" >&2
# jmh_java JVM_OPTS... CLASS ARGS...: java on benchmarks/jmh's classes and dependencies,
# as its pom's exec:exec executions run it (%classpath).
jmh_java() {
  "${JAVA_HOME:+$JAVA_HOME/bin/}java" -cp "benchmarks/jmh/target/classes:$(cat "$BENCH_CP_FILE")" "$@"
}
