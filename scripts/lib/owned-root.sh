# Sourced by the scripts that keep a cluster's data, keys or configuration under one root
# directory (scripts/ceph/cluster.sh, scripts/hdfs/hdfs.sh).
#
# owned_root DIR VAR: creates DIR mode 0700 if it is missing and prints its real path. On a
# shared /tmp another user could have made DIR (or a symlink named like it) first and would
# then read or swap what is kept there, so DIR is refused (through the caller's `die`) when
# it, or the symlink, is not the caller's, or when it is group- or world-writable. VAR
# names the variable that chooses another root, for the message.
owned_root() {
  local dir=$1 var=$2 real
  if [ -L "$dir" ] && [ "$(stat -c %u "$dir")" != "$(id -u)" ]; then
    die "$dir is a symlink owned by uid $(stat -c %u "$dir"), not by you (uid $(id -u)): refusing to use it; remove it or set $var"
  fi
  [ -e "$dir" ] || mkdir -p -m 700 "$dir" || die "cannot create $dir"
  real=$(cd -P "$dir" && pwd) || die "cannot enter $dir"
  [ "$(stat -c %u "$real")" = "$(id -u)" ] ||
    die "$real is owned by uid $(stat -c %u "$real"), not by you (uid $(id -u)): refusing to use it; remove it or set $var"
  (( 8#$(stat -c %a "$real") & 8#022 )) &&
    die "$real is group- or world-writable (mode $(stat -c %a "$real")): refusing to use it; chmod go-w it or set $var"
  echo "$real"
}
