#!/usr/bin/env bash
# Correctness gate for the bundled target: vet, the target's tests, and drift checks that the
# dependency manifests and the frozen schema are unchanged since the session began.
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
cd "$root/targets/pebble"

# The loop exports the session's base commit; run by hand, compare with HEAD. Confined, a run
# does not see the repository's git directory (nothing may tell it which arm it is in): there
# the config's scope keeps every patch off these files.
base=${AUTORESEARCH_BASE_COMMIT:-HEAD}
frozen=(go.mod go.sum proto grantspb)
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1 &&
    ! git -C "$root" diff --quiet "$base" -- "${frozen[@]/#/targets/pebble/}"; then
  echo "checks: frozen files changed since $base:" >&2
  git -C "$root" diff --stat "$base" -- "${frozen[@]/#/targets/pebble/}" >&2
  exit 1
fi

go vet ./...
if [ -n "${AUTORESEARCH_TEST_REPORT:-}" ]; then  # the loop counts the tests from this report
  go test -count=1 -json ./... | tee "$AUTORESEARCH_TEST_REPORT"
else
  go test -count=1 ./...
fi
echo "checks: ok"
