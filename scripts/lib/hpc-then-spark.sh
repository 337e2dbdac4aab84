# Sourced by scripts/main-job.sh after the five workloads: the HPC-then-Spark step of
# issue 16. The MPI-IO program (blobfs-fuse/src/test/mpi/mpiio.c, 4 ranks under MPICH's
# mpirun, N-to-1 strided into one shared file and N-to-N a file per rank) writes through a
# FUSE mount of the main job's default store (the embedded Týr node's log directory), the
# mount is stopped with SIGTERM (which publishes and closes the store), then a Spark job
# (io.blobfs.bench.HpcThenSpark) reads that output through blob://main/ and checks every
# word against what the ranks wrote. Runs only where FUSE is (root, /dev/fuse) and MPICH is
# installed; otherwise says why and skips. Needs bench_build to have built blobfs-fuse too
# (hpc_then_spark_modules, for BENCH_EXTRA_MODULES) and bench_java.
#   hpc_then_spark DATA_DIR       DATA_DIR: the embedded node's directory (absolute)
hpc_then_spark_modules() {
  [ -e /dev/fuse ] && [ "$(id -u)" -eq 0 ] && echo blobfs-fuse || true
}

# Stops the mount process (TERM, then waits: it publishes, unmounts and closes the store;
# KILL after 2 min) and removes the work dir, whichever way the step ends. Never removes
# it while something is still mounted under it: rm -rf would delete through the mount.
_hpc_then_spark_cleanup() {
  local rc=$1 work=$2 mnt=$3 pid=$4 n
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((n = 0; n < 1200; n++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  [ -n "$work" ] && [ -d "$work" ] || return 0
  if grep -q " $mnt " /proc/self/mounts; then # a killed mount leaves the kernel's entry
    umount -l "$mnt" 2>/dev/null || fusermount -uz "$mnt" 2>/dev/null || true
  fi
  if grep -q " $mnt " /proc/self/mounts; then
    echo "HPC-then-Spark: $mnt is still mounted; left $work" >&2
    return 0
  fi
  if [ "$rc" -ne 0 ] && [ -s "$work/mount.log" ]; then
    echo "HPC-then-Spark: the mount's log (last 40 lines):" >&2
    tail -n 40 "$work/mount.log" >&2
  fi
  rm -rf --one-file-system "$work"
}

# A subshell, so that its EXIT trap covers every way out (a return, a failed command under
# the caller's set -e, TERM or INT) without replacing the main job's own EXIT trap.
hpc_then_spark() (
  local data_dir=$1 why= work= mnt= conf pid= bin n dir=/hpc-$$ mib=4 block=1048576
  local tenths=${BLOBFS_HPC_MOUNT_WAIT_TENTHS:-1200}
  if [ ! -e /dev/fuse ]; then why="no /dev/fuse"
  elif [ "$(id -u)" -ne 0 ]; then why="mounting needs root"
  elif ! command -v mpirun >/dev/null 2>&1 || ! command -v mpicc >/dev/null 2>&1; then
    why="MPICH is not installed (BLOBFS_FUSE_TOOLS=1 scripts/ensure-tools.sh)"
  fi
  if [ -n "$why" ]; then
    echo "HPC-then-Spark step skipped: $why"
    return 0
  fi
  local started=$SECONDS
  echo "HPC-then-Spark: mpiio (4 ranks, n1 and nn, ${mib} MiB each) through a FUSE mount of blob://main/, then Spark through blob://"
  trap '_hpc_then_spark_cleanup $? "$work" "$mnt" "$pid"' EXIT
  trap 'exit 143' TERM
  trap 'exit 130' INT
  work=$(mktemp -d /tmp/blobfs-hpc-XXXXXX)
  mnt=$work/mnt
  conf=$work/core-site.xml
  cat >"$conf" <<XML
<?xml version="1.0"?>
<configuration>
  <property><name>fs.blob.store.main.type</name><value>tyr</value></property>
  <property><name>fs.blob.store.main.embedded-dir</name><value>$data_dir</value></property>
  <property><name>fs.blob.fuse.staging.dir</name><value>$work/staging</value></property>
</configuration>
XML
  bin=$(scripts/build-mpiio.sh "$work/mpiio")
  BLOBFS_MOUNT_SKIP_BUILD=1 scripts/blobfs-mount.sh --conf "$conf" --name main "$mnt" \
    >"$work/mount.log" 2>&1 &
  pid=$!
  for ((n = 0; n < tenths; n++)); do
    grep -q " $mnt fuse.blobfs" /proc/self/mounts && break
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "HPC-then-Spark: the mount process ended before it mounted" >&2
      return 1
    fi
    sleep 0.1
  done
  if ! grep -q " $mnt fuse.blobfs" /proc/self/mounts; then
    echo "HPC-then-Spark: not mounted after $((tenths / 10)) s" >&2
    return 1
  fi
  mkdir -p "$mnt$dir"
  local status=0
  mpirun -n 4 "$bin" n1 "$mnt$dir" $mib $block && mpirun -n 4 "$bin" nn "$mnt$dir" $mib $block \
    || status=$?
  kill -TERM "$pid"
  wait "$pid" || true # 128 + SIGTERM: published, unmounted, store closed
  pid=
  [ $status -eq 0 ] || { echo "HPC-then-Spark: mpiio failed ($status)" >&2; return 1; }
  (cd benchmarks && bench_java io.blobfs.bench.HpcThenSpark --data-dir "$data_dir" \
    --dir "$dir" --ranks 4 --mib $mib --block $block)
  echo "HPC-then-Spark step: $((SECONDS - started)) s (mount, mpiio, unmount, Spark)"
)
