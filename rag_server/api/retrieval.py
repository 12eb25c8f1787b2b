"""RetrievalService: which evidence may be used."""

from __future__ import annotations

from typing import Any

import grpc

from rag_server.api.errors import unimplemented
from rag_server.api.validation import Violations
from rag_server.app import App
from rag_server.gen.rag.v1 import retrieval_pb2, retrieval_pb2_grpc


class RetrievalServicer(retrieval_pb2_grpc.RetrievalServiceServicer):
    def __init__(self, app: App) -> None:
        self.app = app

    async def Retrieve(
        self, request: retrieval_pb2.RetrieveRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> retrieval_pb2.RetrieveResponse:
        v = Violations()
        if not (request.query.strip() or request.drug_id or request.HasField("frame")):
            v.add("query", "give a query, a drug_id (with or without section_key) or a frame")
        v.check_query("query", request.query, required=False)
        v.check_drug_id("drug_id", request.drug_id)
        v.check_section_key("section_key", request.section_key, self.app.vocabulary)
        v.raise_if_any()
        raise unimplemented("retrieval routes are not wired yet")

    async def LookupIndication(
        self, request: retrieval_pb2.LookupIndicationRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> retrieval_pb2.LookupIndicationResponse:
        v = Violations()
        v.check_query("indication", request.indication)
        v.raise_if_any()
        raise unimplemented("indication lookup (keyword pass + dense fallback)")

    async def AssessPatient(
        self, request: retrieval_pb2.AssessPatientRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> retrieval_pb2.AssessPatientResponse:
        v = Violations()
        if not request.drug_ids:
            v.add("drug_ids", "name at least one already-indicated drug")
        for i, drug_id in enumerate(request.drug_ids):
            v.check_drug_id(f"drug_ids[{i}]", drug_id)
        v.raise_if_any()
        raise unimplemented("patient assessment (relation-specific lexical facets)")

    async def ListDrugs(
        self, request: retrieval_pb2.ListDrugsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> retrieval_pb2.ListDrugsResponse:
        raise unimplemented("drug listing needs the store (ingestion)")
