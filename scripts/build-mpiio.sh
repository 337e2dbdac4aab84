#!/usr/bin/env bash
# Builds the MPI-IO program of the FUSE tests and benchmarks (blobfs-fuse/src/test/mpi/mpiio.c)
# with MPICH's mpicc and prints the binary's path. Usage: scripts/build-mpiio.sh [OUT]
# (default target/mpiio under blobfs-fuse). Needs mpich (scripts/ensure-tools.sh with
# BLOBFS_FUSE_TOOLS=1). Rebuilds only when the source is newer than the binary. Run it:
#   mpirun -n 4 OUT n1|nn DIR MIB_PER_RANK BLOCK_BYTES
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/blobfs-fuse/src/test/mpi/mpiio.c"
out="${1:-$root/blobfs-fuse/target/mpiio}"
command -v mpicc >/dev/null 2>&1 || {
  echo "build-mpiio: mpicc not found; BLOBFS_FUSE_TOOLS=1 scripts/ensure-tools.sh installs mpich" >&2
  exit 1
}
mkdir -p "$(dirname "$out")"
if [ ! -x "$out" ] || [ "$src" -nt "$out" ]; then
  mpicc -O2 -Wall -Werror -o "$out.tmp.$$" "$src"
  mv "$out.tmp.$$" "$out"
fi
echo "$out"
