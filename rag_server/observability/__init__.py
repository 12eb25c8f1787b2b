"""Operations: Prometheus metrics (metrics.py, RAG_METRICS_PORT), OpenTelemetry server spans (tracing.py,
RAG_OTEL, the `otel` extra), structured logs without question text (logs.py, RAG_LOG_FORMAT,
RAG_LOG_QUESTIONS), and the hooks the servicers call (hooks.py).

`Observability` is what one server measures and traces; `start_server` (server.py) builds it first, lets it
wrap the embedder and the store before the app starts (`before_start`: everything the app builds on them
then uses the timed ones), the reranker's provider and the Ask parts after (`after_start`), adds its
observers to the call plumbing and its interceptor to the grpc.aio server, serves /metrics, and closes it
when the server stops. With RAG_METRICS_PORT=0 and RAG_OTEL=false it does nothing at all.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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
    from rag_server.api.calls import Lifecycle, Observer
    from rag_server.app import App
    from rag_server.observability.multiproc import Mirror
    from rag_server.observability.tracing import Tracing
    from rag_server.workers.role import Role

log = logging.getLogger("rag_server.observability")

__all__ = ["Metrics", "MetricsEndpoint", "Observability"]


class Observability:
    """The metrics registry, tracing and /metrics endpoint of one server."""

    def __init__(self, settings: Settings, role: Role | None = None) -> None:
        self.settings = settings
        self.role = role  # a worker of `serve --workers`: the parent serves the metrics (multiproc.py)
        self.metrics: Metrics | None = Metrics(role is not None) if settings.metrics_port else None
        self.mirror: Mirror | None = None
        self.tracing: Tracing | None = None
        if settings.otel:  # MissingExtra (one line) when the otel extra is not installed
            from rag_server.observability.tracing import Tracing

            self.tracing = Tracing(settings)
        self.endpoint: MetricsEndpoint | None = None
        self._wrap_reranker = False

    @property
    def interceptors(self) -> list[grpc.aio.ServerInterceptor]:
        return [self.tracing.interceptor] if self.tracing is not None else []

    def observers(self, lifecycle: Lifecycle) -> list[Observer]:
        """The call Observers to add to the plumbing (api/calls.py)."""
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

    async def before_start(self, app: App) -> None:
        """Wrap the embedder and the store (building or opening them as App.start would) before the app
        builds its retriever, reranker and Ask parts on them."""
        metrics = self.metrics
        if metrics is None:
            return
        from rag_server.extras import check_extras

        settings = app.settings
        check_extras(settings)  # what App.start checks first: a missing extra before anything opens
        if app.embedder is None:
            from rag_server.providers.factory import build_embedder

            app.embedder = build_embedder(settings)
        app.embedder = InstrumentedEmbedder(app.embedder, metrics, settings.embedder)
        if app.store is None:
            from rag_server.store.factory import open_store

            settings.data_dir.mkdir(parents=True, exist_ok=True)
            app.store = await asyncio.to_thread(open_store, settings, None, app.follower_dir)
        app.store = InstrumentedStore(app.store, metrics)
        self._wrap_reranker = app.reranker is None  # built by App.start for this server only

    def after_start(self, app: App) -> None:
        """Time the reranker's provider (inside its guard) and the Ask parts; watch the breaker."""
        metrics = self.metrics
        if metrics is None:
            return
        settings = app.settings
        try:
            from rag_server.providers.rerank.guarded import GuardedReranker

            reranker = app.reranker
            if self._wrap_reranker and isinstance(reranker, GuardedReranker):
                reranker.inner = InstrumentedReranker(reranker.inner, metrics, settings.reranker)
            if app.answers is not None:
                parts = app.answers
                app.answers = dataclasses.replace(
                    parts,
                    understander=_part(parts.understander, metrics, "understander", "understand"),
                    generator=_part(parts.generator, metrics, "generator", "generate"),
                    judge=_part(parts.judge, metrics, "judge", "judge"),
                )
        except Exception:  # measuring less is better than not starting
            log.warning("provider metrics not installed", exc_info=True)
        metrics.watch_reranker(lambda: app.reranker)
        metrics.watch_audit(lambda: app.audit)  # audit records written, failed, pending

    def serve_metrics(self) -> None:
        """Bind RAG_METRICS_HOST:RAG_METRICS_PORT (ListenError, one line, when it cannot); a worker of
        `serve --workers` mirrors its scrape-time values into its files instead (the parent serves)."""
        if self.metrics is None:
            return
        if self.role is not None:
            from rag_server.observability.multiproc import Mirror

            self.mirror = Mirror(self.metrics.live, self.metrics.registry, self.role.index, self.role.name)
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


def _part(part: Any, metrics: Metrics, provider: str, method: str) -> Any:
    return InstrumentedPart(part, metrics, provider, method)
