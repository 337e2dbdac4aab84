#!/usr/bin/env bash
# Runs a standalone Týr server from this checkout: builds blobfs-tyr if needed, then
# execs TyrServerMain with the given flags, e.g.
#   scripts/tyr-server.sh --data-dir /tmp/tyr --port 7400 --sync always
# It prints "TYR-SERVER LISTENING host:port" when ready; SIGTERM stops it cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-tools.sh >&2
cp_file=blobfs-tyr/target/server-classpath.txt
# A reactor build (nothing installed into ~/.m2): the classpath names this checkout's own
# module jars. Every module of the reactor writes the file; blobfs-tyr, built last, wins.
# The test scope adds a logging backend (slf4j-simple) to the server's own dependencies.
mvn -B -ntp -q -pl blobfs-tyr -am package -DskipTests dependency:build-classpath \
  -Dmdep.includeScope=test -Dmdep.outputFile="$PWD/$cp_file" >&2
exec java -cp "blobfs-tyr/target/classes:$(cat "$cp_file")" \
  io.blobfs.tyr.server.TyrServerMain "$@"
