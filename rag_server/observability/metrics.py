"""Prometheus metrics of one server, in its own CollectorRegistry (several servers in one process never
share a series), served at http://RAG_METRICS_HOST:RAG_METRICS_PORT/metrics.

Per call the cost is one dict lookup and one histogram observation: the labelled children are cached per
(method, code) and per (method, decision). Values that already exist elsewhere are read at scrape time
(calls in flight, the reranker's breaker, the running ingest's progress), never pushed per call. Nothing
here raises into a call: a failing metric is logged once and skipped.

    rag_rpc_duration_seconds{service, method, code}           histogram, every RPC (health included)
    rag_rpc_in_flight                                         gauge, calls being served now
    rag_decisions_total{service, method, kind, reason}        Retrieve, LookupIndication, AssessPatient, Ask
    rag_provider_duration_seconds{provider, name, operation}  embedder, reranker, understander, generator,
                                                              judge
    rag_provider_errors_total{provider, name, operation, error}
    rag_store_duration_seconds{operation}                     scroll, count, search_dense/sparse/hybrid
    rag_reranker_breaker_state{reranker, state}               1 for the breaker's current state, else 0
    rag_reranker_breaker_consecutive_failures{reranker}
    rag_ingest_running                                        1 while an Ingest call runs
    rag_ingest_stage_info{stage}                              the running (or last) ingest's stage
    rag_ingest_stage_done / rag_ingest_stage_total            its progress within that stage
    rag_ingest_chunks_per_second                              embedding rate of the running (or last) ingest
    rag_ingest_runs_total{result}                             Ingest runs ended, by status ("ok", ...)
    rag_audit_records_written_total                           audit records appended to the chain
    rag_audit_write_failures_total{reason}                    audit records NOT written (each also an ERROR
                                                              log line): queue_full, closed, write_error,
                                                              build_error, shutdown
    rag_audit_pending                                         audit records queued, not yet written
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from rag_server.observability.endpoint import MetricsEndpoint
from rag_server.observability.hooks import decision_labels, decision_var

__all__ = ["Metrics", "MetricsEndpoint"]

log = logging.getLogger("rag_server.observability")

RPC_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
               60.0)
PROVIDER_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
                    60.0)
STORE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
INGEST_METHOD = "/rag.v1.IngestionService/Ingest"
# Set in the context of the Ingest call that reports progress: only that call's end ends the running ingest
# (a second Ingest refused with ABORTED meanwhile must not).
_reporting: contextvars.ContextVar[bool] = contextvars.ContextVar("rag_ingest_reporting", default=False)
BREAKER_STATES = ("closed", "open", "half_open", "disabled")


def split_method(method: str) -> tuple[str, str]:
    """"/rag.v1.RetrievalService/Retrieve" -> ("rag.v1.RetrievalService", "Retrieve")."""
    service, _, name = method.lstrip("/").rpartition("/")
    return service, name


class _Once:
    """Log a failing metric once per place, then stay quiet (metrics never fail or flood anything)."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def __call__(self, where: str) -> None:
        if where not in self._seen:
            self._seen.add(where)
            log.warning("metrics: %s failed (skipped from now on silently)", where, exc_info=True)


class IngestProgress:
    """The running ingest's stage and progress, written by the Ingest servicer on the event loop and read
    by the scrape thread."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self.running = False
        self.stage = ""
        self.done = 0
        self.total = 0
        self.chunks_per_second = 0.0
        self._embed_start: tuple[int, float] | None = None

    def progress(self, stage: str, done: int, total: int) -> None:
        now = self._clock()
        with self._lock:
            if not self.running:  # a new ingest: forget the last one's rate
                self.running, self.chunks_per_second, self._embed_start = True, 0.0, None
            self.stage, self.done, self.total = stage, done, total
            if stage == "embed":
                if self._embed_start is None:
                    self._embed_start = (done, now)  # the first event: cached embeddings, and when work began
                else:
                    first, began = self._embed_start
                    if now > began and done > first:
                        self.chunks_per_second = (done - first) / (now - began)

    def ended(self) -> None:
        with self._lock:
            self.running = False

    def snapshot(self) -> tuple[bool, str, int, int, float]:
        with self._lock:
            return self.running, self.stage, self.done, self.total, self.chunks_per_second


class _IngestCollector(Collector):
    def __init__(self, ingest: IngestProgress, failed: _Once) -> None:
        self.ingest = ingest
        self.failed = failed

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            running, stage, done, total, rate = self.ingest.snapshot()
        except Exception:  # pragma: no cover - fail-open
            self.failed("ingest collector")
            return
        yield GaugeMetricFamily("rag_ingest_running", "1 while an Ingest call runs.",
                                value=int(running))
        info = GaugeMetricFamily("rag_ingest_stage_info", "Stage of the running (or last) ingest.",
                                 labels=("stage",))
        if stage:
            info.add_metric((stage,), 1)
        yield info
        yield GaugeMetricFamily("rag_ingest_stage_done", "Items done in that stage.", value=done)
        yield GaugeMetricFamily("rag_ingest_stage_total", "Items of that stage.", value=total)
        yield GaugeMetricFamily(
            "rag_ingest_chunks_per_second",
            "Embedding rate of the running (or last) ingest, chunks per second.",
            value=rate,
        )


class _BreakerCollector(Collector):
    """The reranker's circuit breaker, read at scrape time."""

    def __init__(self, reranker: Callable[[], Any], failed: _Once) -> None:
        self.reranker = reranker
        self.failed = failed

    def collect(self) -> Iterator[GaugeMetricFamily]:
        state_family = GaugeMetricFamily(
            "rag_reranker_breaker_state",
            "1 for the reranker circuit breaker's current state, 0 for the others.",
            labels=("reranker", "state"),
        )
        failures = GaugeMetricFamily(
            "rag_reranker_breaker_consecutive_failures",
            "Consecutive reranker failures counted by the breaker.",
            labels=("reranker",),
        )
        try:
            reranker = self.reranker()
            breaker = getattr(reranker, "breaker", None)
            name = str(getattr(reranker, "name", "none")) if reranker is not None else "none"
            if reranker is None:
                state = "disabled"
            elif breaker is None:
                state = "closed"  # an unguarded reranker: no breaker to open
            else:
                state = str(breaker.state.value)
            for candidate in BREAKER_STATES:
                state_family.add_metric((name, candidate), 1 if candidate == state else 0)
            if breaker is not None:
                failures.add_metric((name,), breaker.consecutive_failures)
        except Exception:
            self.failed("breaker collector")
        yield state_family
        yield failures


class _AuditCollector(Collector):
    """The audit writer's counts (persistence/audit_store.py), read at scrape time."""

    def __init__(self, writer: Callable[[], Any], failed: _Once) -> None:
        self.writer = writer
        self.failed = failed

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        written = CounterMetricFamily("rag_audit_records_written", "Audit records appended to the chain.")
        failures = CounterMetricFamily(
            "rag_audit_write_failures", "Audit records not written (each logged at ERROR), by reason.",
            labels=("reason",),
        )
        pending = GaugeMetricFamily("rag_audit_pending", "Audit records queued, not yet written.")
        try:
            writer = self.writer()
            if writer is not None:
                written.add_metric((), writer.written)
                for reason, count in writer.failures.items():
                    failures.add_metric((reason,), count)
                pending.add_metric((), writer.pending)
        except Exception:
            self.failed("audit collector")
        yield written
        yield failures
        yield pending


class _InFlightCollector(Collector):
    def __init__(self, count: Callable[[], float], failed: _Once) -> None:
        self.count = count
        self.failed = failed

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            value = float(self.count())
        except Exception:  # pragma: no cover - fail-open
            self.failed("in-flight collector")
            return
        yield GaugeMetricFamily("rag_rpc_in_flight", "Calls being served now.", value=value)


class _RelayedCalls:
    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def finished(self, method: str, code: grpc.StatusCode, seconds: float) -> None:
        try:
            self.metrics._ingest_finished(method, code)
        except Exception:  # pragma: no cover - fail-open
            self.metrics.failed("relay observer")


class Metrics:
    """The registry and metrics of one server; `finished` is its call Observer (api/calls.py).

    `registry` holds what is observed per call (histograms, counters); `live` the values read when
    scraped (calls in flight, the breaker, ingest progress, audit counts): the same registry for one
    server. With `multiprocess` (a worker of `serve --workers`, PROMETHEUS_MULTIPROC_DIR set by the
    parent) the per-call values are written to the worker's files, which the parent aggregates, and
    `live` is a registry of its own that multiproc.Mirror copies into those files every second."""

    def __init__(self, multiprocess: bool = False) -> None:
        self.registry = CollectorRegistry()
        self.live = CollectorRegistry() if multiprocess else self.registry
        r = self.registry
        self.failed = _Once()
        self.rpc_seconds = Histogram(
            "rag_rpc_duration_seconds", "Duration of RPCs by method and status code.",
            ("service", "method", "code"), buckets=RPC_BUCKETS, registry=r,
        )
        self.decisions = Counter(
            "rag_decisions", "Decisions of Retrieve, LookupIndication, AssessPatient and Ask replies.",
            ("service", "method", "kind", "reason"), registry=r,
        )
        self.provider_seconds = Histogram(
            "rag_provider_duration_seconds", "Duration of provider calls (embedder, reranker, LLM parts).",
            ("provider", "name", "operation"), buckets=PROVIDER_BUCKETS, registry=r,
        )
        self.provider_errors = Counter(
            "rag_provider_errors", "Failed provider calls by exception type.",
            ("provider", "name", "operation", "error"), registry=r,
        )
        self.store_seconds = Histogram(
            "rag_store_duration_seconds", "Duration of vector store reads.", ("operation",),
            buckets=STORE_BUCKETS, registry=r,
        )
        self.ingest_runs = Counter(
            "rag_ingest_runs", "Ingest runs (calls that reported progress) ended, by status.", ("result",),
            registry=r,
        )
        self.ingest = IngestProgress()
        self.live.register(_IngestCollector(self.ingest, self.failed))
        self._rpc: dict[tuple[str, grpc.StatusCode], Any] = {}
        self._decided: dict[tuple[str, tuple[int, int]], Any] = {}

    def watch_in_flight(self, count: Callable[[], float]) -> None:
        self.live.register(_InFlightCollector(count, self.failed))

    def watch_reranker(self, reranker: Callable[[], Any]) -> None:
        self.live.register(_BreakerCollector(reranker, self.failed))

    def watch_audit(self, writer: Callable[[], Any]) -> None:
        self.live.register(_AuditCollector(writer, self.failed))

    # --- the call Observer ---
    def finished(self, method: str, code: grpc.StatusCode, seconds: float) -> None:
        try:
            child = self._rpc.get((method, code))
            if child is None:
                child = self._rpc[(method, code)] = self.rpc_seconds.labels(*split_method(method), code.name)
            child.observe(seconds)
            decision = decision_var.get()
            if decision is not None:
                counter = self._decided.get((method, decision))
                if counter is None:
                    counter = self._decided[(method, decision)] = self.decisions.labels(
                        *split_method(method), *decision_labels(*decision)
                    )
                counter.inc()
            self._ingest_finished(method, code)
        except Exception:
            self.failed("call observer")

    def _ingest_finished(self, method: str, code: grpc.StatusCode) -> None:
        if method == INGEST_METHOD and _reporting.get():
            self.ingest.ended()
            self.ingest_runs.labels("ok" if code == grpc.StatusCode.OK else code.name.lower()).inc()

    def relay_observer(self) -> _RelayedCalls:
        """The Observer of the owner's relay port (`serve --workers`): a relayed call is counted by the
        worker that received it, so here only the ingest it ran is (its progress, its end)."""
        return _RelayedCalls(self)

    def ingest_progress(self, stage: str, done: int, total: int) -> None:
        try:
            if not _reporting.get():
                _reporting.set(True)
            self.ingest.progress(stage, done, total)
        except Exception:  # pragma: no cover - fail-open
            self.failed("ingest progress")

    # --- timing helpers for the instrumented providers and store (instrument.py) ---
    def provider_timer(self, provider: str, name: str, operation: str) -> Callable[[float], None]:
        child: Any = self.provider_seconds.labels(provider, name, operation)
        return child.observe  # type: ignore[no-any-return]

    def provider_error(self, provider: str, name: str, operation: str, exc: BaseException) -> None:
        try:
            self.provider_errors.labels(provider, name, operation, type(exc).__name__).inc()
        except Exception:  # pragma: no cover - fail-open
            self.failed("provider error counter")

    def store_timer(self, operation: str) -> Callable[[float], None]:
        child: Any = self.store_seconds.labels(operation)
        return child.observe  # type: ignore[no-any-return]
