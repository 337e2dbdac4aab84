#!/usr/bin/env bash
# Runs the Týr cluster's failure detector from this checkout (see blobfs-tyr/README.md,
# "Failover and catch-up"): the one writer of the ring file the nodes follow.
#   scripts/tyr-monitor.sh --cluster-file ring.properties [--down-after 3s] [--interval 0.5s] \
#       [--secret-file S] [--tls-trust PEM]     (PEM: the nodes' tls-peer-trust, with TLS;
#       --tls-peer-trust is the same option; an unknown option is refused)
#   scripts/tyr-monitor.sh --cluster-file ring.properties --mark host:port down|recovering|up
#   scripts/tyr-monitor.sh --cluster-file ring.properties --join host:port [--wait 10m]
# The first prints "TYR-MONITOR RUNNING <file>" and runs until killed; the second makes one
# change by hand under the next epoch (refused while a monitor holds the file's lock, and,
# exit status 2, a DOWN mark that would leave some range with no UP owner). The third asks
# the running monitor to add a started node (README, "Adding a node") and waits until it is
# UP: exit 0, 1 if not within --wait, 2 if no monitor runs on the file or R = 1.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-tools.sh >&2
cp_file=blobfs-tyr/target/server-classpath.txt
# As tyr-server.sh: a reactor build, nothing installed into ~/.m2.
mvn -B -ntp -q -pl blobfs-tyr -am package -DskipTests dependency:build-classpath \
  -Dmdep.includeScope=test -Dmdep.outputFile="$PWD/$cp_file" >&2
exec java -cp "blobfs-tyr/target/classes:$(cat "$cp_file")" \
  io.blobfs.tyr.server.ClusterMonitor "$@"
