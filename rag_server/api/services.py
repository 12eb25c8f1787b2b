"""Every service of the server registered through the call plumbing: the four rag.v1 services, health (a
status per service) and reflection. The one place outside the servicers that knows the generated rag.v1
code (server.py composes the server without it). A follower worker of `serve --workers` registers the
relay of IngestionService (api/relay.py: Ingest and UploadDocument handed to the owner worker); the owner's
relay port registers its IngestionService alone (`add_relay_service`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grpc_health.v1 import health_pb2, health_pb2_grpc

from rag_server.api import reflection
from rag_server.api.answer import AnswerServicer
from rag_server.api.health import HealthServicer
from rag_server.api.ingestion import IngestionServicer
from rag_server.api.relay import RelayIngestionServicer
from rag_server.api.retrieval import RetrievalServicer
from rag_server.api.understanding import UnderstandingServicer
from rag_server.app import App
from rag_server.gen.rag.v1 import (
    answer_pb2,
    answer_pb2_grpc,
    ingestion_pb2,
    ingestion_pb2_grpc,
    retrieval_pb2,
    retrieval_pb2_grpc,
    understanding_pb2,
    understanding_pb2_grpc,
)

SERVICE_NAMES = (
    understanding_pb2.DESCRIPTOR.services_by_name["UnderstandingService"].full_name,
    retrieval_pb2.DESCRIPTOR.services_by_name["RetrievalService"].full_name,
    answer_pb2.DESCRIPTOR.services_by_name["AnswerService"].full_name,
    ingestion_pb2.DESCRIPTOR.services_by_name["IngestionService"].full_name,
)


def add_services(
    registrar: Any, app: App, progress: Callable[[str, int, int], None] | None,
    relay_target: str | None = None,
) -> tuple[HealthServicer, IngestionServicer]:
    """Register every service on `registrar` (api/calls.py Registrar: each handler wrapped once);
    `progress` is told each Ingest progress event (the metrics). `relay_target`: a follower worker of
    `serve --workers` hands Ingest and UploadDocument to the owner there (a RelayIngestionServicer, whose
    channel the server closes). Returns health (the server sets its statuses) and ingestion (its uploads
    folder is swept, or, the owner worker's, it is served on the relay port too)."""
    understanding_pb2_grpc.add_UnderstandingServiceServicer_to_server(UnderstandingServicer(app), registrar)
    retrieval_pb2_grpc.add_RetrievalServiceServicer_to_server(RetrievalServicer(app), registrar)
    answer_pb2_grpc.add_AnswerServiceServicer_to_server(AnswerServicer(app), registrar)
    ingestion: IngestionServicer
    if relay_target is not None:
        ingestion = RelayIngestionServicer(app, relay_target)
    else:
        ingestion = IngestionServicer(app, progress=progress)
    ingestion_pb2_grpc.add_IngestionServiceServicer_to_server(ingestion, registrar)

    health = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, registrar)
    reflection.enable(
        (*SERVICE_NAMES, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
        registrar,
    )
    return health, ingestion


def add_relay_service(registrar: Any, ingestion: IngestionServicer) -> None:
    """The owner worker's relay port (`serve --workers`): its IngestionService alone, for the Ingest and
    UploadDocument calls the other workers received."""
    ingestion_pb2_grpc.add_IngestionServiceServicer_to_server(ingestion, registrar)
