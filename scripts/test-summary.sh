#!/usr/bin/env bash
# Prints the test counts of the last build per tier, from the JUnit XML reports that
# surefire (unit tier) and failsafe (integration tier) wrote under each module's target/:
#   unit (surefire): N passed, N failed, N skipped
#   integration (failsafe): ...
#   integration against the Ceph container (failsafe-reports-docker): ...
#   contract suites under Hadoop 3.4.2 (target/hadoop-3.4.2): ...
# and last a plain total line. A report directory that holds no report counts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

# Sums tests/failures/errors/skipped of every <testsuite> in the given report files.
count() {
  awk '
    /<testsuite[ >]/ {
      line = $0
      while (line !~ />/ && (getline more) > 0) line = line " " more
      for (k in v) delete v[k]
      n = split(line, parts, /[ \t]+/)
      for (i = 1; i <= n; i++) {
        if (match(parts[i], /^(tests|failures|errors|skipped)="[0-9]+"/)) {
          split(parts[i], kv, "=")
          gsub(/"/, "", kv[2])
          v[kv[1]] = kv[2] + 0
        }
      }
      t += v["tests"]; f += v["failures"] + v["errors"]; s += v["skipped"]
    }
    END { printf "%d passed, %d failed, %d skipped\n", t - f - s, f, s }
  ' "$@" /dev/null
}

total_p=0 total_f=0 total_s=0
line() { # label, report files...
  local label=$1
  shift
  local out
  out=$(count "$@")
  echo "$label: $out"
  read -r p _ f _ s _ <<<"$out"
  total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + s))
}

shopt -s nullglob
line "unit (surefire)" ./*/target/surefire-reports/TEST-*.xml ./benchmarks/*/target/surefire-reports/TEST-*.xml
line "integration (failsafe)" ./*/target/failsafe-reports/TEST-*.xml ./benchmarks/*/target/failsafe-reports/TEST-*.xml
docker=(./*/target/failsafe-reports-docker/TEST-*.xml)
if [ ${#docker[@]} -gt 0 ]; then
  line "integration against the Ceph container (Testcontainers)" "${docker[@]}"
fi
h342=(./*/target/hadoop-3.4.2/surefire-reports/TEST-*.xml ./*/target/hadoop-3.4.2/failsafe-reports*/TEST-*.xml)
if [ ${#h342[@]} -gt 0 ]; then
  line "contract suites under Hadoop 3.4.2" "${h342[@]}"
fi
echo "all tiers: $total_p passed, $total_f failed, $total_s skipped"
