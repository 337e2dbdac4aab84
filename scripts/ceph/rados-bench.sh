#!/usr/bin/env bash
# Runs `rados bench` against a cluster started by scripts/ceph/cluster.sh and prints
# the figures as one machine-readable last line:
#   RESULT mode=write seconds=10.03 object_size=4194304 concurrency=16 pool=blobfs ops=2210 bytes_per_sec=924016640 mb_per_sec=881.21 iops=220 avg_latency_s=0.0723
# (mb_per_sec is MiB/s, as rados bench reports it; bytes_per_sec = mb_per_sec * 2^20.)
#
# Usage:
#   scripts/ceph/rados-bench.sh [options] SECONDS OBJECT_SIZE CONCURRENCY write|seq|rand [POOL]
#   scripts/ceph/rados-bench.sh [options] cleanup [POOL]
# Options:
#   --layout single|multi, --auth cephx|none   which cluster (default single, cephx);
#                          ignored when BLOBFS_CEPH_DIR is set (then its env.sh is used)
#   --no-cleanup           keep the objects a write made, so seq/rand can read them
#   --id NAME              client name (default admin; e.g. blobfs-all)
# OBJECT_SIZE accepts a plain byte count or K/M/G (powers of 1024), e.g. 4M.
# POOL defaults to BLOBFS_CEPH_POOL (blobfs).
# Example:
#   scripts/ceph/rados-bench.sh --no-cleanup 10 4M 16 write
#   scripts/ceph/rados-bench.sh 10 4M 16 seq
#   scripts/ceph/rados-bench.sh cleanup
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//' >&2; exit 2; }

LAYOUT=single
AUTH=cephx
NO_CLEANUP=0
ID=admin
ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --layout) LAYOUT=${2:?}; shift 2 ;;
    --auth) AUTH=${2:?}; shift 2 ;;
    --no-cleanup) NO_CLEANUP=1; shift ;;
    --id) ID=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    --*) echo "unknown option $1" >&2; usage ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
[ ${#ARGS[@]} -ge 1 ] || usage

if [ -z "${BLOBFS_CEPH_DIR:-}" ]; then
  eval "$("$HERE/cluster.sh" env --layout "$LAYOUT" --auth "$AUTH")"
elif [ -f "$BLOBFS_CEPH_DIR/env.sh" ]; then
  # shellcheck disable=SC1091
  . "$BLOBFS_CEPH_DIR/env.sh"
fi

RADOS=(rados -c "$CEPH_CONF" --client-mount-timeout 15 --rados-mon-op-timeout 30)
if [ "$BLOBFS_CEPH_AUTH" = cephx ]; then
  case "$ID" in
    admin) RADOS+=(--id admin --keyring "$CEPH_KEYRING") ;;
    blobfs) RADOS+=(--id blobfs --keyring "$BLOBFS_CEPH_CLIENT_KEYRING") ;;
    blobfs-all) RADOS+=(--id blobfs-all --keyring "$BLOBFS_CEPH_ALL_CLIENT_KEYRING") ;;
    *) RADOS+=(--id "$ID") ;;
  esac
fi

if [ "${ARGS[0]}" = cleanup ]; then
  POOL=${ARGS[1]:-$BLOBFS_CEPH_POOL}
  # --prefix: every object any rados bench left here, not only the last run's
  timeout 1200 "${RADOS[@]}" -p "$POOL" cleanup --prefix benchmark_data
  exit $?
fi

[ ${#ARGS[@]} -ge 4 ] || usage
SECONDS_ARG=${ARGS[0]}
SIZE_ARG=${ARGS[1]}
CONC=${ARGS[2]}
MODE=${ARGS[3]}
POOL=${ARGS[4]:-$BLOBFS_CEPH_POOL}
case "$MODE" in write|seq|rand) ;; *) echo "mode must be write, seq or rand" >&2; exit 2 ;; esac
[[ "$SECONDS_ARG" =~ ^[0-9]+$ ]] || { echo "SECONDS must be an integer" >&2; exit 2; }
[[ "$CONC" =~ ^[0-9]+$ ]] || { echo "CONCURRENCY must be an integer" >&2; exit 2; }

to_bytes() {
  local v=$1 n unit
  [[ "$v" =~ ^([0-9]+)([KkMmGg]?)(i?[Bb]?)$ ]] || { echo "bad size: $v" >&2; exit 2; }
  n=${BASH_REMATCH[1]}
  unit=${BASH_REMATCH[2]}
  case "$unit" in
    K|k) echo $((n * 1024)) ;;
    M|m) echo $((n * 1024 * 1024)) ;;
    G|g) echo $((n * 1024 * 1024 * 1024)) ;;
    *) echo "$n" ;;
  esac
}
SIZE=$(to_bytes "$SIZE_ARG")

BENCH=(bench "$SECONDS_ARG" "$MODE" -t "$CONC")
[ "$MODE" = write ] && BENCH+=(-b "$SIZE" -O "$SIZE")
[ "$MODE" = write ] && [ $NO_CLEANUP -eq 1 ] && BENCH+=(--no-cleanup)

OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
set +e
# rados bench has no overall timeout of its own: bound it
timeout $((SECONDS_ARG + 300)) "${RADOS[@]}" -p "$POOL" "${BENCH[@]}" 2>&1 | tee "$OUT" >&2
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
  echo "rados bench failed (exit $rc)" >&2
  exit "$rc"
fi

field() { sed -n "s/^$1:[[:space:]]*//p" "$OUT" | head -1 | awk '{print $1}'; }
TIME=$(field 'Total time run')
if [ "$MODE" = write ]; then OPS=$(field 'Total writes made'); else OPS=$(field 'Total reads made'); fi
MBPS=$(field 'Bandwidth (MB\/sec)')
IOPS=$(field 'Average IOPS')
LAT=$(field 'Average Latency(s)')
OSIZE=$(field 'Object size')
[ -n "$OSIZE" ] || OSIZE=$SIZE
if [ -z "$MBPS" ] || [ -z "$OPS" ]; then
  echo "could not parse rados bench output" >&2
  exit 1
fi
BPS=$(awk -v m="$MBPS" 'BEGIN { printf "%.0f", m * 1048576 }')
echo "RESULT mode=$MODE seconds=$TIME object_size=$OSIZE concurrency=$CONC pool=$POOL ops=$OPS bytes_per_sec=$BPS mb_per_sec=$MBPS iops=$IOPS avg_latency_s=$LAT"
