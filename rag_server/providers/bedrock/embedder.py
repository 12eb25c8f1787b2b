"""Cohere embeddings served by AWS Bedrock (`bedrock-runtime` `invoke_model`)."""

from __future__ import annotations

import json
from typing import Any

from rag_server.providers._hosted import INPUT_TYPES, HostedEmbedder
from rag_server.providers.base import EmbedKind, ProviderError

BEDROCK_MAX_TEXTS = 96


class BedrockEmbedder(HostedEmbedder):
    # An ingest keeps this many requests in flight (RAG_EMBED_CONCURRENCY overrides): each waits on the
    # network, not on this machine's cores. The client is thread-safe; rate limits (HTTP 429) are retried by
    # the SDK and, if they persist, fail the batch (the batches already back stay cached).
    concurrent_batches = 4

    def __init__(
        self,
        model_id: str,
        *,
        region: str = "ap-southeast-1",
        client: Any = None,
        batch_size: int = BEDROCK_MAX_TEXTS,
        dims: int | None = None,
    ) -> None:
        if client is None:
            import boto3

            client = boto3.client("bedrock-runtime", region_name=region)
        self._client = client
        super().__init__(model_id, batch_size, BEDROCK_MAX_TEXTS, dims)
        self.model = f"bedrock/{model_id}"

    def _call(self, texts: list[str], kind: EmbedKind) -> list[list[float]]:
        body = {"texts": texts, "input_type": INPUT_TYPES[kind], "truncate": "END"}
        try:
            response = self._client.invoke_model(
                modelId=self.model_id,
                body=json.dumps(body, ensure_ascii=False).encode("utf-8"),
                contentType="application/json",
                accept="application/json",
            )
            payload = json.loads(response["body"].read())
        except Exception as exc:  # botocore ClientError, connection errors, bad JSON
            raise ProviderError(f"bedrock invoke_model ({self.model_id}) failed: {exc}") from exc
        embeddings = payload.get("embeddings") if isinstance(payload, dict) else None
        if isinstance(embeddings, dict):  # embedding_types form: {"float": [[...]]}
            embeddings = embeddings.get("float")
        if not isinstance(embeddings, list) or len(embeddings) != len(texts):
            raise ProviderError(f"bedrock returned no float embeddings for {len(texts)} texts")
        return [list(v) for v in embeddings]

