#!/usr/bin/env bash
# A first fio comparison: the FUSE mount (over an embedded Týr node in the mount's JVM)
# against the local disk it stages on, side by side, interleaved, 3 rounds:
#   sequential 1 MiB write then read, random 8 KiB write then read.
# fio invalidates each file's page cache before its runs (--invalidate=1, its default);
# a read on the mount also drops the mount's pages at open. Prints a Markdown table.
#   scripts/bench-fuse.sh [--rounds N] [--seq-size 256m] [--rand-size 64m] [--out FILE]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
rounds=3 seq=256m rand=64m out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --seq-size) seq=$2; shift 2 ;;
    --rand-size) rand=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
BLOBFS_FUSE_TOOLS=1 "$root/scripts/ensure-tools.sh"
work=$(mktemp -d /var/tmp/blobfs-bench-fuse.XXXXXX)
mnt=$work/mnt local=$work/local
mkdir -p "$mnt" "$local"
cat > "$work/core-site.xml" <<XML
<configuration>
  <property><name>fs.blob.store.bench.type</name><value>tyr</value></property>
  <property><name>fs.blob.store.bench.embedded-dir</name><value>$work/tyr</value></property>
  <property><name>fs.blob.store.bench.stripe.size</name><value>8m</value></property>
  <property><name>fs.blob.fuse.staging.dir</name><value>$work/staging</value></property>
</configuration>
XML
"$root/scripts/blobfs-mount.sh" --conf "$work/core-site.xml" --name bench "$mnt" > "$work/mount.log" 2>&1 &
mount_pid=$!
cleanup() { kill -TERM $mount_pid 2>/dev/null || true; wait $mount_pid 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 1 600); do grep -q " $mnt fuse.blobfs" /proc/mounts && break; sleep 0.2; done
grep -q " $mnt fuse.blobfs" /proc/mounts || { cat "$work/mount.log"; exit 1; }

# one fio run; prints MB/s
# Writes end with an fsync, inside fio's measured time: on the mount that is where the
# staged file is published to the store, so the figure counts the upload.
run() { # dir name rw bs size
  local sync=""
  case "$3" in *write*) sync="--end_fsync=1" ;; esac
  fio --name="$2" --filename="$1/$2" --rw="$3" --bs="$4" --size="$5" --ioengine=psync $sync \
    --output-format=json 2>/dev/null \
  | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; k="write" if j["write"]["io_bytes"] else "read"; print("%.1f" % (j[k]["bw_bytes"]/1e6))'
}
declare -A sum
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq 1 "$rounds"); do
  for target in mount local; do
    d=$mnt; [ $target = local ] && d=$local
    for w in "seqwrite write 1M $seq seq" "seqread read 1M $seq seq" \
             "randwrite randwrite 8k $rand rand" "randread randread 8k $rand rand"; do
      set -- $w
      v=$(run "$d" "$5" "$2" "$3" "$4")
      echo "round $r $target $1 $v MB/s" >&2
      sum[$target.$1]="${sum[$target.$1]:-} $v"
    done
    rm -f "$d/seq" "$d/rand"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
{
  echo "| workload | mount (MB/s, per round) | local disk (MB/s, per round) | ratio of medians |"
  echo "|---|---|---|---:|"
  for wl in seqwrite seqread randwrite randread; do
    m=${sum[mount.$wl]} l=${sum[local.$wl]}
    ratio=$(python3 -c "import statistics as s; m=[float(x) for x in '$m'.split()]; l=[float(x) for x in '$l'.split()]; print('%.2f' % (s.median(m)/s.median(l)))")
    echo "| $wl |$m |$l | $ratio |"
  done
  echo
  echo "Load average before and after: see stderr. Sizes: sequential $seq, random $rand, psync, 1 job; writes end with an fsync (counted)."
} | tee ${out:+"$out"}
