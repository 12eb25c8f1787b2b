"""LLM providers make network calls: tried on the event loop (retrieval/inline.py), they move to the
worker pool before touching their client; the offline ones run where they are called."""

from __future__ import annotations

from typing import Any

import pytest

from rag_server.answer.entail import OfflineJudge
from rag_server.answer.generate import OfflineGenerator
from rag_server.answer.llm_entail import BedrockJudge
from rag_server.answer.llm_generate import BedrockGenerator, CohereGenerator
from rag_server.answer.llm_understand import BedrockUnderstander
from rag_server.answer.memory import Recalled
from rag_server.answer.model import Draft, GenerationRequest, Plan
from rag_server.retrieval.inline import NeedsWorker, inline


class Untouchable:
    """A provider client that must never be reached while running inline."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the client was used inline ({name})")


REQUEST = GenerationRequest("q", Plan.WHOLE_SECTION, (), 4)


@pytest.mark.parametrize(
    "call",
    [
        lambda: BedrockGenerator(Untouchable()).generate(REQUEST),  # type: ignore[arg-type]
        lambda: CohereGenerator(Untouchable()).generate(REQUEST),  # type: ignore[arg-type]
        lambda: BedrockJudge(Untouchable()).judge(Draft((), True), (), Plan.WHOLE_SECTION, "q"),  # type: ignore[arg-type]
        lambda: BedrockUnderstander(Untouchable()).understand("q", Recalled(), Untouchable()),  # type: ignore[arg-type]
    ],
)
def test_llm_providers_move_to_the_worker_pool(call: Any) -> None:
    with inline(), pytest.raises(NeedsWorker):
        call()


def test_offline_providers_run_inline() -> None:
    with inline():
        assert OfflineGenerator().generate(REQUEST).claims == ()
        assert OfflineJudge().judge(Draft((), True), (), Plan.WHOLE_SECTION, "q").complete is False
