"""clients/python against real `rag-server serve` subprocesses: AsyncFormularyClient (grpc.aio) method by
method, and both clients with API keys: the key on every call, refusals raised as Unauthenticated /
PermissionDenied / ResourceExhausted carrying the ErrorInfo reason and the RetryInfo delay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import pytest
from formulary_rag_client import (
    AsyncFormularyClient,
    FormularyClient,
    InvalidRequest,
    PermissionDenied,
    RagError,
    ResourceExhausted,
    Unauthenticated,
)
from formulary_rag_client.gen.rag.v1 import common_pb2

from rag_server.security.keys import KeyStore

pytestmark = pytest.mark.e2e


async def test_async_client_every_method(shared_server: Any) -> None:
    async with AsyncFormularyClient(shared_server.target, timeout=60) as client:
        assert await client.health() == "SERVING"
        assert await client.health("rag.v1.AnswerService") == "SERVING"
        corpus = await client.get_corpus(correlation_id="aio-1")
        assert corpus.loaded and client.last_correlation_id == "aio-1"
        drugs = await client.list_drugs()
        drug = next(d for d in drugs if "chong_chi_dinh" in d.section_keys)
        reply = await client.retrieve(drug_id=drug.drug_id, section_key="chong_chi_dinh")
        assert reply.evidence and all(e.drug_id == drug.drug_id for e in reply.evidence)
        free = await client.retrieve(f"chống chỉ định của {drug.drug_id}")
        assert free.decision.kind != common_pb2.DECISION_KIND_UNSPECIFIED
        understood = await client.understand(f"liều dùng của {drug.drug_id}")
        assert drug.drug_id in understood.frame.drug_ids
        indication = await client.lookup_indication("tăng huyết áp")
        assert indication.decision.kind != common_pb2.DECISION_KIND_UNSPECIFIED
        assessed = await client.assess_patient([drug.drug_id], common_pb2.PatientContext(pregnant=True))
        assert assessed.decision.kind != common_pb2.DECISION_KIND_UNSPECIFIED
        events = [e async for e in client.ask("liều dùng của novadiamin", correlation_id="aio-ask-1")]
        assert events[-1].WhichOneof("event") == "final"
        assert events[-1].final.decision.kind == common_pb2.DECISION_KIND_ANSWERABLE
        assert client.last_correlation_id == "aio-ask-1"
        with pytest.raises(InvalidRequest) as bad:
            await client.retrieve(drug_id="Not A Slug", section_key="nope", correlation_id="aio-bad-1")
        assert {v.field for v in bad.value.violations} == {"drug_id", "section_key"}
        assert bad.value.correlation_id == "aio-bad-1"
        with pytest.raises(InvalidRequest):
            [e async for e in client.ask("")]
        with pytest.raises(InvalidRequest):
            await client.upload_document(b"hello, not a pdf", filename="x.pdf")


def test_clients_with_api_keys(rag_server_process: Any, tmp_path: Path) -> None:
    data_dir = tmp_path / "keyed"
    store = KeyStore(data_dir)
    _, reader = store.add("reader", "query")
    _, burster = store.add("burster", "query")
    server = rag_server_process(
        {"RAG_LOAD_SAMPLE_ON_START": "false", "RAG_RATE_LIMIT_PER_S": "0.2", "RAG_RATE_LIMIT_BURST": "3"},
        data_dir=data_dir,
    )
    output = server.output()
    assert "auth on" in output and "authorization: Bearer" in output
    assert reader not in output and burster not in output

    with FormularyClient(server.target, timeout=30) as anonymous:
        assert anonymous.health() == "SERVING"  # health stays open
        with pytest.raises(Unauthenticated) as missing:
            anonymous.get_corpus(correlation_id="keyless-1")
    assert missing.value.code == grpc.StatusCode.UNAUTHENTICATED
    assert missing.value.reason == "API_KEY_MISSING" and missing.value.correlation_id == "keyless-1"
    assert missing.value.error_metadata == {"method": "/rag.v1.IngestionService/GetCorpus", "scope": "query"}

    wrong_key = reader[:-1] + ("A" if reader[-1] != "A" else "B")
    with FormularyClient(server.target, api_key=wrong_key, timeout=30) as wrong, \
            pytest.raises(Unauthenticated) as invalid:
        wrong.get_corpus()
    assert invalid.value.reason == "API_KEY_INVALID" and reader not in str(invalid.value)

    with FormularyClient(server.target, api_key=reader, timeout=30) as client:
        assert client.get_corpus().loaded is False
        with pytest.raises(PermissionDenied) as denied:
            client.upload_document(b"%PDF-1.4 tiny", filename="a.pdf")
    assert denied.value.reason == "SCOPE_MISSING" and denied.value.error_metadata["scope"] == "ingest"
    assert isinstance(denied.value, RagError)

    import asyncio

    async def burst() -> ResourceExhausted:
        async with AsyncFormularyClient(server.target, api_key=burster, timeout=30) as client:
            for _ in range(3):
                assert (await client.get_corpus()).loaded is False
            with pytest.raises(ResourceExhausted) as limited:
                await client.get_corpus()
            return limited.value

    limited = asyncio.run(burst())
    assert limited.code == grpc.StatusCode.RESOURCE_EXHAUSTED and limited.reason == "RATE_LIMITED"
    assert limited.retry_delay is not None and 0 < limited.retry_delay <= 5.001
