"""The answer pipeline's parts as configured (RAG_UNDERSTANDER, RAG_GENERATOR, RAG_JUDGE; memory in
PostgreSQL when RAG_DATABASE_URL is set, else in process, or in a SQLite file the workers of
`serve --workers` share). The LLM parts share one `bedrock-runtime`
client; a chosen provider's extra is required here too (check_extras already refused a missing one)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_server.answer.entail import Judge, OfflineJudge
from rag_server.answer.generate import Generator, OfflineGenerator
from rag_server.answer.memory import DatabaseMemory, InProcessMemory, Memory
from rag_server.answer.pipeline import AnswerConfig
from rag_server.config import Settings
from rag_server.extras import Extra, require
from rag_server.understanding.understander import OfflineUnderstander, Understander
from rag_server.vocabulary.language import Language

if TYPE_CHECKING:
    from rag_server.persistence.recorder import TraceRecorder
    from rag_server.providers.llm.bedrock_converse import BedrockConverse

SHORT_REPLY_TOKENS = 1024  # understanding and judging answer small JSON objects


@dataclass(frozen=True)
class AnswerParts:
    understander: Understander
    generator: Generator
    judge: Judge
    memory: Memory
    config: AnswerConfig


def build_answer_parts(settings: Settings, language: Language, traces: TraceRecorder | None,
                       shared_memory: Path | None = None) -> AnswerParts:
    """`shared_memory`: the SQLite file the workers of `serve --workers` share when there is no database."""
    memory: Memory
    if traces is not None:
        from rag_server.persistence.conversations import ConversationStore

        memory = DatabaseMemory(ConversationStore(traces.traces.pool))
    elif shared_memory is not None:
        from rag_server.answer.shared_memory import SharedMemory

        memory = SharedMemory(shared_memory, settings.memory_conversations, max(2 * settings.memory_turns, 2))
    else:
        memory = InProcessMemory(settings.memory_conversations, max(2 * settings.memory_turns, 2))
    config = AnswerConfig(
        max_claims=settings.answer_max_claims,
        max_provider_calls=settings.ask_max_provider_calls,
        timeout_s=settings.ask_timeout_s,
        memory_turns=settings.memory_turns,
    )
    bedrock = _Bedrock(settings)
    return AnswerParts(
        _understander(settings, bedrock), _generator(settings, language, bedrock), _judge(settings, bedrock),
        memory, config,
    )


class _Bedrock:
    """Converse callers for the configured models, over one `bedrock-runtime` client made on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._client: Any = None

    def converse(self, model_id: str, max_tokens: int, chosen_by: str) -> BedrockConverse:
        require(Extra.BEDROCK, chosen_by)
        from rag_server.providers.llm.bedrock_converse import BedrockConverse, make_client

        settings = self.settings
        if self._client is None:
            self._client = make_client(
                settings.bedrock_region, settings.llm_timeout_s, settings.llm_max_retries
            )
        return BedrockConverse(model_id or settings.bedrock_chat_model, client=self._client,
                               max_tokens=max_tokens)


def _understander(settings: Settings, bedrock: _Bedrock) -> Understander:
    if settings.understander == "bedrock":
        from rag_server.understanding.llm import BedrockUnderstander

        chat = bedrock.converse(settings.bedrock_understand_model,
                                min(SHORT_REPLY_TOKENS, settings.llm_max_tokens), "RAG_UNDERSTANDER=bedrock")
        return BedrockUnderstander(chat)
    return OfflineUnderstander()


def _generator(settings: Settings, language: Language, bedrock: _Bedrock) -> Generator:
    if settings.generator == "bedrock":
        from rag_server.answer.llm_generate import BedrockGenerator

        return BedrockGenerator(
            bedrock.converse(settings.bedrock_chat_model, settings.llm_max_tokens, "RAG_GENERATOR=bedrock")
        )
    if settings.generator == "cohere":
        require(Extra.COHERE, "RAG_GENERATOR=cohere")
        from rag_server.answer.llm_generate import CohereGenerator
        from rag_server.providers.llm.cohere_chat import CohereChat

        if settings.cohere_api_key is None:
            raise ValueError("generator=cohere needs RAG_COHERE_API_KEY")
        return CohereGenerator(CohereChat(
            settings.cohere_api_key.get_secret_value(),
            settings.cohere_chat_model,
            settings.cohere_base_url,
            timeout_s=settings.llm_timeout_s,
            max_retries=settings.llm_max_retries,
            max_tokens=settings.llm_max_tokens,
        ))
    return OfflineGenerator()


def _judge(settings: Settings, bedrock: _Bedrock) -> Judge:
    if settings.judge == "bedrock":
        from rag_server.answer.llm_entail import BedrockJudge

        chat = bedrock.converse(settings.bedrock_judge_model,
                                min(SHORT_REPLY_TOKENS, settings.llm_max_tokens), "RAG_JUDGE=bedrock")
        return BedrockJudge(chat)
    return OfflineJudge()


def describe(parts: AnswerParts) -> dict[str, Any]:
    return {"understander": parts.understander.name, "generator": parts.generator.name,
            "judge": parts.judge.name, "memory": type(parts.memory).__name__}
