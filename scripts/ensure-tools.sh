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
