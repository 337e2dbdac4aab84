#!/usr/bin/env bash
# Makes a Docker engine answer here: installs Debian's docker.io (and debootstrap, which
# build-images.sh uses for the base image, and docker-compose, which the compose test
# uses when the CLI has no compose plugin) when missing, and starts dockerd when none
# answers. Installing and starting dockerd need root. Every wait is bounded: exit 0 once
# `docker version` reaches the engine, else non-zero with one line saying why.
#   BLOBFS_DOCKERD_LOG   dockerd's log (default /var/log/blobfs-dockerd.log)
#   BLOBFS_DOCKERD_WAIT  seconds to wait for a starting engine (default 60)
set -euo pipefail
LOG=${BLOBFS_DOCKERD_LOG:-/var/log/blobfs-dockerd.log}
WAIT=${BLOBFS_DOCKERD_WAIT:-60}

fail() { echo "ensure-docker: $*" >&2; exit 1; }
# A CLI newer than the engine is fine: it negotiates the API version down.
answers() { command -v docker >/dev/null && timeout 10 docker version >/dev/null 2>&1; }

compose_ok() {
  command -v docker-compose >/dev/null \
    || { command -v docker >/dev/null && timeout 10 docker compose version >/dev/null 2>&1; }
}
if answers; then
  # Only a missing compose is worth installing next to an engine that answers.
  if compose_ok || [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then exit 0; fi
  echo "ensure-docker: installing docker-compose" >&2
  apt=(timeout 900 apt-get -o DPkg::Lock::Timeout=600 -qq)
  DEBIAN_FRONTEND=noninteractive "${apt[@]}" update || fail "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y --no-install-recommends \
    docker-compose >/dev/null || fail "apt-get install docker-compose failed"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || fail "no Docker engine answers to this user, and starting one needs root" \
  "(run this as root, or start dockerd yourself)"
[ -z "${DOCKER_HOST:-}" ] || fail "DOCKER_HOST=$DOCKER_HOST does not answer" \
  "(this script only starts a local dockerd)"

missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
compose_ok || missing+=(docker-compose)
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || fail "no apt-get: install ${missing[*]} by other means"
  echo "ensure-docker: installing ${missing[*]}" >&2
  # Another process may be installing packages: wait for its lock, boundedly.
  apt=(timeout 900 apt-get -o DPkg::Lock::Timeout=600 -qq)
  DEBIAN_FRONTEND=noninteractive "${apt[@]}" update \
    || fail "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y --no-install-recommends \
    "${missing[@]}" >/dev/null || fail "apt-get install ${missing[*]} failed"
  command -v dockerd >/dev/null || fail "docker.io installed but no dockerd on PATH"
fi

# No systemd here: run dockerd ourselves. vfs and no iptables/bridge because this
# machine (itself a container) allows neither overlay mounts nor netfilter; containers
# therefore use the host network.
pid=$(pgrep -xo dockerd || true)
if [ -z "$pid" ]; then
  echo "ensure-docker: starting dockerd (log: $LOG)" >&2
  setsid nohup dockerd --storage-driver=vfs --iptables=false --ip6tables=false \
    --bridge=none >>"$LOG" 2>&1 </dev/null &
  pid=$!
fi
for _ in $(seq "$WAIT"); do
  answers && exit 0
  kill -0 "$pid" 2>/dev/null \
    || fail "dockerd exited: $(tail -n 1 "$LOG" 2>/dev/null || echo "see $LOG")"
  sleep 1
done
fail "dockerd (pid $pid) did not answer within ${WAIT}s; see $LOG"
