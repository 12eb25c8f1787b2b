"""Fuzzing the PDF ingest path over gRPC: malformed PDFs (the fictional sample truncated, bit-flipped,
its cross-reference table or page tree broken, random bytes behind a PDF header) are uploaded and ingested
one after another into a running server. None may end INTERNAL or UNKNOWN, and one that fails never
changes the serving corpus. RAG_FUZZ_PDFS sets the number of cases (default 24); the seed is fixed."""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import grpc
import pytest
from formulary_rag_client import FormularyClient, RagError

from formulary_fixtures.sample_formulary import render_sample

pytestmark = [pytest.mark.reliability, pytest.mark.slow]
CASES = int(os.environ.get("RAG_FUZZ_PDFS", "24"))


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randint(16, len(data) - 1)]


def _flip(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 200)):
        out[rng.randrange(16, len(out))] = rng.randrange(256)
    return bytes(out)


def _break_xref(data: bytes, rng: random.Random) -> bytes:
    at = data.rfind(b"xref")
    at = at if at > 0 else len(data) // 2
    return data[:at] + bytes(rng.randrange(256) for _ in range(rng.randint(10, 400)))


def _break_pages(data: bytes, rng: random.Random) -> bytes:
    return data.replace(b"/Pages", rng.choice([b"/Pagez", b"/Pages 0 0 R", b""]))


def _garbage(data: bytes, rng: random.Random) -> bytes:
    return b"%PDF-1.7\n" + bytes(rng.randrange(256) for _ in range(rng.randint(100, 20000)))


def _splice(data: bytes, rng: random.Random) -> bytes:
    a, b = sorted(rng.sample(range(16, len(data)), 2))
    return data[:a] + data[b:] + data[a:b]


MUTATIONS: list[Callable[[bytes, random.Random], bytes]] = [
    _truncate, _flip, _break_xref, _break_pages, _garbage, _splice,
]


def _generation(client: FormularyClient) -> str:
    return str(client.get_corpus().manifest.generation)


def _switched_to(client: FormularyClient, old: str, timeout: float = 15.0) -> str:
    """The generation a switch made, once every serving process follows it: with `serve --workers N` a
    follower takes the owner's switch a moment later, so GetCorpus may still answer the old one."""
    deadline = time.monotonic() + timeout
    while True:
        seen = {_generation(client) for _ in range(8)}  # several calls reach every worker
        if len(seen) == 1 and old not in seen:
            return seen.pop()
        if time.monotonic() > deadline:
            raise AssertionError(f"the serving processes did not settle on the new generation: {seen}")
        time.sleep(0.2)


def test_malformed_pdfs_never_end_internal_and_never_touch_the_corpus(rag_server_process: Any) -> None:
    server = rag_server_process()
    sample = render_sample().pdf
    rng = random.Random(20261201)
    codes: Counter[str] = Counter()
    with FormularyClient(server.target, timeout=300) as client:
        serving = _generation(client)
        for case in range(CASES):
            mutation = MUTATIONS[case % len(MUTATIONS)]
            data = mutation(sample, rng)
            try:
                uploaded = client.upload_document(data, filename=f"fuzz-{case}.pdf")
                events = list(client.ingest(uploaded.document_id))
                summary = events[-1].summary
                codes["OK"] += 1
                if summary.switched:  # a mutation the parser took in full: a legitimate new corpus
                    serving = _switched_to(client, serving)
            except RagError as err:
                codes[err.code.name] += 1
                assert err.code not in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN), (
                    f"case {case} ({mutation.__name__}): {err}"
                )
            assert _generation(client) == serving, f"case {case} ({mutation.__name__}) changed the corpus"
        assert client.retrieve(drug_id="zelvorin", section_key="chong_chi_dinh").evidence  # still serving
    print(f"\ningest fuzz: {CASES} malformed PDFs -> {dict(codes)}")
    assert sum(codes.values()) == CASES
