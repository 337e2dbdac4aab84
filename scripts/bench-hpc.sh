#!/usr/bin/env bash
# The paper's Figures 6-9 (issue 16, "Benchmark"): the FUSE mount over a Týr server process
# and over RADOS, against CephFS through ceph-fuse on the same Ceph cluster and the local
# disk, side by side, interleaved, in one run.
#   scripts/bench-hpc.sh [--rounds 3] [--seq-size 512m] [--rand-size 64m]
#       [--shared-size 128m] [--backends tyr,rados,cephfs,local] [--name fuse-hpc]
#       [--workloads seq,rand,shared,mpi] [--base CHECKOUT]
# --workloads runs only those (each write then its read; the report marks the others
# "not measured"), e.g. --workloads seq,shared for the read targets.
# Workloads (fio, psync, 1 job unless said): sequential 1 MiB write then read, random
# 8 KiB write then read, 4 jobs on one shared file (each its own --shared-size range,
# 1 MiB blocks) writing then reading; then the MPI-IO program with 4 ranks (N-to-1 and
# N-to-N) when blobfs-fuse/src/test/mpi/mpiio.c and mpicc/mpirun are present ("not run"
# otherwise). Every fio run carries --verify=crc32c: writes put a checksum in each block,
# reads check every block and a mismatch stops the run. Writes end with an fsync inside
# fio's measured time (on the mount: the publication to the store). The page cache is
# dropped (echo 3 > /proc/sys/vm/drop_caches) before every read.
# --base CHECKOUT: another checkout of this repository, built (`bench_build` and
# `mvn -pl blobfs-fuse -am package -DskipTests` there): back ends tyr-base and rados-base
# are the mount of that build, on the same store and core-site.xml, so that an old and a
# new mount are measured side by side in one run (e.g. --backends
# tyr,tyr-base,rados,rados-base,cephfs,local). BLOBFS_MOUNT_JAVA_OPTS reaches every mount
# (a JFR recording, say). Each mount's log (its request and publication counts, written at
# unmount) is kept as benchmarks/target/NAME-mount-BACKEND.log.
# Back ends tyr-pt and rados-pt: this build's mount with FUSE passthrough on
# (fs.blob.fuse.passthrough, Linux 6.9+), beside tyr and rados with it off; tyr-pt-base
# and rados-pt-base: the --base build's mount with passthrough on. Back ends tyr-tk and
# rados-tk: this build's mount with shared stripes on (fs.blob.fuse.takeover: a
# publication sends only the stripes writes changed), beside tyr and rados with it off.
# Result: benchmarks/reports/NAME.md and NAME-*.png (io.blobfs.bench.hpc.HpcReport), from
# the raw figures in benchmarks/target/NAME.tsv. Needs root and /dev/fuse; Ceph on
# BLOBFS_CEPH_ROOT / BLOBFS_CEPH_PORT_BASE (scripts/ceph/cluster.sh), started and stopped
# here unless it already ran.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 seq=512m rand=64m shared=128m backends=tyr,rados,cephfs,local name=fuse-hpc base=""
workloads=seq,rand,shared,mpi
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --seq-size) seq=$2; shift 2 ;;
    --rand-size) rand=$2; shift 2 ;;
    --shared-size) shared=$2; shift 2 ;;
    --backends) backends=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    --base) base=$(cd "$2" && pwd); shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] && [ -e /dev/fuse ] || { echo "bench-hpc: needs root and /dev/fuse" >&2; exit 1; }
BLOBFS_FUSE_TOOLS=1 scripts/ensure-tools.sh
source scripts/lib/bench-services.sh
log() { echo "[bench-hpc] $*" >&2; }

bench_build
mvn -B -ntp -q -pl blobfs-fuse -am package -DskipTests >&2 # the mount's classpath.txt (package: its test-jar dependencies exist only then)
if [[ ,$backends, == *-base,* ]] && { [ -z "$base" ] || [ ! -s "$base/blobfs-fuse/target/classpath.txt" ]; }; then
  echo "bench-hpc: a *-base back end needs --base CHECKOUT, built" >&2; exit 2
fi
services=""
[[ ,$backends, =~ ,tyr(-base|-pt|-pt-base|-tk)?, ]] && services+=tyr,
[[ ,$backends, =~ ,rados(-base|-pt|-pt-base|-tk)?, ]] && services+=rados,
[[ ,$backends, == *,cephfs,* ]] && services+=cephfs,
work=$(mktemp -d /var/tmp/blobfs-bench-hpc.XXXXXX)
mount_pids=()
cleanup() {
  local p
  for p in "${mount_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${mount_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  [ -n "${CEPHFS_MOUNT:-}" ] && rm -rf "${CEPHFS_MOUNT:?}/bench-hpc"
  for p in "$work"/mount-*.log; do
    [ -e "$p" ] && cp "$p" "benchmarks/target/$name-${p##*/}"
  done
  bench_stop_services
  rm -rf "$work"
}
trap cleanup EXIT
bench_start_services "${services%,}"

# blobfs_mount NAME: mounts store profile NAME of $work/core-site.xml at $work/mnt-NAME;
# NAME-base: profile NAME with the --base checkout's build; NAME-pt: with passthrough on;
# NAME-pt-base: both; NAME-tk: with shared stripes on
blobfs_mount() {
  local mnt=$work/mnt-$1 n root=. conf=$work/core-site.xml
  [[ $1 == *-base ]] && root=$base
  [[ $1 == *-pt || $1 == *-pt-base ]] && conf=$work/core-site-pt.xml
  [[ $1 == *-tk ]] && conf=$work/core-site-tk.xml
  mkdir -p "$mnt"
  BLOBFS_MOUNT_SKIP_BUILD=1 "$root/scripts/blobfs-mount.sh" --conf "$conf" \
    --name "$(sed -E 's/(-pt|-tk)?(-base)?$//' <<<"$1")" "$mnt" >"$work/mount-$1.log" 2>&1 &
  mount_pids+=($!)
  for ((n = 0; n < 600; n++)); do grep -q " $mnt fuse.blobfs" /proc/mounts && return 0; sleep 0.2; done
  cat "$work/mount-$1.log" >&2
  return 1
}
{
  echo "<configuration>"
  echo "  <property><name>fs.blob.fuse.staging.dir</name><value>$work/staging</value></property>"
  if [ -n "${TYR_ADDRESS:-}" ]; then
    echo "  <property><name>fs.blob.store.tyr.type</name><value>tyr</value></property>"
    echo "  <property><name>fs.blob.store.tyr.address</name><value>$TYR_ADDRESS</value></property>"
  fi
  if [ -n "${BLOBFS_CEPH_POOL:-}" ]; then
    for kv in type=rados "pool=$BLOBFS_CEPH_POOL" "conf=$CEPH_CONF" client-id=blobfs \
              "keyring=$BLOBFS_CEPH_CLIENT_KEYRING" "namespace=bench-hpc-$$"; do
      echo "  <property><name>fs.blob.store.rados.${kv%%=*}</name><value>${kv#*=}</value></property>"
    done
  fi
  echo "</configuration>"
} >"$work/core-site.xml"
sed 's|^</configuration>|  <property><name>fs.blob.fuse.passthrough</name><value>true</value></property>\n</configuration>|' \
  "$work/core-site.xml" >"$work/core-site-pt.xml"
sed 's|^</configuration>|  <property><name>fs.blob.fuse.takeover</name><value>true</value></property>\n</configuration>|' \
  "$work/core-site.xml" >"$work/core-site-tk.xml"

declare -A dir
IFS=, read -ra list <<<"$backends"
for b in "${list[@]}"; do
  case $b in
    tyr|rados|tyr-base|rados-base|tyr-pt|rados-pt|tyr-pt-base|rados-pt-base|tyr-tk|rados-tk) blobfs_mount "$b"; dir[$b]=$work/mnt-$b ;;
    cephfs) dir[$b]=$CEPHFS_MOUNT/bench-hpc; rm -rf "${dir[$b]}"; mkdir -p "${dir[$b]}" ;;
    local) dir[$b]=$work/local; mkdir -p "${dir[$b]}" ;;
    *) echo "unknown back end $b" >&2; exit 2 ;;
  esac
done

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# fio_mbps DIR FILE RW BS SIZE [ARGS...]: one verified fio run; prints MB/s (all jobs)
fio_mbps() {
  local d=$1 f=$2 rw=$3 bs=$4 size=$5 extra=() out k
  shift 5
  case $rw in *write*) extra=(--end_fsync=1 --do_verify=0) ;; *) drop_caches ;; esac
  out=$work/fio.json
  # fio saves a verify state file (NAME-N-verify.state) in its working directory when a
  # writing job ends; nothing here loads it: not saved, and fio runs in the work
  # directory so that nothing it leaves lands in the checkout
  if ! (cd "$work" && fio --name="$f" --directory="$d" --filename="$f" --rw="$rw" --bs="$bs" \
       --size="$size" --ioengine=psync --verify=crc32c --verify_fatal=1 --verify_state_save=0 \
       --group_reporting "${extra[@]}" "$@" --output-format=json) >"$out" 2>"$work/fio.err"; then
    cat "$work/fio.err" >&2
    log "fio $rw on $d failed (a verify mismatch stops the run)"
    return 1
  fi
  k=read; [[ $rw == *write* ]] && k=write
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]; print("%.1f" % (j[sys.argv[2]]["bw_bytes"]/1e6))' "$out" "$k"
}

wanted() { [[ ,$workloads, == *,$1,* ]]; }

raw=benchmarks/target/$name.tsv
mkdir -p benchmarks/target
{
  echo "# load-before	$(cat /proc/loadavg)"
  echo "# sizes	seq=$seq rand=$rand shared=4x$shared rounds=$rounds workloads=$workloads"
} >"$raw"
record() { echo "$1	$2	$3	$4" >>"$raw"; log "round $1 $2 $3 $4 MB/s"; }

mpi_src=blobfs-fuse/src/test/mpi/mpiio.c
mpi_bin=""
if ! wanted mpi; then
  echo "# mpi-not-run	not asked for (--workloads $workloads)" >>"$raw"
elif [ -f "$mpi_src" ] && command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
  mpi_bin=$work/mpiio
  mpicc -O2 -o "$mpi_bin" "$mpi_src"
  # Open MPI refuses root without this flag; MPICH has no such flag
  mpi_root_flag=()
  mpirun --version 2>&1 | grep -q "Open MPI" && mpi_root_flag=(--allow-run-as-root)
else
  why="$mpi_src absent on this branch"
  [ -f "$mpi_src" ] && why="mpicc/mpirun not installed"
  echo "# mpi-not-run	$why" >>"$raw"
  log "MPI-IO: not run ($why)"
fi
mpi_mib=$(( $(numfmt --from=iec "${shared^^}") >> 20 ))

for ((r = 1; r <= rounds; r++)); do
  for b in "${list[@]}"; do
    d=${dir[$b]}
    if wanted seq; then
      record "$r" "$b" seq-write "$(fio_mbps "$d" seq write 1M "$seq")"
      record "$r" "$b" seq-read "$(fio_mbps "$d" seq read 1M "$seq")"
    fi
    if wanted rand; then
      record "$r" "$b" rand-write "$(fio_mbps "$d" rand randwrite 8k "$rand")"
      record "$r" "$b" rand-read "$(fio_mbps "$d" rand randread 8k "$rand")"
    fi
    if wanted shared; then
      record "$r" "$b" shared-write "$(fio_mbps "$d" shared write 1M "$shared" --numjobs=4 --offset_increment="$shared")"
      record "$r" "$b" shared-read "$(fio_mbps "$d" shared read 1M "$shared" --numjobs=4 --offset_increment="$shared")"
    fi
    rm -f "$d/seq" "$d/rand" "$d/shared"
    if [ -n "$mpi_bin" ] && wanted mpi; then
      for mode in n1 nn; do
        mkdir -p "$d/mpi-$mode"
        drop_caches
        line=$(mpirun ${mpi_root_flag[@]+"${mpi_root_flag[@]}"} -np 4 "$mpi_bin" "$mode" "$d/mpi-$mode" "$mpi_mib" 1048576 2>&1 | grep '^mpiio ' | tail -1)
        [[ $line == *" ok"* ]] || { log "MPI-IO $mode on $b failed: $line"; exit 1; }
        w=$(sed -n 's/.*write_MBps=\([0-9.]*\).*/\1/p' <<<"$line")
        rd=$(sed -n 's/.*read_MBps=\([0-9.]*\).*/\1/p' <<<"$line")
        record "$r" "$b" "mpi-$mode-write" "$w"
        record "$r" "$b" "mpi-$mode-read" "$rd"
        rm -rf "${d:?}/mpi-$mode"
      done
    fi
  done
done
echo "# load-after	$(cat /proc/loadavg)" >>"$raw"
bench_java io.blobfs.bench.hpc.HpcReport "$raw" benchmarks/reports "$name"
