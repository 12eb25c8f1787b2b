"""Query understanding without an LLM: drug catalog, section phrases, patient facts -> QueryFrame."""

from rag_server.understanding.catalog import Catalog, DrugInfo, Mention, build_catalog
from rag_server.understanding.frame import QueryFrame, TurnType, Understanding, build_frame
from rag_server.understanding.patient import PatientFacts
from rag_server.vocabulary.rules import Rules, load_rules

__all__ = [
    "Catalog",
    "DrugInfo",
    "Mention",
    "PatientFacts",
    "QueryFrame",
    "Rules",
    "TurnType",
    "Understanding",
    "build_catalog",
    "build_frame",
    "load_rules",
]
