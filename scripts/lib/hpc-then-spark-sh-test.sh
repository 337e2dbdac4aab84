#!/usr/bin/env bash
# Tests of hpc-then-spark.sh's cleanup, with stand-ins for the mount, the MPI build and
# Spark (no FUSE, MPI or Java is used): whichever way the step fails, the mount process is
# stopped (TERM, and waited for) and the step's work dir is gone when it returns. Needs
# what the step checks before it starts (root, /dev/fuse, mpirun and mpicc on the PATH;
# stand-ins are put first on it); otherwise says so and exits 0 having checked nothing.
#
# Usage: scripts/lib/hpc-then-spark-sh-test.sh
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ ! -e /dev/fuse ] || [ "$(id -u)" -ne 0 ]; then
  echo "skipped: hpc_then_spark runs only as root with /dev/fuse" >&2
  exit 0
fi
T=$(mktemp -d /tmp/blobfs-hpc-sh-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
FAILED=0
fail() { echo "FAIL: $*" >&2; FAILED=1; }
pass() { echo "ok: $*" >&2; }

mkdir -p "$T/root/scripts" "$T/root/benchmarks" "$T/bin"
for tool in mpirun mpicc; do printf '#!/bin/sh\nexit 0\n' >"$T/bin/$tool"; done
printf '#!/bin/sh\necho /bin/true\n' >"$T/root/scripts/build-mpiio.sh"
chmod +x "$T/bin/"* "$T/root/scripts/build-mpiio.sh"

# mount_stub BEHAVIOUR: scripts/blobfs-mount.sh that never mounts; "exit" fails at once,
# "stay" runs until TERM, then takes a moment (as publishing does) and notes it was asked.
mount_stub() {
  cat >"$T/root/scripts/blobfs-mount.sh" <<SH
#!/usr/bin/env bash
echo "stub mount: \$*"
[ "$1" = exit ] && exit 3
echo \$\$ >"$T/mount.pid"
trap 'sleep 0.5; echo termed >"$T/mount.termed"; exit 143' TERM
while :; do sleep 0.05; done
SH
  chmod +x "$T/root/scripts/blobfs-mount.sh"
  rm -f "$T/mount.pid" "$T/mount.termed"
}

work_dirs() { find /tmp -maxdepth 1 -name 'blobfs-hpc-??????' -type d | sort; }

run_step() { # run_step: the step's exit status, in the stand-in tree
  (cd "$T/root" && PATH="$T/bin:$PATH" BLOBFS_HPC_MOUNT_WAIT_TENTHS=10 bash -c \
    'set -euo pipefail; source "$1"; bench_java() { :; }; hpc_then_spark /nonexistent' \
    _ "$HERE/hpc-then-spark.sh" >/dev/null 2>"$T/step.err") && echo 0 || echo $?
}

# --- the mount process ends before it mounts
mount_stub exit
before=$(work_dirs)
rc=$(run_step)
[ "$rc" = 1 ] && pass "a mount that ends at once fails the step" || fail "exit status $rc"
[ "$(work_dirs)" = "$before" ] && pass "its work dir is gone" ||
  fail "work dir left: $(comm -13 <(echo "$before") <(work_dirs))"
grep -q "stub mount:" "$T/step.err" && pass "the mount's log is shown" ||
  fail "no mount log in: $(cat "$T/step.err")"

# --- the mount process runs but never mounts
mount_stub stay
before=$(work_dirs)
rc=$(run_step)
[ "$rc" = 1 ] && pass "a mount that never mounts fails the step" || fail "exit status $rc"
pid=$(cat "$T/mount.pid" 2>/dev/null || echo none)
if [ "$pid" != none ] && kill -0 "$pid" 2>/dev/null; then
  fail "the mount process $pid still runs after the step returned"
  kill -KILL "$pid" 2>/dev/null || true
else
  pass "the mount process is gone when the step returns"
fi
[ -e "$T/mount.termed" ] && pass "it was stopped with TERM and waited for" ||
  fail "the mount process did not finish its TERM handler before the step returned"
[ "$(work_dirs)" = "$before" ] && pass "its work dir is gone" ||
  fail "work dir left: $(comm -13 <(echo "$before") <(work_dirs))"

exit $FAILED
