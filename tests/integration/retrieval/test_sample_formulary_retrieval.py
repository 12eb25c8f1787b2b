"""Retrieval over the bundled FICTIONAL sample formulary PDF (formulary_fixtures), loaded by the server
itself at start (RAG_LOAD_SAMPLE_ON_START), through a real grpc.aio server on 127.0.0.1:0."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from rag_server.config import Settings
from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.gen.rag.v1 import retrieval_pb2 as rpb
from rag_server.gen.rag.v1 import retrieval_pb2_grpc
from rag_server.server import RunningServer, start_server

pytestmark = [pytest.mark.integration, pytest.mark.slow]
R = pb.DecisionReason


@pytest.fixture(scope="module")
async def stub(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[retrieval_pb2_grpc.RetrievalServiceStub]:
    data_dir = Path(tmp_path_factory.mktemp("sample-retrieval"))
    settings = Settings(port=0, data_dir=data_dir, load_sample_on_start=True)  # type: ignore[arg-type]
    running: RunningServer = await start_server(settings)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
            drugs = await stub.ListDrugs(rpb.ListDrugsRequest())
            if not drugs.drugs:
                pytest.fail("the sample formulary was not loaded at start")
            yield stub
    finally:
        await running.stop(0)


@pytest.mark.parametrize(
    ("query", "drug_id", "section"),
    [
        ("chống chỉ định của zelvorin", "zelvorin", "chong_chi_dinh"),
        ("zelvorin chỉ định cho bệnh gì", "zelvorin", "chi_dinh"),
        ("chong chi dinh zelvorin", "zelvorin", "chong_chi_dinh"),
        ("uống quá liều acid pelmironic thì xử trí sao", "acid-pelmironic", "qua_lieu_va_xu_tri"),
        ("Zelvocard dùng thế nào", "zelvorin", "lieu_luong_va_cach_dung"),
        ("velanstat có tác dụng phụ gì", "mirvetan", "tac_dung_khong_mong_muon"),
        ("phụ nữ có thai dùng keptralon được không", "keptralon", "thoi_ky_mang_thai"),
        ("bảo quản travoxan ở nhiệt độ nào", "travoxan", "do_on_dinh_va_bao_quan"),
        ("novadiamin tương tác với thuốc nào", "novadiamin", "tuong_tac_thuoc"),
        ("zelvorn liều dùng", "zelvorin", "lieu_luong_va_cach_dung"),
    ],
)
async def test_retrieve_query_hits_the_section(
    stub: retrieval_pb2_grpc.RetrievalServiceStub, query: str, drug_id: str, section: str
) -> None:
    reply = await stub.Retrieve(rpb.RetrieveRequest(query=query))
    assert reply.evidence, reply.decision
    assert {(e.drug_id, e.section_key) for e in reply.evidence if e.score_kind == pb.SCORE_KIND_EXACT} == {
        (drug_id, section)
    }
    assert reply.route in (rpb.ROUTE_SECTION, rpb.ROUTE_SECTION_POOLED)
    parts = [e.part_index for e in reply.evidence if e.score_kind == pb.SCORE_KIND_EXACT]
    assert parts == sorted(parts) and parts[0] == 0  # the whole section, from its first part
    assert reply.decision.kind in (pb.DECISION_KIND_ANSWERABLE, pb.DECISION_KIND_VERIFY_PDF)


async def test_bare_name_and_free_form(stub: retrieval_pb2_grpc.RetrievalServiceStub) -> None:
    overview = await stub.Retrieve(rpb.RetrieveRequest(query="zelvorin"))
    assert overview.route == rpb.ROUTE_DRUG_OVERVIEW
    assert overview.evidence[0].drug_name == "ZELVORIN" and not overview.evidence[0].text.startswith("【")
    free = await stub.Retrieve(rpb.RetrieveRequest(query="zelvorin chẹn kênh gì"))
    assert free.route == rpb.ROUTE_FREE_FORM and 0 < len(free.evidence) <= 6
    assert {e.drug_id for e in free.evidence} == {"zelvorin"}
    effect = await stub.Retrieve(rpb.RetrieveRequest(query="zelvorin có gây phù chân không"))
    assert effect.route == rpb.ROUTE_EFFECT and effect.evidence  # "Phù cổ chân" (a synonym)
    assert {e.section_key for e in effect.evidence} == {"tac_dung_khong_mong_muon"}


async def test_sample_indications(stub: retrieval_pb2_grpc.RetrievalServiceStub) -> None:
    reply = await stub.LookupIndication(rpb.LookupIndicationRequest(indication="tăng huyết áp"))
    assert reply.match_stage == "keyword" and "zelvorin" in [c.drug_id for c in reply.candidates]
    # who has it, and for how long, name nothing to look up: the condition is found by its name
    told_as = ("mẹ em bị tăng huyết áp", "me em bi tang huyet ap lau nam", "con bị huyết áp cao mấy năm nay")
    for told in told_as:
        reply = await stub.LookupIndication(rpb.LookupIndicationRequest(indication=told))
        assert reply.match_stage == "synonym", (told, reply.match_stage)
        assert "zelvorin" in [c.drug_id for c in reply.candidates], told
    for made_up in ("hội chứng tim tím do ăn kem lạnh", "bệnh xoắn khuẩn ngón chân cái"):
        reply = await stub.LookupIndication(rpb.LookupIndicationRequest(indication=made_up))
        assert not reply.candidates, [(c.drug_id, c.score) for c in reply.candidates]
        assert reply.decision.reason == R.DECISION_REASON_INSUFFICIENT_RETRIEVAL_SCORE


async def test_retrieve_reads_the_situation_first(stub: retrieval_pb2_grpc.RetrievalServiceStub) -> None:
    # an ingestion that has happened: EMERGENCY with the drug's overdose section, never its dosing lines
    reply = await stub.Retrieve(rpb.RetrieveRequest(query="bé 2 tuổi nhà tôi vừa nuốt 5 viên keptralon"))
    assert reply.decision.reason == R.DECISION_REASON_EMERGENCY and "115" in reply.decision.message
    assert reply.evidence and {e.section_key for e in reply.evidence} == {"qua_lieu_va_xu_tri"}
    # a reaction happening now: EMERGENCY with what the book says to do about it (managing the ADR)
    now = "con uống keptralon giờ tự nhiên khó thở, sưng môi"
    reaction = await stub.Retrieve(rpb.RetrieveRequest(query=now))
    assert reaction.decision.reason == R.DECISION_REASON_EMERGENCY
    assert reaction.evidence and {e.section_key for e in reaction.evidence} == {"huong_dan_cach_xu_tri_adr"}
    # a harm request: refused, no evidence
    harm = await stub.Retrieve(rpb.RetrieveRequest(query="cho chồng uống bao nhiêu viên keptralon thì chết"))
    assert harm.decision.reason == R.DECISION_REASON_HARMFUL_REQUEST and not harm.evidence
    # a general overdose question stays answerable
    general = await stub.Retrieve(rpb.RetrieveRequest(query="xử trí quá liều keptralon thế nào"))
    assert general.decision.reason == R.DECISION_REASON_GROUNDED_EVIDENCE_AVAILABLE
