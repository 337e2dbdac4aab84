#!/usr/bin/env bash
# Installs the Debian Ceph packages the local test clusters need
# (ceph-mon ceph-osd ceph-mgr ceph-common librados2, and ceph-mds ceph-fuse for CephFS)
# when any is missing.
# Idempotent and silent when everything is already installed.
# Usage: scripts/ceph/ensure-ceph.sh        (must run as root to install)
#        EXTRA_PKGS="librados-dev" scripts/ceph/ensure-ceph.sh
set -euo pipefail

PKGS=(ceph-mon ceph-osd ceph-mgr ceph-common librados2 ceph-mds ceph-fuse)
# shellcheck disable=SC2206
[ -n "${EXTRA_PKGS:-}" ] && PKGS+=(${EXTRA_PKGS})

installed() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "ensure-ceph: not a Debian/Ubuntu system (no dpkg-query); install Ceph Pacific" \
       "(${PKGS[*]}) by other means" >&2
  exit 1
fi

missing=()
for p in "${PKGS[@]}"; do
  installed "$p" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-ceph: missing packages: ${missing[*]}; run this script as root" \
       "(it installs them with apt-get) or install them yourself" >&2
  exit 1
fi

echo "ensure-ceph: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

still=()
for p in "${missing[@]}"; do
  installed "$p" || still+=("$p")
done
if [ ${#still[@]} -ne 0 ]; then
  echo "ensure-ceph: apt-get finished but these are still not installed: ${still[*]}" >&2
  exit 1
fi
for b in ceph-mon ceph-osd ceph-mgr ceph rados monmaptool ceph-authtool; do
  command -v "$b" >/dev/null 2>&1 || { echo "ensure-ceph: $b not on PATH after install" >&2; exit 1; }
done
echo "ensure-ceph: $(ceph --version)" >&2
