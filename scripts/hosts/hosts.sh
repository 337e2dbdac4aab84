#!/usr/bin/env bash
# Several "hosts" on this one machine, for the Týr cluster and Spark standalone tests.
#
#   scripts/hosts/hosts.sh up [N]        N hosts (3): creates what is missing, removes hosts
#                                        numbered above N; running it again changes nothing
#   scripts/hosts/hosts.sh down          removes every host, the bridge and the state
#   scripts/hosts/hosts.sh status [N]    prints the mode and each host; exit 1 if one is missing
#   scripts/hosts/hosts.sh addr I        the address of host I
#   scripts/hosts/hosts.sh exec I CMD... runs CMD on host I (its namespace, its hostname)
#   scripts/hosts/hosts.sh hosts-file    the path of the hosts file (name -> address)
#
# Namespace mode (as root, where `ip netns` works): host I is the network namespace
# blobfs-hI with loopback up and one interface eth0 at 10.77.0.I/24, the peer of a veth
# pair whose other end is in the bridge blobfs-br0 (10.77.0.254/24 in this namespace, so
# processes here reach every host). Every packet stays on this machine: the hosts have no
# route but their /24, the bridge has IPv4 forwarding off, and `up` refuses a subnet that
# any other interface already uses.
#
# Host names: `ip netns` gives no UTS namespace of its own, so a host's name lives in
# files instead: the hosts file (`hosts-file`; `blobfs-hI` -> its address), which tests
# and scripts resolve names with (Java: -Djdk.net.hosts.file=FILE), and
# /etc/netns/blobfs-hI/{hosts,hostname}, which `ip netns exec` mounts over /etc inside the
# host. `exec` also gives its command a UTS namespace whose hostname is blobfs-hI, so
# `hostname` there answers the host's name. Nothing is written to /etc/hosts.
#
# Loopback fallback (not root, or no namespaces; or BLOBFS_HOSTS_LOOPBACK=1 to try it):
# host I is the address 127.0.0.(10+I) of this namespace, named in the same hosts file;
# `exec` runs the command here. It says so on stderr. Under CI=true it fails instead:
# CI must test real hosts.
#
# Environment: BLOBFS_HOSTS_PREFIX (blobfs-h), BLOBFS_HOSTS_BRIDGE (blobfs-br0),
# BLOBFS_HOSTS_SUBNET (10.77.0; the first three octets of a /24),
# BLOBFS_HOSTS_STATE (/run/blobfs-hosts as root, else $XDG_RUNTIME_DIR or /tmp).
set -euo pipefail

PREFIX=${BLOBFS_HOSTS_PREFIX:-blobfs-h}
BRIDGE=${BLOBFS_HOSTS_BRIDGE:-blobfs-br0}
SUBNET=${BLOBFS_HOSTS_SUBNET:-10.77.0}
if [ "$(id -u)" = 0 ]; then
  STATE=${BLOBFS_HOSTS_STATE:-/run/$PREFIX-hosts}
else
  STATE=${BLOBFS_HOSTS_STATE:-${XDG_RUNTIME_DIR:-/tmp}/$PREFIX-hosts-$(id -u)}
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

die() { echo "hosts.sh: $*" >&2; exit 1; }
say() { echo "hosts.sh: $*" >&2; }
# shellcheck source=../lib/owned-root.sh
. "$HERE/../lib/owned-root.sh"

[[ $PREFIX =~ ^[a-z][a-z0-9-]{0,9}$ ]] || die "BLOBFS_HOSTS_PREFIX '$PREFIX': 1-10 of [a-z0-9-]"
[[ $BRIDGE =~ ^[a-z][a-z0-9-]{0,14}$ ]] || die "BLOBFS_HOSTS_BRIDGE '$BRIDGE': 1-15 of [a-z0-9-]"
[[ $SUBNET =~ ^(10|192\.168|172\.(1[6-9]|2[0-9]|3[01]))(\.[0-9]{1,3}){1,2}$ ]] &&
  [ "$(tr -cd . <<<"$SUBNET" | wc -c)" = 2 ] ||
  die "BLOBFS_HOSTS_SUBNET '$SUBNET': three octets of a private /24 (10.x.y, 172.16-31.y, 192.168.y)"

ns_of() { echo "$PREFIX$1"; }
veth_of() { echo "$PREFIX${1}v"; }

# Namespaces need root and a kernel that lets us make one; probed with a throw-away one.
namespaces_work() {
  [ "$(id -u)" = 0 ] || return 1
  [ "${BLOBFS_HOSTS_LOOPBACK:-}" = 1 ] && return 1
  command -v ip >/dev/null || return 1
  local probe="$PREFIX-probe$$"
  ip netns add "$probe" 2>/dev/null || return 1
  ip netns del "$probe" 2>/dev/null || true
  return 0
}

mode() { cat "$STATE/mode" 2>/dev/null || echo none; }

existing_hosts() { # numbers of this prefix's namespaces, one per line
  ip netns list 2>/dev/null | awk '{print $1}' | sed -n "s/^$PREFIX\([0-9][0-9]*\)$/\1/p" | sort -n
}

write_hosts_file() { # $1 = N, $2 = mode
  local n=$1 m=$2 i addr tmp
  tmp=$(mktemp "$STATE/hosts.XXXXXX")
  {
    echo "# written by scripts/hosts/hosts.sh ($m mode); blobfs-hosts"
    echo "127.0.0.1 localhost"
    for i in $(seq 1 "$n"); do
      if [ "$m" = netns ]; then addr=$SUBNET.$i; else addr=127.0.0.$((10 + i)); fi
      echo "$addr $(ns_of "$i")"
    done
  } >"$tmp"
  chmod 0644 "$tmp"
  mv -f "$tmp" "$STATE/hosts"
}

subnet_free() { # the /24 must be ours alone: only the bridge and our hosts may use it
  local line dev
  while read -r line; do
    dev=$(awk '{print $2}' <<<"$line")
    [ "$dev" = "$BRIDGE" ] || die "$SUBNET.0/24 is already used by interface $dev here: refusing; set BLOBFS_HOSTS_SUBNET"
  done < <(ip -4 -o addr show | grep -F " inet $SUBNET." || true)
  if ip -4 route show | grep -F "$SUBNET." | grep -vqF "dev $BRIDGE"; then
    die "a route to $SUBNET.0/24 that is not the bridge's exists: refusing; set BLOBFS_HOSTS_SUBNET"
  fi
}

host_up() { # $1 = I: creates whatever of host I is missing
  local i=$1 ns veth
  ns=$(ns_of "$i")
  veth=$(veth_of "$i")
  ip netns list | awk '{print $1}' | grep -qx "$ns" || ip netns add "$ns"
  ip -n "$ns" link set lo up
  if ! ip link show "$veth" >/dev/null 2>&1; then
    ip -n "$ns" link del eth0 2>/dev/null || true # a half-made host from an earlier run
    ip link add "$veth" type veth peer name "${veth}p"
    ip link set "${veth}p" netns "$ns"
    ip -n "$ns" link set "${veth}p" name eth0
  fi
  ip link set "$veth" master "$BRIDGE"
  ip link set "$veth" up
  ip -n "$ns" addr replace "$SUBNET.$i/24" dev eth0
  ip -n "$ns" link set eth0 up
  mkdir -p "/etc/netns/$ns"
  cp "$STATE/hosts" "/etc/netns/$ns/hosts"
  echo "$ns" >"/etc/netns/$ns/hostname"
}

host_down() { # $1 = I
  local ns veth
  ns=$(ns_of "$1")
  veth=$(veth_of "$1")
  ip link del "$veth" 2>/dev/null || true # takes its peer in the namespace with it
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "/etc/netns/$ns"
}

# Waits (bounded) until host I's address answers from here: a TCP connect that is refused
# proves the path as well as one that is accepted.
wait_reachable() {
  local addr=$1 deadline=$((SECONDS + 10)) out
  while [ "$SECONDS" -lt "$deadline" ]; do
    out=$(timeout 2 bash -c "exec 3<>/dev/tcp/$addr/9" 2>&1 || true)
    case $out in *refused*|"") return 0 ;; esac
    sleep 0.2
  done
  die "host at $addr did not become reachable within 10 s"
}

cmd_up() {
  local n=${1:-3} i
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] || die "N must be 1..200, got '$n'"
  if ! namespaces_work; then
    [ "${CI:-}" = true ] && die "network namespaces are not available here (root and 'ip netns' needed), and CI=true forbids the loopback fallback"
    STATE=$(owned_root "$STATE" BLOBFS_HOSTS_STATE)
    say "network namespaces are not available (root and 'ip netns' needed): falling back to loopback addresses 127.0.0.11..127.0.0.$((10 + n)); hosts share this namespace and hostname"
    echo loopback >"$STATE/mode"
    echo "$n" >"$STATE/count"
    write_hosts_file "$n" loopback
    echo "$STATE/hosts"
    return 0
  fi
  [ "$(mode)" = loopback ] && rm -rf "$STATE"
  STATE=$(owned_root "$STATE" BLOBFS_HOSTS_STATE)
  subnet_free
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
  fi
  ip addr replace "$SUBNET.254/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  # Nothing is routed between the hosts' /24 and anything else on this machine.
  sysctl -qw "net.ipv4.conf.$BRIDGE.forwarding=0"
  echo netns >"$STATE/mode"
  echo "$n" >"$STATE/count"
  write_hosts_file "$n" netns
  for i in $(existing_hosts); do
    [ "$i" -le "$n" ] || host_down "$i"
  done
  for i in $(seq 1 "$n"); do
    host_up "$i"
  done
  for i in $(seq 1 "$n"); do
    wait_reachable "$SUBNET.$i"
  done
  say "$n hosts up: $(seq -s ' ' -f "$PREFIX%g" 1 "$n") on $SUBNET.0/24 (bridge $BRIDGE)"
  echo "$STATE/hosts"
}

cmd_down() {
  local i
  if command -v ip >/dev/null && [ "$(id -u)" = 0 ]; then
    for i in $(existing_hosts); do
      host_down "$i"
    done
    # veths whose namespace went away some other way
    for i in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed -n "s/^\($PREFIX[0-9][0-9]*v\)@.*/\1/p"); do
      ip link del "$i" 2>/dev/null || true
    done
    rm -rf /etc/netns/"$PREFIX"[0-9]*
    ip link del "$BRIDGE" 2>/dev/null || true
  fi
  rm -rf "$STATE"
  say "hosts removed"
}

cmd_status() {
  local m n i ok=0 addr
  m=$(mode)
  n=${1:-$(cat "$STATE/count" 2>/dev/null || echo 3)}
  echo "mode $m"
  for i in $(seq 1 "$n"); do
    if [ "$m" = netns ]; then
      addr=$SUBNET.$i
      if ip -n "$(ns_of "$i")" -4 -o addr show dev eth0 2>/dev/null | grep -qF " $addr/24"; then
        echo "$(ns_of "$i") $addr up"
      else
        echo "$(ns_of "$i") $addr missing"
        ok=1
      fi
    elif [ "$m" = loopback ]; then
      echo "$(ns_of "$i") 127.0.0.$((10 + i)) loopback"
    else
      echo "$(ns_of "$i") - missing"
      ok=1
    fi
  done
  return $ok
}

host_number() {
  [[ ${1:-} =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] || die "host number expected, got '${1:-}'"
  [ -f "$STATE/count" ] && [ "$1" -le "$(cat "$STATE/count")" ] ||
    die "host $1 is not up (run: hosts.sh up N)"
}

cmd_addr() {
  host_number "${1:-}"
  if [ "$(mode)" = netns ]; then echo "$SUBNET.$1"; else echo "127.0.0.$((10 + $1))"; fi
}

cmd_exec() {
  host_number "${1:-}"
  local i=$1 ns
  shift
  [ $# -gt 0 ] || die "exec I CMD...: no command"
  ns=$(ns_of "$i")
  if [ "$(mode)" = netns ]; then
    # ip netns exec gives the network (and /etc/netns files), unshare the host's name.
    exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$ns" "$@"
  fi
  exec "$@"
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  down) cmd_down ;;
  status) shift; cmd_status "$@" ;;
  addr) shift; cmd_addr "$@" ;;
  exec) shift; cmd_exec "$@" ;;
  hosts-file) echo "$STATE/hosts" ;;
  *) die "usage: hosts.sh up [N] | down | status [N] | addr I | exec I CMD... | hosts-file" ;;
esac
