"""Hypothesis-driven requests to every RPC of a real `rag-server serve` (the fictional sample loaded): any
Unicode, lengths up to and past each limit, long lists. Never INTERNAL or UNKNOWN, each call answered
within a bounded time, and a normal call still answered right after."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_server.api import limits as L
from rag_server.gen.rag.v1 import (
    answer_pb2,
    answer_pb2_grpc,
    common_pb2,
    ingestion_pb2,
    ingestion_pb2_grpc,
    retrieval_pb2,
    retrieval_pb2_grpc,
    understanding_pb2,
    understanding_pb2_grpc,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FORBIDDEN = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}
MAX_CALL_S = 10.0  # generous on a shared 2-core machine; figures are in benchmarks/bench_pathological.py
# RAG_FUZZ_EXAMPLES=500 explores more (random seeds); CI runs a fixed, reproducible set.
_EXAMPLES = int(os.environ.get("RAG_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
                derandomize="RAG_FUZZ_EXAMPLES" not in os.environ)

# Any Unicode (no surrogates: they cannot travel in a proto string), near and past the limits.
text = st.one_of(
    st.text(max_size=60),
    st.text(min_size=L.INDICATION_CHARS - 5, max_size=L.INDICATION_CHARS + 5),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=L.QUERY_CHARS - 5, max_size=L.QUERY_CHARS + 20),
    st.sampled_from(["zelvorin", "chống chỉ định", "\x00", "💊" * 1000, "x" * 2000, "ｚｅｌｖｏｒｉｎ"]),
)
small = st.one_of(st.text(max_size=40), st.sampled_from(["zelvorin", "keptralon 200 mg", "suy thận", ""]))
items = st.lists(small, max_size=L.PATIENT_ITEMS + 3)
drug_ids = st.lists(st.one_of(st.from_regex(r"[a-z]{1,12}", fullmatch=True), small), max_size=4)
patient = st.builds(
    common_pb2.PatientContext,
    current_medications=items, conditions=items, allergies=items,
    age_years=st.integers(min_value=-5, max_value=200), pregnant=st.booleans(),
    renal_impairment=st.booleans(),
)
frame = st.builds(
    common_pb2.QueryFrame,
    turn_type=st.integers(min_value=0, max_value=12), drug_ids=drug_ids, section_key=small, indication=small,
    patient=patient, query=text,
)


@pytest.fixture(scope="module")
def stubs(shared_server: Any) -> Iterator[dict[str, Any]]:
    with grpc.insecure_channel(shared_server.target) as channel:
        yield {
            "understanding": understanding_pb2_grpc.UnderstandingServiceStub(channel),
            "retrieval": retrieval_pb2_grpc.RetrievalServiceStub(channel),
            "answer": answer_pb2_grpc.AnswerServiceStub(channel),
            "ingestion": ingestion_pb2_grpc.IngestionServiceStub(channel),
        }


def call(fn: Callable[[], Any]) -> grpc.StatusCode:
    began = time.monotonic()
    try:
        result = fn()
        if hasattr(result, "__iter__") and not hasattr(result, "ListFields"):
            list(result)
        code, details = grpc.StatusCode.OK, ""
    except grpc.RpcError as err:
        code, details = err.code(), f"{err.details()} {err.debug_error_string()}"  # type: ignore[attr-defined]
    took = time.monotonic() - began
    assert code not in FORBIDDEN, (code, details)
    assert took < MAX_CALL_S, took
    return code


def still_answers(stubs: dict[str, Any]) -> None:
    reply = stubs["retrieval"].Retrieve(
        retrieval_pb2.RetrieveRequest(query="chống chỉ định của zelvorin"), timeout=30
    )
    assert reply.evidence and reply.evidence[0].drug_id == "zelvorin"


@FUZZ
@given(query=text, conversation_id=small)
def test_understand(stubs: dict[str, Any], query: str, conversation_id: str) -> None:
    request = understanding_pb2.UnderstandRequest(query=query, conversation_id=conversation_id)
    call(lambda: stubs["understanding"].Understand(request, timeout=30))


@FUZZ
@given(query=text, drug_id=small, section_key=small, with_frame=st.booleans(), frame=frame)
def test_retrieve(
    stubs: dict[str, Any], query: str, drug_id: str, section_key: str, with_frame: bool, frame: Any
) -> None:
    request = retrieval_pb2.RetrieveRequest(query=query, drug_id=drug_id, section_key=section_key)
    if with_frame:
        request.frame.CopyFrom(frame)
    call(lambda: stubs["retrieval"].Retrieve(request, timeout=30))


@FUZZ
@given(indication=text)
def test_lookup_indication(stubs: dict[str, Any], indication: str) -> None:
    request = retrieval_pb2.LookupIndicationRequest(indication=indication)
    call(lambda: stubs["retrieval"].LookupIndication(request, timeout=30))


@FUZZ
@given(drugs=drug_ids, facts=patient)
def test_assess_patient(stubs: dict[str, Any], drugs: list[str], facts: Any) -> None:
    request = retrieval_pb2.AssessPatientRequest(drug_ids=drugs, patient=facts)
    call(lambda: stubs["retrieval"].AssessPatient(request, timeout=30))


@FUZZ
@given(query=text, conversation_id=small)
def test_ask(stubs: dict[str, Any], query: str, conversation_id: str) -> None:
    request = answer_pb2.AskRequest(query=query, conversation_id=conversation_id)
    call(lambda: stubs["answer"].Ask(request, timeout=30))


@FUZZ
@given(path=text, check_only=st.just(True))
def test_ingest_paths(stubs: dict[str, Any], path: str, check_only: bool) -> None:
    request = ingestion_pb2.IngestRequest(path=path, check_only=check_only)
    call(lambda: stubs["ingestion"].Ingest(request, timeout=30))


@FUZZ
@given(filename=text, declared=st.integers(min_value=-10, max_value=10**12), data=st.binary(max_size=2048))
def test_upload_document(stubs: dict[str, Any], filename: str, declared: int, data: bytes) -> None:
    def parts() -> Iterator[ingestion_pb2.UploadDocumentRequest]:
        yield ingestion_pb2.UploadDocumentRequest(
            metadata=ingestion_pb2.UploadMetadata(filename=filename, size_bytes=declared)
        )
        yield ingestion_pb2.UploadDocumentRequest(chunk=data)

    call(lambda: stubs["ingestion"].UploadDocument(parts(), timeout=30))


def test_a_normal_call_is_answered_after_the_fuzzing(stubs: dict[str, Any]) -> None:
    still_answers(stubs)


def test_a_refused_upload_is_invalid_argument_while_the_client_still_sends(stubs: dict[str, Any]) -> None:
    """The refusal waits for the client to finish sending (bounded): ended early, grpc's client reports
    INTERNAL "Internal error from Core" now and then instead of the server's status."""

    def parts() -> Iterator[ingestion_pb2.UploadDocumentRequest]:
        yield ingestion_pb2.UploadDocumentRequest(
            metadata=ingestion_pb2.UploadMetadata(filename="bad\x00name.pdf", size_bytes=40 * 2048)
        )
        for _ in range(40):
            yield ingestion_pb2.UploadDocumentRequest(chunk=b"%PDF-" + b"\x00" * 2043)

    codes = {call(lambda: stubs["ingestion"].UploadDocument(parts(), timeout=30)) for _ in range(60)}
    assert codes == {grpc.StatusCode.INVALID_ARGUMENT}
