"""Observability parts on their own: the JSON log formatter and the question filter, the metrics Observer
(cached children, decisions from the call's context, fail-open), the timing wrappers, ingest progress,
settings, the CLI flag, the otel extra and the trace id on trace rows."""

from __future__ import annotations

import contextvars
import io
import json
import logging
from collections.abc import Sequence
from typing import Any

import grpc
import pytest
from prometheus_client import generate_latest
from pydantic import ValidationError

from rag_server.api.traces import retrieve_trace
from rag_server.call_context import Caller, correlation_id_var, current_caller, current_otel_trace_id
from rag_server.config import Settings
from rag_server.extras import Extra, MissingExtra, needed
from rag_server.gen.rag.v1 import common_pb2, retrieval_pb2
from rag_server.observability import Observability
from rag_server.observability.hooks import decision_labels, note_decision, note_question, question_var
from rag_server.observability.instrument import InstrumentedEmbedder, InstrumentedStore
from rag_server.observability.logs import REDACTED, JsonFormatter, QuestionRedactor, _scrub, make_handler
from rag_server.observability.metrics import IngestProgress, Metrics, split_method

RETRIEVE = "/rag.v1.RetrievalService/Retrieve"


def _record(message: str, *args: Any, exc: BaseException | None = None) -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    return logging.LogRecord("rag_server.test", logging.WARNING, __file__, 1, message, args, exc_info)


def _in_call(fn: Any, *args: Any, cid: str = "", questions: tuple[str, ...] = ()) -> Any:
    """Run fn in a fresh context, as a call's task would."""

    def run() -> Any:
        if cid:
            correlation_id_var.set(cid)
        if questions:
            note_question(*questions)
        return fn(*args)

    return contextvars.copy_context().run(run)


# --- logs ----------------------------------------------------------------------------------------------


def test_json_lines_carry_the_correlation_id_and_the_caller() -> None:
    line = _in_call(JsonFormatter().format, _record("hello %s", "world"), cid="ward-7.req-1")
    record = json.loads(line)
    assert record["message"] == "hello world" and record["level"] == "WARNING"
    assert record["logger"] == "rag_server.test" and record["correlation_id"] == "ward-7.req-1"
    assert record["time"].endswith("+00:00") and "caller" not in record
    assert json.loads(JsonFormatter().format(_record("outside")))["correlation_id"] == ""
    def with_caller() -> str:
        current_caller.set(Caller("ward-7", ("query",)))
        return JsonFormatter().format(_record("who"))

    assert json.loads(contextvars.copy_context().run(with_caller))["caller"] == "ward-7"


def test_exceptions_are_one_json_line() -> None:
    try:
        raise ValueError("boom\non two lines")
    except ValueError as exc:
        line = JsonFormatter().format(_record("failed", exc=exc))
    assert "\n" not in line
    assert "ValueError: boom" in json.loads(line)["exception"]


def test_scrub_finds_the_question_its_cuts_and_folded_copies() -> None:
    q = "zentorin có gây buồn ngủ ở người lái xe ban đêm không"
    assert _scrub(f"asked: {q}!", (q,)) == f"asked: {REDACTED}!"
    assert _scrub("query 'có gây buồn ngủ ở người' cut", (q,)) == f"query '{REDACTED}' cut"
    assert _scrub("folded: CO GAY BUON NGU", (q,)) == f"folded: {REDACTED}"
    assert _scrub("zentorin alone, two words: buồn ngủ", (q,)) == "zentorin alone, two words: buồn ngủ"
    assert _scrub("asked zentorin", ("zentorin",)) == f"asked {REDACTED}"
    assert _scrub("ok then", ("ok",)) == "ok then"  # too short to search for


def test_the_filter_redacts_messages_and_tracebacks_of_the_call_only() -> None:
    q = "liều của zentorin cho trẻ em suy thận"
    stream = io.StringIO()
    handler = make_handler(Settings(log_format="json"), stream)  # type: ignore[call-arg]
    try:
        raise RuntimeError(f"provider said: {q}")
    except RuntimeError as exc:
        error = exc
    _in_call(handler.handle, _record("bad reply for %r", q, exc=error), questions=(q,))
    handler.handle(_record("outside a call: %s", q))  # no call, nothing noted: left as it is
    inside, outside = (json.loads(line) for line in stream.getvalue().splitlines())
    assert q not in json.dumps(inside, ensure_ascii=False) and REDACTED in inside["message"]
    assert REDACTED in inside["exception"]
    assert q in outside["message"]
    allowed = QuestionRedactor(allow=True)
    record = _record("%s", q)
    assert _in_call(allowed.filter, record, questions=(q,)) and record.getMessage() == q


def test_text_format_stays_the_default() -> None:
    stream = io.StringIO()
    handler = make_handler(Settings(), stream)  # type: ignore[call-arg]
    handler.handle(_record("plain"))
    line = stream.getvalue()
    assert "WARNING rag_server.test plain" in line and not line.startswith("{")


# --- metrics -------------------------------------------------------------------------------------------


def _exposition(metrics: Metrics) -> str:
    return generate_latest(metrics.registry).decode()


def test_observer_counts_calls_and_decisions_with_cached_children() -> None:
    metrics = Metrics()
    decision = common_pb2.Decision(kind=common_pb2.DECISION_KIND_ABSTAIN,
                                   reason=common_pb2.DECISION_REASON_OUT_OF_SCOPE)

    def call() -> None:
        note_decision(decision)
        metrics.finished(RETRIEVE, grpc.StatusCode.OK, 0.002)

    for _ in range(50):
        contextvars.copy_context().run(call)
    contextvars.copy_context().run(metrics.finished, RETRIEVE, grpc.StatusCode.INVALID_ARGUMENT, 0.001)
    assert len(metrics._rpc) == 2 and len(metrics._decided) == 1  # no label lookup per call
    text = _exposition(metrics)
    assert ('rag_rpc_duration_seconds_count{code="OK",method="Retrieve",service="rag.v1.RetrievalService"} '
            "50.0") in text
    assert ('rag_decisions_total{kind="ABSTAIN",method="Retrieve",reason="OUT_OF_SCOPE",'
            'service="rag.v1.RetrievalService"} 50.0') in text
    assert split_method("/grpc.health.v1.Health/Check") == ("grpc.health.v1.Health", "Check")
    assert decision_labels(1, 1) == ("ANSWERABLE", "GROUNDED_EVIDENCE_AVAILABLE")
    assert decision_labels(99, 999) == ("99", "999")


def test_the_observer_never_raises() -> None:
    metrics = Metrics()
    metrics.rpc_seconds = None  # type: ignore[assignment]  # a broken metric
    metrics.finished(RETRIEVE, grpc.StatusCode.OK, 0.1)  # logged once, not raised


def test_ingest_progress_rate_and_end() -> None:
    now = [100.0]
    progress = IngestProgress(clock=lambda: now[0])
    progress.progress("parse", 10, 20)
    progress.progress("embed", 40, 200)  # 40 were cached: the rate counts from here
    now[0] += 2.0
    progress.progress("embed", 140, 200)
    running, stage, done, total, rate = progress.snapshot()
    assert (running, stage, done, total) == (True, "embed", 140, 200) and rate == pytest.approx(50.0)
    progress.ended()
    assert progress.snapshot()[0] is False
    progress.progress("parse", 0, 5)  # the next ingest starts afresh
    assert progress.snapshot()[4] == 0.0


def test_a_refused_ingest_does_not_end_the_running_one() -> None:
    metrics = Metrics()
    ingest = "/rag.v1.IngestionService/Ingest"
    running = contextvars.copy_context()  # the call that ingests
    running.run(metrics.ingest_progress, "parse", 1, 10)
    contextvars.copy_context().run(metrics.finished, ingest, grpc.StatusCode.ABORTED, 0.01)  # one refused
    assert metrics.ingest.snapshot()[0] is True
    running.run(metrics.finished, ingest, grpc.StatusCode.OK, 1.0)
    assert metrics.ingest.snapshot()[0] is False
    text = _exposition(metrics)
    assert 'rag_ingest_runs_total{result="ok"} 1.0' in text and "aborted" not in text


class FailingEmbedder:
    model = "fake-model"
    dims = 3
    concurrent_batches = 4

    def embed(self, texts: Sequence[str], kind: str) -> list[list[float]]:
        if kind == "query":
            raise RuntimeError("down")
        return [[1.0, 0.0, 0.0] for _ in texts]


def test_instrumented_embedder_times_counts_errors_and_forwards() -> None:
    metrics = Metrics()
    embedder = InstrumentedEmbedder(FailingEmbedder(), metrics, "fake")
    assert (embedder.model, embedder.dims, embedder.concurrent_batches) == ("fake-model", 3, 4)
    assert embedder.embed(["a", "b"], "document") == [[1.0, 0.0, 0.0]] * 2
    with pytest.raises(RuntimeError, match="down"):
        embedder.embed(["q"], "query")
    text = _exposition(metrics)
    timed = 'rag_provider_duration_seconds_count{name="fake",operation="document",provider="embedder"}'
    failed = ('rag_provider_errors_total{error="RuntimeError",name="fake",operation="query",'
              'provider="embedder"}')
    assert f"{timed} 1.0" in text and f"{failed} 1.0" in text


class FakeStore:
    active_generation = "g1"

    def scroll(self, flt: Any) -> list[str]:
        return ["chunk"]

    def manifest(self) -> str:
        return "manifest"


def test_instrumented_store_times_reads_and_forwards_the_rest() -> None:
    metrics = Metrics()
    inner = FakeStore()
    store: Any = InstrumentedStore(inner, metrics)
    assert store.scroll(None) == ["chunk"] and store.manifest() == "manifest"
    assert store.active_generation == "g1"
    assert 'rag_store_duration_seconds_count{operation="scroll"} 1.0' in _exposition(metrics)
    assert not hasattr(inner, "__dict__") or "scroll" not in vars(inner)  # the shared object is untouched


# --- settings, CLI, extras, tracing ----------------------------------------------------------------------


def test_settings_bounds_and_the_cli_flag() -> None:
    from rag_server.cli import _settings, build_parser

    with pytest.raises(ValidationError):
        Settings(metrics_port=70000)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        Settings(log_format="xml")  # type: ignore[call-arg]
    args = build_parser().parse_args(["serve", "--metrics-port", "9464", "--port", "0"])
    assert _settings(args).metrics_port == 9464
    assert _settings(build_parser().parse_args(["serve"])).metrics_port == Settings().metrics_port == 0


def test_otel_extra_missing_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from rag_server import extras

    assert (Extra.OTEL, "RAG_OTEL=true") in needed(Settings(otel=True))  # type: ignore[call-arg]
    assert all(extra != Extra.OTEL for extra, _ in needed(Settings()))
    monkeypatch.setitem(extras.MODULE_OF, Extra.OTEL, "opentelemetry_is_not_installed_here")
    with pytest.raises(MissingExtra) as missing:
        Observability(Settings(otel=True))  # type: ignore[call-arg]
    assert "'otel' extra" in str(missing.value) and "\n" not in str(missing.value)


def test_trace_rows_take_the_current_span_trace_id() -> None:
    from rag_server.observability.tracing import Tracing

    request = retrieval_pb2.RetrieveRequest(drug_id="zentorin")
    response = retrieval_pb2.RetrieveResponse()
    assert retrieve_trace(request, response, "c-1").otel_trace_id == ""
    tracing = Tracing(Settings(otel=True, otel_exporter="memory"))  # type: ignore[call-arg]
    try:
        tracer = tracing.provider.get_tracer("test")
        with tracer.start_as_current_span("call") as span:
            expected = format(span.get_span_context().trace_id, "032x")
            assert current_otel_trace_id() == expected
            row = retrieve_trace(request, response, "c-1")
        assert row.otel_trace_id == expected and len(expected) == 32
        assert current_otel_trace_id() == ""  # no span current any more
        assert [s.name for s in tracing.finished_spans()] == ["call"]
    finally:
        tracing.close()
    assert current_otel_trace_id() == ""


def test_question_var_starts_empty_in_each_call() -> None:
    assert _in_call(question_var.get) == ()
    assert _in_call(question_var.get, questions=("a question here",)) == ("a question here",)
