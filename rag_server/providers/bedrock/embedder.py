"""Cohere embeddings served by AWS Bedrock (`bedrock-runtime` `invoke_model`)."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from rag_server.providers._dims import KNOWN_DIMS
from rag_server.providers._vectors import batches, unit
from rag_server.providers.base import EmbedKind, ProviderError

BEDROCK_MAX_TEXTS = 96
_INPUT_TYPES = {"document": "search_document", "query": "search_query"}


class BedrockEmbedder:
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
        self.model_id = model_id
        self.model = f"bedrock/{model_id}"
        self.batch_size = max(1, min(batch_size, BEDROCK_MAX_TEXTS))
        self._dims = dims or KNOWN_DIMS.get(model_id)
        self._probe_lock = threading.Lock()

    @property
    def dims(self) -> int:
        if self._dims is None:
            with self._probe_lock:
                if self._dims is None:
                    self._dims = len(self._call(["dims"], "query")[0])
        return self._dims

    @dims.setter
    def dims(self, value: int) -> None:
        self._dims = value

    def _call(self, texts: list[str], kind: EmbedKind) -> list[list[float]]:
        body = {"texts": texts, "input_type": _INPUT_TYPES[kind], "truncate": "END"}
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

    def embed(self, texts: Sequence[str], kind: EmbedKind) -> list[list[float]]:
        out: list[list[float]] = []
        for batch in batches(texts, self.batch_size):
            vectors = self._call(batch, kind)
            out.extend(unit(v, self._dims) for v in vectors)
            if self._dims is None and vectors:
                self._dims = len(vectors[0])
        return out
