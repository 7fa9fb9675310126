#!/usr/bin/env bash
# Bench for autoresearch: build, run the workload, print one METRIC line per number.
# Exit non-zero when anything fails; the loop records the run as a crash.
set -euo pipefail
cd "$(dirname "$0")"

start=$(date +%s%N)
# Replace this line with the workload to measure, e.g. `go test -run '^$' -bench . ./...`
sleep 0.1
end=$(date +%s%N)

echo "METRIC {{ metric }}=$(( (end - start) / 1000000 ))"
