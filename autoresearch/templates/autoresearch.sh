#!/usr/bin/env bash
{% if ecosystem %}# Bench for autoresearch: {{ ecosystem.says }}. The loop reads {{ reads }}.
# Exit non-zero when anything fails; the loop records the run as a crash.
set -euo pipefail
cd "$(dirname "$0")"
{% if ecosystem.narrowed %}
# {{ ecosystem.narrowed }} alone, what the primary metric comes from (init --metric): a run of
# seconds, not the whole suite's minutes. Widen the filter to measure more, at the price of each
# run; `autoresearch check` says how long a run and a decision take.{% endif %}

{{ ecosystem.bench }}
{% else %}# Bench for autoresearch: build, run the workload, print one METRIC line per number.
# Exit non-zero when anything fails; the loop records the run as a crash.
set -euo pipefail
cd "$(dirname "$0")"

# METRIC lines go to the loop's channel (AUTORESEARCH_METRIC_FD; stdout when run by hand),
# which the workload never holds: whatever it prints is only its log, never a measurement.
exec {metrics}>&"${AUTORESEARCH_METRIC_FD:-1}"
if [ -n "${AUTORESEARCH_METRIC_FD:-}" ]; then exec {AUTORESEARCH_METRIC_FD}>&-; fi

start=$(date +%s%N)
# Replace `sleep 0.1` with the workload to measure; the subshell closes the channel for it.
( exec {metrics}>&-; sleep 0.1 )
end=$(date +%s%N)

{% if ns_per_unit %}# The elapsed time in {{ unit }}, the metric's unit in autoresearch.toml.
echo "METRIC {{ metric }}=$(awk -v ns="$(( end - start ))" 'BEGIN { printf "%.3f", ns / {{ ns_per_unit }} }')" >&"$metrics"
{% else %}# {{ unit }} is not a time this script can take: print the workload's own figure in {{ unit }}.
echo "autoresearch.sh: print 'METRIC {{ metric }}=<value in {{ unit }}>' here" >&2
exit 1
{% endif %}{% endif %}