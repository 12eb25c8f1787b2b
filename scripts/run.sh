#!/usr/bin/env bash
# Start the service on embedded defaults: 127.0.0.1:50051, embedded Qdrant and offline embeddings under
# .rag-data/, the fictional sample formulary ingested on first start. Extra arguments go to `rag-server serve`
# (e.g. --port 6000); settings come from RAG_* environment variables (see README).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/bootstrap.sh"
cd "$ROOT"
echo "[run] starting rag-server (first start loads the fictional sample); then try:" \
  ".venv/bin/grpcurl -plaintext 127.0.0.1:${RAG_PORT:-50051} list" >&2
if [ -s "${RAG_DATA_DIR:-.rag-data}/keys.json" ]; then
  echo "[run] API keys exist in ${RAG_DATA_DIR:-.rag-data}/keys.json: auth is on; add" \
    "-H \"authorization: Bearer \$KEY\" to every call (health and list stay open; new key:" \
    ".venv/bin/rag-server keys add NAME --scopes query)" >&2
fi
exec "$ROOT/.venv/bin/rag-server" serve "$@"
