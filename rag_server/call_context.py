"""What every layer may know of the call being served, and the two kinds of parts the call plumbing takes.

Set by the call plumbing (api/calls.py: the correlation id), the auth gate (security/auth.py: the admitted
caller) and the tracing of a server (observability/tracing.py: where the current span is read); read by the
servicers, the security gates, the logs, the metrics and the trace rows, none of which needs to import the
others for it. Each value lives in a contextvar, so the worker pool and the background tasks a call starts
(they copy the context) see the call's values.

`Gate` and `Observer` are what the plumbing runs around every call: security builds the gates,
observability the observers, the server hands both to the plumbing.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import grpc

# --- the correlation id (x-correlation-id, validated or made by the plumbing) ---------------------------

correlation_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("correlation_id", default="")


def current_correlation_id() -> str:
    """The current call's correlation id, "" outside a call."""
    return correlation_id_var.get()


# --- the admitted caller (the auth gate) ----------------------------------------------------------------


@dataclass(frozen=True)
class Caller:
    """Who is calling: the name and scopes of the API key that was admitted."""

    name: str
    scopes: tuple[str, ...]


# The caller of the current call: None when auth is off (no key file) or before the auth gate ran.
current_caller: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("current_caller", default=None)


def caller_name() -> str:
    """The admitted key's name, or "" (auth off, or outside a call): for logs, audit and per-key limits."""
    caller = current_caller.get()
    return caller.name if caller is not None else ""


# --- the OpenTelemetry trace of the call (RAG_OTEL) -----------------------------------------------------

# opentelemetry's get_current_span, once per server with tracing on (empty: no server traces)
_span_sources: list[Callable[[], Any]] = []


def add_span_source(get_current_span: Callable[[], Any]) -> None:
    """A server's tracing is on: the current span is read with `get_current_span`."""
    _span_sources.append(get_current_span)


def remove_span_source(get_current_span: Callable[[], Any]) -> None:
    """That server's tracing is closed (a source added twice is removed once)."""
    if get_current_span in _span_sources:
        _span_sources.remove(get_current_span)


def current_otel_trace_id() -> str:
    """The 32-hex-digit trace id of the current span, "" when tracing is off or no span is current (free
    while no server traces)."""
    if not _span_sources:
        return ""
    try:
        context = _span_sources[-1]().get_span_context()
    except Exception:  # pragma: no cover - fail-open
        return ""
    return format(context.trace_id, "032x") if context.is_valid else ""


# --- what the call plumbing runs around every call ------------------------------------------------------


class Gate(Protocol):
    """Decides whether a call may run (authentication, scopes, rate limits, stream caps)."""

    def admit(self, method: str, context: grpc.aio.ServicerContext[Any, Any]) -> Callable[[], None] | None:
        """Raise RequestError (request_errors.py) to refuse the call; return what to run when the call ends
        (or None)."""


class Observer(Protocol):
    """Sees every call end (metrics, span attributes)."""

    def finished(self, method: str, code: grpc.StatusCode, seconds: float) -> None: ...
