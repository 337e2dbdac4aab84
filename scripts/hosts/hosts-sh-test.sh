#!/usr/bin/env bash
# Tests of hosts.sh on a prefix, bridge, /24 and state of their own (bfst-h*, bfst-br0,
# 10.77.1.0/24), so they never meet the hosts other tests use; removes what they made.
# Namespace checks need root; without it only the loopback fallback is checked, and the
# script says so (exit 0 only when every check it ran passed).
#
# Usage: scripts/hosts/hosts-sh-test.sh
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d /tmp/blobfs-hosts-sh-test.XXXXXX)
export BLOBFS_HOSTS_PREFIX=bfst-h BLOBFS_HOSTS_BRIDGE=bfst-br0 BLOBFS_HOSTS_SUBNET=10.77.1
export BLOBFS_HOSTS_STATE=$WORK/state
unset CI BLOBFS_HOSTS_LOOPBACK
H="$HERE/hosts.sh"
FAILED=0
fail() { echo "FAIL: $*" >&2; FAILED=1; }
pass() { echo "ok: $*" >&2; }
check() { # check WHAT COMMAND...: passes when the command succeeds
  local what=$1
  shift
  if "$@" >/dev/null 2>&1; then pass "$what"; else fail "$what"; fi
}
LISTENER=

cleanup() {
  [ -n "$LISTENER" ] && kill "$LISTENER" 2>/dev/null || true
  timeout 60 bash "$H" down >/dev/null 2>&1 || true
  ip link del bfst-dummy 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# --- loopback fallback: asked for, and refused under CI
out=$(BLOBFS_HOSTS_LOOPBACK=1 timeout 60 bash "$H" up 3 2>&1 >/dev/null)
grep -q "falling back to loopback" <<<"$out" && pass "fallback says so: $out" ||
  fail "fallback gave no message: $out"
[ "$(grep -v '^#' "$WORK/state/hosts" | tr '\n' ' ')" = \
  "127.0.0.1 localhost 127.0.0.11 bfst-h1 127.0.0.12 bfst-h2 127.0.0.13 bfst-h3 " ] &&
  pass "fallback hosts file" || fail "fallback hosts file: $(cat "$WORK/state/hosts")"
[ "$(bash "$H" addr 2)" = 127.0.0.12 ] && pass "fallback addr 2" || fail "fallback addr 2"
timeout 60 bash "$H" down >/dev/null 2>&1
rc=0
out=$(CI=true BLOBFS_HOSTS_LOOPBACK=1 timeout 60 bash "$H" up 3 2>&1 >/dev/null) || rc=$?
[ "$rc" -ne 0 ] && grep -q "CI=true forbids" <<<"$out" && pass "CI=true refuses the fallback" ||
  fail "CI=true with no namespaces: exit $rc, $out"
[ ! -e "$WORK/state/hosts" ] && pass "CI refusal wrote no hosts file" ||
  fail "CI refusal wrote $WORK/state/hosts"

if [ "$(id -u)" != 0 ]; then
  echo "skip: the namespace checks need root" >&2
  exit "$FAILED"
fi

# --- a subnet another interface uses is refused, and nothing is made
ip link add bfst-dummy type veth peer name bfst-dummyp
ip addr add 10.77.1.9/24 dev bfst-dummy
rc=0
out=$(timeout 60 bash "$H" up 2 2>&1 >/dev/null) || rc=$?
[ "$rc" -ne 0 ] && grep -q "already used by interface bfst-dummy" <<<"$out" &&
  pass "a used subnet is refused" || fail "a used subnet: exit $rc, $out"
ip netns list | grep -q '^bfst-h' && fail "namespaces made despite the refusal" ||
  pass "nothing made on refusal"
ip link del bfst-dummy

# --- three hosts
timeout 60 bash "$H" up 3 >/dev/null
check "status: 3 up" bash "$H" status 3
for i in 1 2 3; do
  check "namespace bfst-h$i" ip netns exec "bfst-h$i" true
  [ "$(ip -n "bfst-h$i" -4 -o addr show dev eth0 | awk '{print $4}')" = "10.77.1.$i/24" ] &&
    pass "bfst-h$i at 10.77.1.$i" || fail "bfst-h$i address"
  [ "$(bash "$H" exec "$i" hostname)" = "bfst-h$i" ] && pass "hostname on host $i" ||
    fail "hostname on host $i: $(bash "$H" exec "$i" hostname)"
  check "loopback up on host $i" bash -c "ip -n bfst-h$i link show lo | grep -q 'UP'"
done
[ "$(hostname)" != bfst-h1 ] && pass "this host's name is untouched" || fail "hostname changed here"
check "host 3 resolves bfst-h2" bash "$H" exec 3 getent hosts bfst-h2
[ "$(bash "$H" exec 3 getent hosts bfst-h2 | awk '{print $1}')" = 10.77.1.2 ] &&
  pass "bfst-h2 is 10.77.1.2 on host 3" || fail "bfst-h2 resolves wrong on host 3"
# No route out: only the hosts' /24 exists inside a host (nothing is sent by this check).
ip -n bfst-h1 route get 192.0.2.1 >/dev/null 2>&1 && fail "host 1 has a route out" ||
  pass "host 1 has no route off the /24"
[ "$(sysctl -n net.ipv4.conf.bfst-br0.forwarding)" = 0 ] && pass "no forwarding on the bridge" ||
  fail "bridge forwards"

# host 1 and this namespace talk to a listener on host 2
bash "$H" exec 2 python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.77.1.2", 7300)); s.listen(4)
while True:
    c, a = s.accept(); c.sendall(("hello from %s to %s\n" % (socket.gethostname(), a[0])).encode()); c.close()
' &
LISTENER=$!
for _ in $(seq 1 50); do
  timeout 2 bash -c 'exec 3<>/dev/tcp/10.77.1.2/7300' 2>/dev/null && break
  sleep 0.1
done
got=$(bash "$H" exec 1 timeout 5 bash -c 'exec 3<>/dev/tcp/10.77.1.2/7300; head -1 <&3')
[ "$got" = "hello from bfst-h2 to 10.77.1.1" ] && pass "host 1 -> host 2: $got" ||
  fail "host 1 -> host 2: '$got'"
got=$(timeout 5 bash -c 'exec 3<>/dev/tcp/10.77.1.2/7300; head -1 <&3')
[ "$got" = "hello from bfst-h2 to 10.77.1.254" ] && pass "here -> host 2: $got" ||
  fail "here -> host 2: '$got'"
kill "$LISTENER" 2>/dev/null || true
LISTENER=

# --- idempotent: a second up changes nothing
before=$(ip -o link show | grep -o 'bfst-h[0-9]v@[^:]*' | sort | tr '\n' ' ')
timeout 60 bash "$H" up 3 >/dev/null 2>&1
after=$(ip -o link show | grep -o 'bfst-h[0-9]v@[^:]*' | sort | tr '\n' ' ')
[ "$before" = "$after" ] && [ -n "$before" ] && pass "second up keeps the same links: $after" ||
  fail "second up changed links: $before -> $after"
check "status still 3 up" bash "$H" status 3

# --- fewer hosts: the extra one goes
timeout 60 bash "$H" up 2 >/dev/null 2>&1
[ "$(ip netns list | awk '{print $1}' | grep -c '^bfst-h')" = 2 ] && pass "up 2 leaves 2" ||
  fail "up 2 left: $(ip netns list | grep bfst-h | tr '\n' ' ')"
[ ! -e /etc/netns/bfst-h3 ] && pass "host 3's files removed" || fail "/etc/netns/bfst-h3 left"

# --- down removes everything
timeout 60 bash "$H" down >/dev/null 2>&1
left="$(ip netns list | grep '^bfst-h' || true)$(ip -o link show | grep -o 'bfst-[a-z0-9]*' || true)"
left+="$(ls -d /etc/netns/bfst-h* 2>/dev/null || true)$(ls -d "$WORK/state" 2>/dev/null || true)"
[ -z "$left" ] && pass "down removed namespaces, links, files and state" || fail "down left: $left"
rc=0
bash "$H" status 2 >/dev/null 2>&1 || rc=$?
[ "$rc" -ne 0 ] && pass "status fails when down" || fail "status passes when down"

exit "$FAILED"
