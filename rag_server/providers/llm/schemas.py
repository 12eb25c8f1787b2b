"""The JSON replies the LLM providers ask for, as pydantic models, and `parse`: a reply is exactly one of
them (optionally inside one ```json fence) or it is `MalformedOutput`. Strict: no extra keys, no type
coercion ("1" is not 1, "true" is not true), every required key present. What the values must also
satisfy against the request (drug_ids of the shortlist, section keys of the vocabulary, claim indexes,
block numbers) is checked by the caller, which knows the request.
"""

from __future__ import annotations

import re
from typing import Annotated, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from rag_server.providers.base import MalformedOutput

MAX_REPLY_CHARS = 200_000  # a longer reply is no answer of ours (and is not parsed)
MAX_ITEMS = 200  # claims, drug_ids, indexes of one reply

Text = Annotated[str, StringConstraints(strip_whitespace=True, max_length=4000)]
NonEmptyText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=4000)]
Number = Annotated[int, Field(ge=0, le=100_000)]


class _Reply(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class PatientReply(_Reply):
    """What the question states about the patient (all optional: absent is not stated)."""

    age_years: Annotated[int, Field(ge=0, le=130)] | None = None
    pregnant: bool = False
    breastfeeding: bool = False
    renal_impairment: bool = False
    hepatic_impairment: bool = False
    current_medications: Annotated[list[NonEmptyText], Field(max_length=MAX_ITEMS)] = []  # drug_ids


class UnderstandingReply(_Reply):
    turn_type: NonEmptyText  # a TurnType value (checked by the caller)
    drug_ids: Annotated[list[NonEmptyText], Field(max_length=MAX_ITEMS)]
    section_key: Text  # "" or a vocabulary key
    indication: Text
    patient: PatientReply = PatientReply()
    unlisted_drugs: Annotated[list[NonEmptyText], Field(max_length=MAX_ITEMS)] = []  # named, not shortlisted


class ClaimReply(_Reply):
    text: NonEmptyText
    sources: Annotated[list[Number], Field(max_length=MAX_ITEMS)]  # evidence block numbers


class DraftReply(_Reply):
    claims: Annotated[list[ClaimReply], Field(max_length=MAX_ITEMS)]
    evidence_sufficient: bool


class JudgementReply(_Reply):
    unsupported: Annotated[list[Number], Field(max_length=MAX_ITEMS)]  # claim indexes (from 0)
    complete: bool
    missing_evidence: Annotated[list[Number], Field(max_length=MAX_ITEMS)]  # evidence block numbers


R = TypeVar("R", bound=_Reply)
_FENCED = re.compile(r"^```[A-Za-z]*[ \t]*\n(.*)\n[ \t]*```$", re.DOTALL)


def parse(text: str, model: type[R], what: str) -> R:
    """The reply as `model`, or MalformedOutput naming `what` was asked and the first problem found (never
    the reply's text: it may be long)."""
    body = text.strip()
    if len(body) > MAX_REPLY_CHARS:
        raise MalformedOutput(f"{what}: reply of {len(body)} characters")
    fenced = _FENCED.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body.startswith("{"):
        raise MalformedOutput(f"{what}: the reply is not one JSON object")
    try:
        return model.model_validate_json(body, strict=True)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "(reply)"
        raise MalformedOutput(f"{what}: {where}: {first['msg']} ({exc.error_count()} problem(s))") from None
