"""Operations: Prometheus metrics (metrics.py, RAG_METRICS_PORT), OpenTelemetry server spans (tracing.py,
RAG_OTEL, the `otel` extra), structured logs without question text (logs.py, RAG_LOG_FORMAT,
RAG_LOG_QUESTIONS), and the hooks the servicers call (hooks.py).

`Observability` is what one server measures and traces. It builds nothing and opens nothing of the app:
`start_server` (server.py) makes it first and hands it to `App.start`, which composes the embedder, the
store, the reranker and the Ask parts and hands each to it to wrap (`timed_*`: the object itself when
nothing measures) before anything is built on it, then what it reads at scrape time (`watch`). The server
adds its observers to the call plumbing and its interceptor to the grpc.aio server, serves /metrics, and
closes it when the server stops. With RAG_METRICS_PORT=0 and RAG_OTEL=false it does nothing at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

import grpc

from rag_server.config import Settings
from rag_server.observability.instrument import (
    InstrumentedEmbedder,
    InstrumentedPart,
    InstrumentedReranker,
    InstrumentedStore,
)
from rag_server.observability.metrics import Metrics, MetricsEndpoint

if TYPE_CHECKING:
    from rag_server.call_context import Observer
    from rag_server.lifecycle import Lifecycle
    from rag_server.observability.multiproc import Mirror
    from rag_server.observability.tracing import Tracing
    from rag_server.providers.base import Embedder, Reranker
    from rag_server.store.base import Store

log = logging.getLogger("rag_server.observability")

__all__ = ["Metrics", "MetricsEndpoint", "Observability"]

P = TypeVar("P")


class Observability:
    """The metrics registry, tracing and /metrics endpoint of one server."""

    def __init__(self, settings: Settings, worker: tuple[int, str] | None = None) -> None:
        self.settings = settings
        # a worker of `serve --workers` (its index and "owner"/"follower", plain values: observability
        # knows nothing of rag_server.workers): the parent serves the metrics (multiproc.py)
        self.worker = worker
        self.metrics: Metrics | None = Metrics(worker is not None) if settings.metrics_port else None
        self.mirror: Mirror | None = None
        self.tracing: Tracing | None = None
        if settings.otel:  # MissingExtra (one line) when the otel extra is not installed
            from rag_server.observability.tracing import Tracing

            self.tracing = Tracing(settings)
        self.endpoint: MetricsEndpoint | None = None

    @property
    def interceptors(self) -> list[grpc.aio.ServerInterceptor]:
        return [self.tracing.interceptor] if self.tracing is not None else []

    def observers(self, lifecycle: Lifecycle) -> list[Observer]:
        """The call Observers to add to the plumbing (call_context.Observer)."""
        out: list[Observer] = []
        if self.metrics is not None:
            self.metrics.watch_in_flight(lambda: lifecycle.in_flight)
            out.append(self.metrics)
        if self.tracing is not None:
            out.append(self.tracing.observer)
        return out

    def relay_observers(self) -> list[Observer]:
        """The Observers of the owner's relay port (`serve --workers`): the ingest it runs, nothing else."""
        return [self.metrics.relay_observer()] if self.metrics is not None else []

    @property
    def ingest_progress(self) -> Callable[[str, int, int], None] | None:
        """What the Ingest servicer reports each progress event to (None: nothing measures it)."""
        return self.metrics.ingest_progress if self.metrics is not None else None

    # --- what the app hands it to wrap (App.start): each returned as it is when nothing measures ---

    def timed_embedder(self, embedder: Embedder) -> Embedder:
        """The embedder with its `embed` timed by kind."""
        if self.metrics is None:
            return embedder
        return cast("Embedder", InstrumentedEmbedder(embedder, self.metrics, self.settings.embedder))

    def timed_store(self, store: Store) -> Store:
        """The store with its reads timed."""
        if self.metrics is None:
            return store
        return cast("Store", InstrumentedStore(store, self.metrics))

    def timed_reranker(self, reranker: Reranker) -> Reranker:
        """The reranker's provider (inside its timeout and breaker guard) with its `rerank` timed."""
        if self.metrics is None:
            return reranker
        return cast("Reranker", InstrumentedReranker(reranker, self.metrics, self.settings.reranker))

    def timed_part(self, part: P, provider: str, method: str) -> P:
        """An Ask part (understander, generator, judge) with its one provider method timed."""
        if self.metrics is None:
            return part
        try:
            return cast(P, InstrumentedPart(part, self.metrics, provider, method))
        except Exception:  # measuring less is better than not starting
            log.warning("%s metrics not installed", provider, exc_info=True)
            return part

    def watch(self, reranker: Callable[[], Any], audit: Callable[[], Any]) -> None:
        """What the metrics read at scrape time: the reranker's breaker, the audit writer's counts."""
        if self.metrics is None:
            return
        self.metrics.watch_reranker(reranker)
        self.metrics.watch_audit(audit)  # audit records written, failed, pending

    def serve_metrics(self) -> None:
        """Bind RAG_METRICS_HOST:RAG_METRICS_PORT (ListenError, one line, when it cannot); a worker of
        `serve --workers` mirrors its scrape-time values into its files instead (the parent serves)."""
        if self.metrics is None:
            return
        if self.worker is not None:
            from rag_server.observability.multiproc import Mirror

            index, name = self.worker
            self.mirror = Mirror(self.metrics.live, self.metrics.registry, index, name)
            self.mirror.start()
            return
        host, port = self.settings.metrics_host, self.settings.metrics_port
        try:
            self.endpoint = MetricsEndpoint(self.metrics.registry, host, port)
        except OSError as exc:
            from rag_server.listen import cannot_listen, reason

            raise cannot_listen(host, port, reason(exc), "serve metrics on") from None
        log.info("metrics on http://%s:%d/metrics", host, self.endpoint.port)

    def close(self) -> None:
        if self.mirror is not None:
            self.mirror.close()
            self.mirror = None
        if self.endpoint is not None:
            self.endpoint.close()
            self.endpoint = None
        if self.tracing is not None:
            self.tracing.close()

