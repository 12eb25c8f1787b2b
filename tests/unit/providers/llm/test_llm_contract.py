"""The LLM providers' contract with the rest of the service: prompt tables cover every turn type and plan,
replies are parsed strictly, the provider package stays in the shared core, and settings choose the
providers (with their extras) through the factory."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from pydantic import ValidationError

from rag_server.answer.entail import OfflineJudge
from rag_server.answer.factory import build_answer_parts, describe
from rag_server.answer.generate import OfflineGenerator
from rag_server.answer.llm_entail import BedrockJudge
from rag_server.answer.llm_generate import BedrockGenerator, CohereGenerator
from rag_server.answer.model import Plan
from rag_server.config import Settings
from rag_server.extras import Extra, needed
from rag_server.providers.base import MalformedOutput
from rag_server.providers.llm import prompts
from rag_server.providers.llm.schemas import DraftReply, JudgementReply, parse
from rag_server.understanding.frame import TurnType
from rag_server.understanding.llm import BedrockUnderstander
from rag_server.understanding.understander import OfflineUnderstander
from rag_server.vocabulary.language import load_language

ROOT = Path(__file__).resolve().parents[4]


def test_prompt_tables_cover_every_turn_type_and_plan() -> None:
    assert set(prompts.TURN_TYPES) == {t.value for t in TurnType}
    assert set(prompts.PLANS) == {p.value for p in Plan}
    assert all(name in prompts.UNDERSTAND_SYSTEM for name in prompts.TURN_TYPES)


def test_fence_keeps_its_own_tags_out() -> None:
    assert prompts.fence("question", "a </question> b < QUESTION>c") == "<question>\na   b  c\n</question>"
    assert prompts.fence("evidence", "x </question>") == "<evidence>\nx </question>\n</evidence>"


def test_parse_accepts_one_json_object_optionally_fenced_and_nothing_looser() -> None:
    fenced = '```json\n{"unsupported": [], "complete": true, "missing_evidence": []}\n```'
    assert parse(fenced, JudgementReply, "entailment").complete
    for bad in ('{"unsupported": [], "complete": "yes", "missing_evidence": []}',
                '{"unsupported": [], "complete": true, "missing_evidence": [], "why": "x"}',
                'Answer: {"unsupported": [], "complete": true, "missing_evidence": []}',
                '{"claims": [{"text": "   ", "sources": [1]}], "evidence_sufficient": true}'):
        with pytest.raises(MalformedOutput):
            parse(bad, JudgementReply if "unsupported" in bad else DraftReply, "x")


def test_the_provider_package_imports_nothing_of_the_server_side() -> None:
    server_side = ("rag_server.answer", "rag_server.understanding", "rag_server.retrieval", "rag_server.api",
                   "rag_server.persistence", "rag_server.server", "rag_server.app", "ingest")
    imported = []
    for path in (ROOT / "rag_server" / "providers" / "llm").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.append(node.module)
            elif isinstance(node, ast.Import):
                imported += [a.name for a in node.names]
    assert imported and not [m for m in imported if m.startswith(server_side)]


def test_settings_choose_the_providers_and_need_their_extras() -> None:
    language = load_language()
    offline = build_answer_parts(Settings(), language, None)  # type: ignore[call-arg]
    assert isinstance(offline.understander, OfflineUnderstander)
    assert isinstance(offline.generator, OfflineGenerator) and isinstance(offline.judge, OfflineJudge)
    assert needed(Settings()) == []  # type: ignore[call-arg]

    settings = Settings(  # type: ignore[call-arg]
        understander="bedrock", generator="bedrock", judge="bedrock", bedrock_judge_model="judge-model",
        llm_max_tokens=4096,
    )
    parts = build_answer_parts(settings, language, None)
    assert describe(parts) == {"understander": "bedrock", "generator": "bedrock", "judge": "bedrock",
                               "memory": "InProcessMemory"}
    assert isinstance(parts.understander, BedrockUnderstander) and isinstance(parts.judge, BedrockJudge)
    assert isinstance(parts.generator, BedrockGenerator)
    generator = parts.generator.chat
    assert (generator.model_id, generator.max_tokens) == (settings.bedrock_chat_model, 4096)
    assert parts.understander.chat.model_id == settings.bedrock_chat_model  # empty: the chat model
    assert (parts.judge.chat.model_id, parts.judge.chat.max_tokens) == ("judge-model", 1024)
    assert parts.understander.chat._client is parts.judge.chat._client  # one bedrock-runtime client
    chosen = ("UNDERSTANDER", "GENERATOR", "JUDGE")
    assert needed(settings) == [(Extra.BEDROCK, f"RAG_{part}=bedrock") for part in chosen]

    cohere = Settings(generator="cohere", cohere_api_key="k")  # type: ignore[call-arg, arg-type]
    assert isinstance(build_answer_parts(cohere, language, None).generator, CohereGenerator)
    assert needed(cohere) == [(Extra.COHERE, "RAG_GENERATOR=cohere")]
    with pytest.raises(ValueError, match="RAG_COHERE_API_KEY"):
        build_answer_parts(Settings(generator="cohere"), language, None)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "bad",
    [{"generator": "openai"}, {"understander": "cohere"}, {"judge": "cohere"}, {"llm_max_tokens": 10},
     {"llm_timeout_s": 0}, {"llm_max_retries": 9}, {"bedrock_chat_model": ""}, {"cohere_chat_model": ""}],
)
def test_llm_settings_are_bounded(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Settings(**bad)  # type: ignore[arg-type]
