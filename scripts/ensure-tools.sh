#!/usr/bin/env bash
# Installs what the build needs when it is missing: a JDK 17 and Maven (Debian packages).
# Idempotent: does nothing when both are present.
set -euo pipefail

need_java=1
if command -v java >/dev/null 2>&1; then
  v=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
  [ "${v:-0}" -ge 17 ] && need_java=0
fi
need_mvn=1
command -v mvn >/dev/null 2>&1 && need_mvn=0

if [ $need_java -eq 1 ] || [ $need_mvn -eq 1 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "ensure-tools: need a JDK >= 17 and Maven; run as root or install them" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  pkgs=()
  [ $need_java -eq 1 ] && pkgs+=(openjdk-17-jdk-headless)
  [ $need_mvn -eq 1 ] && pkgs+=(maven)
  apt-get install -y -qq "${pkgs[@]}"
fi

# The FUSE adapter's tests and benchmarks (blobfs-fuse): the fuse3 tools (fusermount3,
# used to clean up a mount a killed process left) and fio, rsync for the tests, and MPICH
# (mpicc, mpirun) for the MPI-IO program (src/test/mpi/mpiio.c). Only when
# asked (BLOBFS_FUSE_TOOLS=1, set by scripts/blobfs-fuse-tools.sh and scripts/test.sh),
# since the build itself needs none of them.
if [ "${BLOBFS_FUSE_TOOLS:-0}" = 1 ]; then
  missing=()
  command -v fusermount3 >/dev/null 2>&1 || missing+=(fuse3)
  command -v fio >/dev/null 2>&1 || missing+=(fio)
  command -v rsync >/dev/null 2>&1 || missing+=(rsync)
  { command -v mpicc && command -v mpirun; } >/dev/null 2>&1 || missing+=(mpich libmpich-dev)
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "ensure-tools: the FUSE tests need ${missing[*]}; run as root or install them" >&2
      exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}"
  fi
fi
