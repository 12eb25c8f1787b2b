"""The API-key gate: `authorization: Bearer <key>` -> the caller, checked against the method's scope.

Auth is on while `<data-dir>/keys.json` holds a key (keys.py); with no key file every caller is admitted,
exactly as before keys existed. A missing or unknown key is UNAUTHENTICATED, a known key without the scope
PERMISSION_DENIED; both carry a google.rpc.ErrorInfo (domain "formulary-rag") whose metadata names the
method and the scope it needs. The admitted caller is in `call_context.current_caller` for later gates, the
audit and the logs.
"""

from __future__ import annotations

import logging
from typing import Any

import grpc

from rag_server.call_context import Caller, caller_name, current_caller
from rag_server.persistence.conversations import ANONYMOUS_OWNER
from rag_server.request_errors import permission_denied, unauthenticated
from rag_server.security.keys import KeyStore

log = logging.getLogger("rag_server.security")

AUTH_HEADER = "authorization"
BEARER = "bearer "

# The scope each method needs; `admin` implies them all. A method missing here needs `admin`.
METHOD_SCOPES: dict[str, str] = {
    "/rag.v1.UnderstandingService/Understand": "query",
    "/rag.v1.RetrievalService/Retrieve": "query",
    "/rag.v1.RetrievalService/LookupIndication": "query",
    "/rag.v1.RetrievalService/AssessPatient": "query",
    "/rag.v1.RetrievalService/ListDrugs": "query",
    "/rag.v1.AnswerService/Ask": "query",
    "/rag.v1.IngestionService/GetCorpus": "query",
    "/rag.v1.IngestionService/Ingest": "ingest",
    "/rag.v1.IngestionService/UploadDocument": "ingest",
}
DEFAULT_SCOPE = "admin"

API_KEY_MISSING = "API_KEY_MISSING"
API_KEY_INVALID = "API_KEY_INVALID"
SCOPE_MISSING = "SCOPE_MISSING"


def scope_for(method: str) -> str:
    return METHOD_SCOPES.get(method, DEFAULT_SCOPE)


def bearer_token(metadata: Any) -> str | None:
    """The key of `authorization: Bearer <key>` ("" when the header is there but holds no bearer key);
    None when there is no authorization header."""
    for key, value in metadata or ():
        if key.lower() == AUTH_HEADER:
            text = value if isinstance(value, str) else ""
            if text[: len(BEARER)].lower() != BEARER:
                return ""
            return text[len(BEARER) :].strip()
    return None


class AuthGate:
    """Admits a call when auth is off, or when its key is live and has the method's scope."""

    def __init__(self, store: KeyStore) -> None:
        self.store = store

    def admit(self, method: str, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        keys = self.store.current()
        if not keys.enabled:
            current_caller.set(None)
            return None
        scope = scope_for(method)
        info = {"method": method, "scope": scope}
        token = bearer_token(context.invocation_metadata())
        if token is None:
            raise unauthenticated(
                f"{method} needs an API key with scope {scope!r}: send 'authorization: Bearer <key>'",
                API_KEY_MISSING, info,
            )
        record = keys.verify(token)
        if record is None:
            raise unauthenticated(
                "the API key is not valid (unknown, revoked or malformed); send "
                "'authorization: Bearer <key>'", API_KEY_INVALID, info,
            )
        if not record.allows(scope):
            raise permission_denied(
                f"API key {record.name!r} lacks scope {scope!r} needed by {method}",
                SCOPE_MISSING, {**info, "key": record.name},
            )
        current_caller.set(Caller(record.name, record.scopes))
        return None


def conversation_owner() -> str:
    """Who owns the conversations this call starts: the admitted key's name, or ANONYMOUS_OWNER while auth
    is off. A key that happens to be named like ANONYMOUS_OWNER gets a name no key can have (':' is not
    allowed in key names), so no key ever continues an anonymous conversation."""
    name = caller_name()
    if not name:
        return ANONYMOUS_OWNER
    return f"key:{name}" if name == ANONYMOUS_OWNER else name
