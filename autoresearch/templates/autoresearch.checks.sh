#!/usr/bin/env bash
# Correctness gate for autoresearch: exit 0 only when the patched code is still right.
set -euo pipefail
cd "$(dirname "$0")"

{% if ecosystem %}{{ ecosystem.checks }}
{% else %}# Replace with the project's tests, e.g. `go vet ./... && go test ./...` or `pytest -q`.
true
{% endif %}
