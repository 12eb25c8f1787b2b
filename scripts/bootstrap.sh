#!/usr/bin/env bash
# Set up the local environment idempotently (sourced or run by run.sh, test.sh and .ci/run):
#   .venv with the exact versions of requirements.lock (scripts/lock.py), then the package with its `test`
#   extra and the Python client from the checkout (skipped while pyproject.toml,
#   clients/python/pyproject.toml and the lock are unchanged since the last install); `pip check` proves the
#   set is consistent and scripts/check_extra.py that the test extra (pytest, fpdf2 for the test-only
#   renderers in formulary_fixtures/, ...) is all there
#   tools/node/node_modules via `npm ci` (buf, @grpc/grpc-js, @grpc/proto-loader), when npm is available.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
STAMP="$VENV/.formulary-rag-install"

say() { printf '[bootstrap] %s\n' "$*" >&2; }

find_python() {
  for candidate in python3.11 python3.12 python3.13 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  say "Python >= 3.11 is required (tried python3.11, python3.12, python3.13, python3)"
  return 1
}

hash_of() { "$VENV/bin/python" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$1"; }

if [ ! -x "$VENV/bin/python" ]; then
  PY="$(find_python)"
  say "creating .venv with $PY"
  "$PY" -m venv "$VENV"
fi

want="$(cat "$ROOT/pyproject.toml" "$ROOT/clients/python/pyproject.toml" "$ROOT/requirements.lock" |
  "$VENV/bin/python" -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')"
have="$(cat "$STAMP" 2>/dev/null || true)"
if [ "$want" != "$have" ] || ! "$VENV/bin/python" -c 'import rag_server, formulary_rag_client' >/dev/null 2>&1; then
  say "installing the locked dependencies, the package and the Python client into .venv"
  log="$VENV/.formulary-rag-install.log"
  pip_install() { "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "$@"; }
  if ! { pip_install --no-deps -r "$ROOT/requirements.lock" &&
    pip_install --no-deps -e "$ROOT[test]" -e "$ROOT/clients/python" &&
    "$VENV/bin/python" -m pip check --disable-pip-version-check &&
    "$VENV/bin/python" "$ROOT/scripts/check_extra.py" test; } >"$log" 2>&1; then
    cat "$log" >&2
    say "pip install failed (log: .venv/.formulary-rag-install.log)"
    exit 1
  fi
  echo "$want" >"$STAMP"
fi

NODE_DIR="$ROOT/tools/node"
if command -v npm >/dev/null 2>&1; then
  node_want="$(hash_of "$NODE_DIR/package-lock.json")"
  node_have="$(cat "$NODE_DIR/node_modules/.formulary-rag-install" 2>/dev/null || true)"
  if [ "$node_want" != "$node_have" ]; then
    say "installing Node tools (npm ci in tools/node)"
    (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
      { say "npm ci failed in tools/node"; exit 1; }
    echo "$node_want" >"$NODE_DIR/node_modules/.formulary-rag-install"
  fi
else
  say "npm not found: buf lint and the Node client tests will be unavailable"
fi
