"""Evaluation of retrieval against a labelled question set: `rag-server eval`.

dataset (load/validate JSONL), metrics (pure scoring), runner (drives a running service over gRPC),
baseline (in-process dense-only search for comparison), report (rich tables, JSON).
"""

from rag_server.evaluation.dataset import DatasetError, Question, load_questions, parse_question
from rag_server.evaluation.metrics import EvalReport, Outcome, Rate, summarize

__all__ = [
    "DatasetError",
    "EvalReport",
    "Outcome",
    "Question",
    "Rate",
    "load_questions",
    "parse_question",
    "summarize",
]
