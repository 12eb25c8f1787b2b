"""Prometheus metrics of `rag-server serve --workers N`: one endpoint, served by the parent, aggregating
every worker (prometheus_client's multiprocess mode).

The parent makes PROMETHEUS_MULTIPROC_DIR (an empty folder of the run directory, or the operator's, emptied)
before it starts a worker, so every worker's counters and histograms are written to its own files there;
the parent's endpoint reads them all at each scrape (MultiProcessCollector: counters and histograms
summed over the workers, those of a worker that exited included) and forgets a dead worker's live gauges
(`mark_dead`). What one server reads at scrape time (calls in flight, the reranker breaker, ingest
progress, audit counts: Metrics.live) a worker copies into its files every MIRROR_S (`Mirror`): gauges by
their mode below (in flight and pending audit records summed; the breaker per worker, labelled `pid`;
ingest progress, the owner's, as the maximum), counters by their increase. Each worker also reports
`rag_worker_info{worker, role, pid} 1`, so a scrape says which processes serve.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any, Literal

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

log = logging.getLogger("rag_server.observability")

ENV = "PROMETHEUS_MULTIPROC_DIR"
MIRROR_S = 1.0
Mode = Literal["livesum", "liveall", "livemax"]
GAUGE_MODES: dict[str, Mode] = {
    "rag_rpc_in_flight": "livesum",
    "rag_audit_pending": "livesum",
    "rag_reranker_breaker_state": "liveall",
    "rag_reranker_breaker_consecutive_failures": "liveall",
}
DEFAULT_MODE: Mode = "livemax"  # ingest progress: only the owner ingests


def prepare(path: Path) -> Path:
    """`path` made (0700) and emptied of earlier runs' files; returned for PROMETHEUS_MULTIPROC_DIR."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    for old in path.glob("*.db"):
        old.unlink(missing_ok=True)
    return path


def aggregated(path: Path) -> CollectorRegistry:
    """The parent's registry: every worker's files under `path`, merged at each scrape."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(path))  # type: ignore[no-untyped-call]
    return registry


def mark_dead(pid: int, path: Path) -> None:
    """A worker has exited: its live gauges no longer count (its counters and histograms still do)."""
    try:
        mark_process_dead(pid, str(path))  # type: ignore[no-untyped-call]
    except OSError:  # pragma: no cover - best effort
        log.warning("metrics of worker pid %d not cleared", pid, exc_info=True)


class Mirror:
    """Copies a worker's scrape-time values (`live`) into its multiprocess files, every MIRROR_S and once
    more when closed, from a daemon thread. Never raises into anything."""

    def __init__(self, live: CollectorRegistry, registry: CollectorRegistry, worker: int, role: str) -> None:
        self.live = live
        self.registry = registry
        self._gauges: dict[str, Any] = {}
        self._counters: dict[str, Any] = {}
        self._last: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self._seen: dict[str, set[tuple[tuple[str, str], ...]]] = {}
        self._stop = threading.Event()
        self._failed = False
        info = Gauge("rag_worker_info", "Serving processes of `rag-server serve --workers`.",
                     ("worker", "role"), multiprocess_mode="liveall", registry=registry)
        info.labels(str(worker), role).set(1)
        self._thread = threading.Thread(target=self._run, name="rag-metrics-mirror", daemon=True)

    def start(self) -> None:
        self.sample()
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(MIRROR_S):
            self.sample()

    def sample(self) -> None:
        try:
            for family in self.live.collect():
                if family.type == "counter":
                    self._counter_family(family)
                elif family.type == "gauge":
                    self._gauge_family(family)
        except Exception:
            if not self._failed:
                self._failed = True
                log.warning("metrics mirror failed (skipped from now on silently)", exc_info=True)

    def _gauge_family(self, family: Any) -> None:
        now: set[tuple[tuple[str, str], ...]] = set()
        for sample in family.samples:
            labels = tuple(sample.labels.items())
            gauge = self._metric(self._gauges, family, labels, lambda names: Gauge(
                family.name, family.documentation, names, registry=self.registry,
                multiprocess_mode=GAUGE_MODES.get(family.name, DEFAULT_MODE)))
            (gauge.labels(*(v for _, v in labels)) if labels else gauge).set(sample.value)
            now.add(labels)
        gauge = self._gauges.get(family.name)
        for gone in self._seen.get(family.name, set()) - now:  # a label no longer reported (a stage)
            if gauge is not None and gone:
                gauge.labels(*(v for _, v in gone)).set(0)
        self._seen[family.name] = self._seen.get(family.name, set()) | now

    def _counter_family(self, family: Any) -> None:
        for sample in family.samples:
            if not sample.name.endswith("_total"):
                continue
            labels = tuple(sample.labels.items())
            counter = self._metric(self._counters, family, labels, lambda names: Counter(
                family.name, family.documentation, names, registry=self.registry))
            key = (family.name, labels)
            grown = sample.value - self._last.get(key, 0.0)
            if grown > 0:
                (counter.labels(*(v for _, v in labels)) if labels else counter).inc(grown)
            self._last[key] = sample.value

    @staticmethod
    def _metric(made: dict[str, Any], family: Any, labels: tuple[tuple[str, str], ...], make: Any) -> Any:
        metric = made.get(family.name)
        if metric is None:
            metric = made[family.name] = make(tuple(name for name, _ in labels))
        return metric


def worker_environment(path: Path) -> dict[str, str]:
    """What a worker's environment needs (set before it imports prometheus_client)."""
    return {ENV: str(path)}


def operator_dir() -> Path | None:
    """PROMETHEUS_MULTIPROC_DIR when the operator set it (used, emptied, kept), else None (the run
    directory has one)."""
    value = os.environ.get(ENV, "")
    return Path(value) if value else None
