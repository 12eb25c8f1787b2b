"""OpenTelemetry server spans (the `otel` extra), switched on by RAG_OTEL=true.

Each server has its own TracerProvider (the global one is left alone, so several servers in one process
keep their spans apart) and one grpc.aio interceptor from opentelemetry-instrumentation-grpc: a SERVER span
per call, its parent taken from the caller's `traceparent` metadata when there is one. The span is current
while the handler runs, so `call_context.current_otel_trace_id()` gives the trace id to the trace rows
(persistence/traces.py) and to AskFinal.otel_trace_id. The `TracingObserver` adds the correlation id, the
status code and the decision to the span when the call ends.

Exporters (RAG_OTEL_EXPORTER): none (spans are made, ids recorded and propagated, nothing exported), console
(one JSON span per line on stdout), memory (kept in process, for tests: `Tracing.finished_spans()`), otlp
(OTLP/HTTP to RAG_OTEL_ENDPOINT; the only one that uses the network, and never the default).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import grpc

from rag_server.call_context import add_span_source, current_correlation_id, remove_span_source
from rag_server.config import Settings
from rag_server.extras import Extra, MissingExtra, require
from rag_server.observability.hooks import decision_labels, decision_var

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

log = logging.getLogger("rag_server.observability")

# Health Watch writes with context.write() (no async generator): the instrumentation's stream wrapper
# cannot wrap it, and a watch is a connection-long stream, not a request.
UNTRACED_METHODS = frozenset({"/grpc.health.v1.Health/Watch"})

def _traced(details: grpc.HandlerCallDetails) -> bool:
    return details.method not in UNTRACED_METHODS


class Tracing:
    """The tracer provider, exporter and interceptor of one server."""

    def __init__(self, settings: Settings) -> None:
        require(Extra.OTEL, "RAG_OTEL=true")
        try:
            from opentelemetry import trace
            from opentelemetry.instrumentation.grpc import aio_server_interceptor
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        except ImportError as exc:
            raise MissingExtra(
                f"RAG_OTEL=true needs the 'otel' extra ({exc}); "
                "install it with: pip install 'formulary-rag[otel]'"
            ) from None
        self.provider: TracerProvider = TracerProvider(
            resource=Resource.create({"service.name": settings.otel_service_name})
        )
        self.memory: Any = None
        if settings.otel_exporter == "memory":
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

            self.memory = InMemorySpanExporter()
            self.provider.add_span_processor(SimpleSpanProcessor(self.memory))
        elif settings.otel_exporter == "console":
            from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

            self.provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(
                formatter=lambda span: span.to_json(indent=None) + "\n"
            )))
        elif settings.otel_exporter == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=settings.otel_endpoint)))
        self.interceptor: grpc.aio.ServerInterceptor = aio_server_interceptor(  # type: ignore[no-untyped-call]
            tracer_provider=self.provider, filter_=_traced
        )
        self._current_span = trace.get_current_span
        self.observer = TracingObserver(self._current_span)
        add_span_source(self._current_span)  # the trace id of trace rows and AskFinal (call_context)
        self._open = True

    def finished_spans(self) -> list[ReadableSpan]:
        """The spans kept by the memory exporter (RAG_OTEL_EXPORTER=memory), oldest first."""
        return list(self.memory.get_finished_spans()) if self.memory is not None else []

    def close(self) -> None:
        """Flush and stop the exporter (bounded by the SDK's own timeouts)."""
        if not self._open:
            return
        self._open = False
        remove_span_source(self._current_span)
        try:
            self.provider.shutdown()
        except Exception:
            log.warning("tracer provider did not shut down cleanly", exc_info=True)


class TracingObserver:
    """Adds what only the plumbing knows to the call's server span when the call ends (it runs inside it)."""

    def __init__(self, current_span: Callable[[], Any]) -> None:
        from opentelemetry.trace import Status, StatusCode

        self._current_span = current_span
        self._correlation_id = current_correlation_id
        self._error: Callable[[grpc.StatusCode], Any] = lambda code: Status(StatusCode.ERROR, code.name)

    def finished(self, method: str, code: grpc.StatusCode, seconds: float) -> None:
        try:
            span = self._current_span()
            if not span.is_recording():
                return
            span.set_attribute("rag.correlation_id", self._correlation_id())
            span.set_attribute("rpc.grpc.status_code", code.value[0])
            if code != grpc.StatusCode.OK:
                span.set_status(self._error(code))
            decision = decision_var.get()
            if decision is not None:
                kind, reason = decision_labels(*decision)
                span.set_attribute("rag.decision.kind", kind)
                span.set_attribute("rag.decision.reason", reason)
        except Exception:  # never fail a call for a span attribute
            log.debug("span attributes not set", exc_info=True)
