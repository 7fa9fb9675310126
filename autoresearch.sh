#!/usr/bin/env bash
# Bench for the bundled target (targets/pebble): builds the harness once, runs it, and prints
# METRIC lines for autoresearch and `go test -bench` style rows for people.
#
#   ./autoresearch.sh          build, then run
#   ./autoresearch.sh --build  build only (the loop builds each arm once per experiment)
#   ./autoresearch.sh --run    run the harness built last
#   ./autoresearch.sh --sentinels  run only the sentinel (SQLite) of the harness built last:
#                              the loop's bench.sentinel_command, a quarter of a --run
#   ./autoresearch.sh --digest what each engine stores of 20k grants and 2k rewrites, as
#                              digests: the loop's [equivalence] command (no timing)
#   ./autoresearch.sh --profile a CPU profile of a run at 100k (Go's pprof), written to
#                              $AUTORESEARCH_PROFILE_OUT: the loop's [profile] command
#   ./autoresearch.sh --holdout the hidden holdout workload: the settings in
#                              $AUTORESEARCH_HOLDOUT/holdout.env (made by loop.py, which no
#                              candidate or agent can read), metrics named holdout_*
#
# AUTORESEARCH_PROFILE picks the scales:
#   quick    pebble 10k and 100k once, sqlite 10k median of 5 (the sentinel, kept quiet) (~2 s)
#   default  pebble 1k, 10k, 100k, sqlite 1k and 10k                (~8 s)
#   full     default plus pebble 1m                                 (~45 s)
# GRANTBENCH_SCALES, GRANTBENCH_SQLITE_SCALES, GRANTBENCH_MAX_ITERS and
# GRANTBENCH_SQLITE_MAX_ITERS override a profile.
set -euo pipefail
cd "$(dirname "$0")/targets/pebble"

profile=${AUTORESEARCH_PROFILE:-default}
case "$profile" in
  quick)   scales=10k,100k;        sqlite=10k;    iters=1;  sqlite_iters=5 ;;
  default) scales=1k,10k,100k;     sqlite=1k,10k; iters=15; sqlite_iters=15 ;;
  full)    scales=1k,10k,100k,1m;  sqlite=1k,10k; iters=15; sqlite_iters=15 ;;
  *) echo "autoresearch.sh: unknown AUTORESEARCH_PROFILE '$profile' (quick, default, full)" >&2
     exit 2 ;;
esac
export GRANTBENCH_SCALES=${GRANTBENCH_SCALES:-$scales}
export GRANTBENCH_SQLITE_SCALES=${GRANTBENCH_SQLITE_SCALES:-$sqlite}
export GRANTBENCH_MAX_ITERS=${GRANTBENCH_MAX_ITERS:-$iters}
export GRANTBENCH_SQLITE_MAX_ITERS=${GRANTBENCH_SQLITE_MAX_ITERS:-$sqlite_iters}

mode=${1:-all}
case "$mode" in
  all|--build|--run) ;;
  --sentinels) export GRANTBENCH_SCALES= ;;  # no Pebble scale: SQLite alone
  --digest) export GRANTBENCH_DIGEST=20k ;;
  --profile)
    export GRANTBENCH_CPUPROFILE=${AUTORESEARCH_PROFILE_OUT:?autoresearch.sh --profile: AUTORESEARCH_PROFILE_OUT is not set}
    export GRANTBENCH_SCALES=100k GRANTBENCH_SQLITE_SCALES= GRANTBENCH_MAX_ITERS=3 ;;
  --holdout)
    held=${AUTORESEARCH_HOLDOUT:?autoresearch.sh --holdout: AUTORESEARCH_HOLDOUT is not set}
    unset AUTORESEARCH_HOLDOUT  # the harness's to read, not the engine's
    if [ ! -r "$held/holdout.env" ]; then
      echo "autoresearch.sh: no $held/holdout.env (python loop.py makes it)" >&2
      exit 1
    fi
    # shellcheck disable=SC1091
    . "$held/holdout.env"
    export GRANTBENCH_SCALES GRANTBENCH_SEED GRANTBENCH_SKEW GRANTBENCH_LABEL=holdout
    export GRANTBENCH_SQLITE_SCALES= GRANTBENCH_MAX_ITERS=1 ;;
  *) echo "autoresearch.sh: unknown argument '$mode' (--build, --run, --sentinels, --digest," \
       "--profile, --holdout, or none)" >&2
     exit 2 ;;
esac

if [ "$mode" = all ] || [ "$mode" = --build ]; then
  if ! go build -o bin/grantbench ./cmd/grantbench; then
    echo "autoresearch.sh: build failed" >&2
    exit 1
  fi
fi
if [ "$mode" != --build ]; then
  if [ ! -x bin/grantbench ]; then
    echo "autoresearch.sh: bin/grantbench is not built; run ./autoresearch.sh --build first" >&2
    exit 1
  fi
  if ! ./bin/grantbench; then
    echo "autoresearch.sh: bench failed" >&2
    exit 1
  fi
fi
