"""The audit record of one Retrieve or Ask call, the hash chain that links the records, and its check.

An *entry* is what the servicer knew when it answered (plain JSON values, built by `build_entry` from
domain values): the question (its digest, or the text too when RAG_AUDIT_QUESTION=text), the frame acted
on, the served corpus, the evidence chunk ids and, for Ask, each claim's support spans, the providers and
models, the decision, the caller's key name, the correlation id and a UTC time. The store (audit_store.py)
appends it as record `seq` of the chain:

    body = canonical JSON of {**entry, "seq": seq, "prev_hash": hash of record seq-1 (GENESIS for seq 1)}
    hash = sha256(prev_hash + body)  (hex; UTF-8)

`walk` re-reads a stored chain and names the first record where it breaks: a record whose hash does not
match its content was changed; a sequence gap or a previous-hash mismatch means records were removed or
reordered; a head (the latest seq and hash, written with every append) ahead of the last record means the
last records were removed. Nothing here does I/O or imports a database driver.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, Protocol

from rag_server.text.normalize import nfc

FORMAT_VERSION = 1
GENESIS = "0" * 64  # prev_hash of record 1
CHAIN_KEYS = ("seq", "prev_hash", "hash")  # set by the store, never by an entry

QuestionMode = Literal["digest", "text"]
Entry = dict[str, Any]


# --- what the builder reads (protocols: the answer and retrieval types satisfy them as they are) ----------
class _Enum(Protocol):
    @property
    def name(self) -> str: ...


class DecisionLike(Protocol):
    @property
    def kind(self) -> _Enum: ...

    @property
    def reason(self) -> _Enum: ...


class SupportLike(Protocol):
    @property
    def chunk_id(self) -> str: ...

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


class ClaimLike(Protocol):
    @property
    def text(self) -> str: ...

    @property
    def source_ids(self) -> Sequence[str]: ...

    @property
    def support(self) -> Sequence[SupportLike]: ...


class ManifestLike(Protocol):
    @property
    def corpus_sha(self) -> str: ...

    @property
    def generation(self) -> str: ...


# --- canonical JSON and the chain -----------------------------------------------------------------------
def canonical(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 text as is (control characters escaped, so never a raw newline)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def chain_hash(prev_hash: str, body: str) -> str:
    return hashlib.sha256((prev_hash + body).encode("utf-8")).hexdigest()


def link(prev_hash: str, seq: int, entry: Entry) -> tuple[str, str]:
    """(body, hash) of `entry` appended as record `seq` after the record whose hash is `prev_hash`."""
    if any(key in entry for key in CHAIN_KEYS):
        raise ValueError(f"an audit entry may not set {', '.join(CHAIN_KEYS)}")
    body = canonical({**entry, "seq": seq, "prev_hash": prev_hash})
    return body, chain_hash(prev_hash, body)


def question_digest(text: str) -> str:
    """sha256 hex of the question trimmed and NFC-normalised (what an operator recomputes to find it)."""
    return hashlib.sha256(nfc(text.strip()).encode("utf-8")).hexdigest()


# --- building an entry ------------------------------------------------------------------------------------
def frame_entry(frame: Any) -> dict[str, Any] | None:
    """A QueryFrame as plain values: turn type, drugs, section, indication, patient facts, drug mentions
    (the question text itself is kept apart, under `question`). A dict is taken as already made."""
    if frame is None or isinstance(frame, dict):
        return frame
    patient = frame.patient
    return {
        "turn_type": str(frame.turn_type.value),
        "drug_ids": list(frame.drug_ids),
        "section_key": frame.section_key,
        "indication": frame.indication,
        "patient": {
            "current_medications": list(patient.current_medications),
            "conditions": list(patient.conditions),
            "age_years": patient.age_years,
            "pregnant": bool(patient.pregnant),
            "breastfeeding": bool(patient.breastfeeding),
            "renal_impairment": bool(patient.renal_impairment),
            "hepatic_impairment": bool(patient.hepatic_impairment),
            "allergies": list(patient.allergies),
            "age_months": getattr(patient, "age_months", None),
            "weight_kg": getattr(patient, "weight_kg", None),
            "groups": [str(g.value) for g in getattr(patient, "groups", ())],
        },
        "drug_mentions": [
            {"text": m.text, "drug_ids": list(m.drug_ids), "match": str(m.stage.value),
             "distance": m.distance}
            for m in frame.drug_mentions
        ],
        **_reading_entry(frame),
    }


def _reading_entry(frame: Any) -> dict[str, Any]:
    """What the one reading adds to a frame: the situation, the asked terms, the section cue, the effect of
    a "does X cause Y" question and what the earlier turn carried (absent on older frames)."""
    out: dict[str, Any] = {}
    situation = getattr(frame, "situation", None)
    if situation is not None:
        out["situation"] = {"kind": str(situation.kind.value),
                            "parts": [{"part": p.part, "text": p.text} for p in situation.parts]}
    terms = getattr(frame, "asked_terms", ())
    if terms:
        out["asked_terms"] = [t.text for t in terms]
    cue = getattr(frame, "section_cue", None)
    if cue is not None:
        out["section_cue"] = cue.text
    effect = getattr(frame, "effect", None)
    if effect is not None:
        out["effect"] = effect.text
    carried = getattr(frame, "carried", None)
    if carried:
        out["carried"] = {"drug_ids": list(carried.drug_ids), "section_key": carried.section_key}
    return out


def claim_entry(claim: ClaimLike) -> dict[str, Any]:
    """A verified claim: the digest of its text, the chunks it cites and its [start, end) spans in them."""
    return {
        "text_sha256": hashlib.sha256(claim.text.encode("utf-8")).hexdigest(),
        "source_ids": list(claim.source_ids),
        "support": [{"chunk_id": s.chunk_id, "start": s.start, "end": s.end} for s in claim.support],
    }


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def build_entry(
    *,
    rpc: str,
    question: str,
    frame: Any,
    decision: DecisionLike,
    evidence_chunk_ids: Iterable[str],
    manifest: ManifestLike | None,
    providers: dict[str, dict[str, str]],
    caller: str,
    correlation_id: str,
    question_mode: QuestionMode = "digest",
    claims: Iterable[ClaimLike] = (),
    route: str = "",
    conversation_id: str = "",
    at: str | None = None,
) -> Entry:
    """The entry of one call, from the domain values its servicer has (one call, no I/O). `caller` is the
    API key's name ("" when auth is off is stored as "anonymous")."""
    asked: dict[str, str] | None = None
    if question.strip():
        asked = {"sha256": question_digest(question)}
        if question_mode == "text":
            asked["text"] = nfc(question.strip())
    entry: Entry = {
        "v": FORMAT_VERSION,
        "at": at or utc_now(),
        "rpc": rpc,
        "correlation_id": correlation_id,
        "caller": caller or "anonymous",
        "question": asked,
        "frame": frame_entry(frame),
        "corpus": {
            "corpus_sha": manifest.corpus_sha if manifest is not None else "",
            "generation": manifest.generation if manifest is not None else "",
        },
        "route": route,
        "evidence_chunk_ids": list(dict.fromkeys(evidence_chunk_ids)),
        "providers": providers,
        "decision": {"kind": decision.kind.name.lower(), "reason": decision.reason.name.lower()},
    }
    if rpc.startswith("AnswerService/"):
        entry["claims"] = [claim_entry(c) for c in claims]
        entry["conversation_id"] = conversation_id
    return entry


# --- providers and models ---------------------------------------------------------------------------------
def _model_of(part: Any) -> str:
    """The model id of an LLM part (its Converse / Chat client) or of a hosted reranker; "" when none."""
    for owner in (getattr(part, "chat", None), part, getattr(part, "inner", None)):
        for attribute in ("model_id", "model"):
            value = getattr(owner, attribute, None) if owner is not None else None
            if isinstance(value, str) and value:
                return value
    return ""


def _named(name: str, model: str = "") -> dict[str, str]:
    return {"name": name, "model": model} if model else {"name": name}


@dataclass(frozen=True)
class ProviderVersions:
    """What answered, fixed for the life of the process: `retrieval` (embedder, reranker) for Retrieve,
    `ask` (those plus understander, generator and judge) for Ask."""

    retrieval: dict[str, dict[str, str]] = field(default_factory=dict)
    ask: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, embedder_name: str, embedder: Any, reranker: Any, parts: Any) -> ProviderVersions:
        retrieval = {
            "embedder": _named(embedder_name, str(getattr(embedder, "model", "") or "")),
            "reranker": _named(str(reranker.name), _model_of(reranker)) if reranker is not None
            else _named("none"),
        }
        ask = dict(retrieval)
        if parts is not None:
            for role in ("understander", "generator", "judge"):
                part = getattr(parts, role)
                ask[role] = _named(str(part.name), _model_of(part))
        return cls(retrieval, ask)


# --- the check --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Stored:
    """One record as a store holds it: `body` is the hashed text; `seq` and `prev_hash` are the columns of
    a database row (None in the file, where they exist only inside the body); `where` names it."""

    body: str
    hash: str
    where: str
    seq: int | None = None
    prev_hash: str | None = None


@dataclass(frozen=True)
class Head:
    seq: int
    hash: str


class Break(StrEnum):
    CHANGED = "changed"
    REMOVED_OR_REORDERED = "removed or reordered"
    LAST_REMOVED = "last record removed"


@dataclass
class Verdict:
    records: int = 0
    last: Head = field(default_factory=lambda: Head(0, GENESIS))
    head: Head | None = None
    broken_at: int | None = None
    kind: Break | None = None
    why: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def intact(self) -> bool:
        return self.broken_at is None

    def broke(self, seq: int, kind: Break, why: str) -> Verdict:
        self.broken_at, self.kind, self.why = seq, kind, why
        return self


def _check(stored: Stored, expected: int, prev: str) -> tuple[Break, str, int] | None:
    """Why record `expected` (after the record whose hash is `prev`) is not the one stored, or None."""
    try:
        record = json.loads(stored.body)
    except ValueError:
        return Break.CHANGED, f"{stored.where} is not a JSON record", expected
    if not isinstance(record, dict):
        return Break.CHANGED, f"{stored.where} is not a JSON record", expected
    seq = record.get("seq")
    at = seq if isinstance(seq, int) and not isinstance(seq, bool) and seq > 0 else expected
    if chain_hash(str(record.get("prev_hash", "")), stored.body) != stored.hash:
        return Break.CHANGED, f"hash mismatch: record {at} ({stored.where}) was changed", at
    if at != expected or seq != at:
        detail = f"expected seq {expected}, found seq {seq!r} ({stored.where})"
        return Break.REMOVED_OR_REORDERED, f"sequence gap: {detail}", expected
    if record.get("prev_hash") != prev:
        return (Break.REMOVED_OR_REORDERED,
                f"previous-hash mismatch: record {expected} does not follow record {expected - 1}", expected)
    if (stored.seq is not None and stored.seq != seq) or (
        stored.prev_hash is not None and stored.prev_hash != prev
    ):
        return Break.CHANGED, f"the columns of record {expected} disagree with its hashed content", expected
    return None


def walk(records: Iterable[Stored], head: Head | None) -> Verdict:
    """Check a chain in stored order against its head (None: no head was stored)."""
    verdict = Verdict(head=head)
    expected, prev = 1, GENESIS
    for stored in records:
        broken = _check(stored, expected, prev)
        if broken is not None:
            kind, why, at = broken
            return verdict.broke(at, kind, why)
        verdict.records += 1
        verdict.last = Head(expected, stored.hash)
        expected, prev = expected + 1, stored.hash
    last = verdict.last
    if head is None:
        if last.seq:
            return verdict.broke(last.seq, Break.LAST_REMOVED,
                                 "the head is missing: cannot tell whether the last records were removed")
        return verdict
    if head.seq > last.seq:
        return verdict.broke(last.seq + 1, Break.LAST_REMOVED,
                             f"the head is at seq {head.seq} but the chain ends at seq {last.seq}: "
                             f"records {last.seq + 1}..{head.seq} were removed")
    if head.seq == last.seq and head.hash != last.hash:
        return verdict.broke(last.seq, Break.CHANGED,
                             f"hash mismatch: record {last.seq} is not the one the head names (changed or "
                             "replaced)")
    if head.seq < last.seq:
        verdict.warnings.append(
            f"the head is at seq {head.seq}, behind the last record {last.seq} (a writer stopped between "
            "the append and the head update; the next append moves it)"
        )
    return verdict


def summary(body: str) -> dict[str, Any]:
    """The fields `rag-server audit show` prints of one record."""
    record = json.loads(body)
    question = record.get("question") or {}
    decision = record.get("decision") or {}
    return {
        "seq": record.get("seq"), "at": record.get("at", ""), "rpc": record.get("rpc", ""),
        "caller": record.get("caller", ""), "correlation_id": record.get("correlation_id", ""),
        "question_sha256": question.get("sha256", ""), "question": question.get("text"),
        "decision": f"{decision.get('kind', '')}/{decision.get('reason', '')}",
    }
