"""An LLM understander (RAG_UNDERSTANDER=bedrock, Converse): proposes the question's frame as JSON, bounded
by what the service already knows. The deterministic reading has the last word on what it reads itself
(the situation, the scope, the asked terms, the follow-up and the clarify loop: understanding.reading).

* Drugs: the catalog's shortlist only: the drugs `Catalog.find` matches in the question (exact, prefix or
  typo, ambiguous ones with all their drug_ids) and the conversation's earlier drugs (`Recalled`). A
  drug_id outside it, in drug_ids or in the patient's current medications, is MalformedOutput.
* Section: "" or a key of the section vocabulary, else MalformedOutput; turn_type a TurnType value, else
  MalformedOutput; bad JSON, a missing or extra key, a wrong type: MalformedOutput.
* Patient facts: the keyword reading of the question (understanding/patient.py: canonical conditions and
  age bands, current medications) plus what the model states (age, pregnancy, breastfeeding, renal and
  hepatic impairment, shortlisted current medications).
* The decision reason follows the frame as the offline reading sets it: out_of_scope and smalltalk their
  own; a named drug the formulary lacks (and none of the shortlist) drug_not_found; a clarify, or a turn
  that needs a drug and has none, missing_required_field (ambiguous_drug with two drugs or more, listed;
  the section asked for when the one drug is known);
  an indication lookup without a condition asks for it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from rag_server.domain import Reason
from rag_server.providers.base import MalformedOutput
from rag_server.providers.llm import prompts
from rag_server.providers.llm.bedrock_converse import BedrockConverse
from rag_server.providers.llm.schemas import UnderstandingReply, parse
from rag_server.understanding.catalog import Catalog, Mention
from rag_server.understanding.frame import PatientFacts, Prior, QueryFrame, Reading, TurnType
from rag_server.understanding.patient import with_groups
from rag_server.understanding.reading import follow, read
from rag_server.vocabulary.language import Language
from rag_server.vocabulary.sections import Vocabulary

MAX_SHORTLIST = 24  # drug_ids offered to the model
HISTORY_TURNS = 4  # earlier turns shown (the latest ones)
HISTORY_TURN_CHARS = 300  # of each
MAX_ECHO_CHARS = 40  # an unlisted drug name echoed in drug_not_found's detail is cut to this
_NEEDS_DRUG = (TurnType.SECTION_QUESTION, TurnType.DRUG_OVERVIEW, TurnType.PATIENT_ASSESSMENT)


def shortlist(mentions: tuple[Mention, ...], prior: Prior, catalog: Catalog | None) -> dict[str, str]:
    """drug_id -> display name: the question's drugs, then the conversation's, at most MAX_SHORTLIST."""
    ids = list(dict.fromkeys([d for m in mentions for d in m.drug_ids] + list(prior.drug_ids)))
    return {d: catalog.display_name(d) if catalog is not None else d for d in ids[:MAX_SHORTLIST]}


def prompt_for(question: str, prior: Prior, drugs: dict[str, str], vocabulary: Vocabulary) -> str:
    candidates = "\n".join(f"{d}: {name}" for d, name in drugs.items()) or "(none)"
    sections = "\n".join(f"{k}: {vocabulary.title(k)}" for k in vocabulary.keys)
    known = (
        f"earlier drugs: {', '.join(prior.drug_ids) or '(none)'}; "
        f"earlier section: {prior.section_key or '(none)'}"
    )
    turns = prior.turns[-HISTORY_TURNS:]
    history = "\n".join(f"{role}: {text[:HISTORY_TURN_CHARS]}" for role, text in turns) or "(none)"
    return "\n\n".join(
        [
            f"<candidates>\n{candidates}\n</candidates>",
            f"<sections>\n{sections}\n</sections>",
            f"<known>\n{known}\n</known>",
            prompts.fence("history", history),
            prompts.fence("question", question),
        ]
    )


class BedrockUnderstander:
    name = "bedrock"
    blocking = True  # a network call: scheduled on the worker pool

    def __init__(self, chat: BedrockConverse) -> None:
        self.chat = chat

    def understand(self, question: str, prior: Prior, catalog: Catalog | None, language: Language) -> Reading:
        base = read(question, catalog, language)
        if (
            base.frame.turn_type is TurnType.OUT_OF_SCOPE
            and base.reason is Reason.OUT_OF_SCOPE
            and not base.frame.drug_ids
            and base.frame.situation.kind.value == "none"
        ):
            # a non-human subject or nothing medical: what the model says cannot widen the scope
            return follow(base, prior, language)
        drugs = shortlist(base.frame.drug_mentions, prior, catalog)
        text = self.chat.complete(
            prompts.UNDERSTAND_SYSTEM, prompt_for(question, prior, drugs, language.vocabulary)
        )
        reply = parse(text, UnderstandingReply, "understanding")
        proposed = to_reading(reply, base.frame, drugs, language)
        return follow(proposed, prior, language)


def to_reading(
    reply: UnderstandingReply, base: QueryFrame, drugs: dict[str, str], language: Language
) -> Reading:
    """The validated reply over the deterministic reading (MalformedOutput when it steps outside its
    bounds); what the service reads itself (situation, terms, mentions) stays the reading's."""
    vocabulary = language.vocabulary
    try:
        turn = TurnType(reply.turn_type)
    except ValueError:
        raise MalformedOutput(f"understanding: turn_type {reply.turn_type[:40]!r} is no turn type") from None
    stray = [d for d in (*reply.drug_ids, *reply.patient.current_medications) if d not in drugs]
    if stray:
        raise MalformedOutput(f"understanding: drug_id {stray[0][:40]!r} is not in the catalog's shortlist")
    if reply.section_key and reply.section_key not in vocabulary.sections:
        raise MalformedOutput(f"understanding: section_key {reply.section_key[:40]!r} is no vocabulary key")
    frame = base.but(
        turn_type=turn,
        drug_ids=tuple(dict.fromkeys(reply.drug_ids)),
        section_key=reply.section_key,
        indication=reply.indication,
        patient=with_groups(_merged(base.patient, reply), language.rules),
        missing_fields=(),
    )
    return _consistent(frame, reply, drugs, language.strings.details)


def _merged(facts: PatientFacts, reply: UnderstandingReply) -> PatientFacts:
    stated = reply.patient
    return dataclasses.replace(
        facts,
        current_medications=tuple(dict.fromkeys([*facts.current_medications, *stated.current_medications])),
        age_years=facts.age_years if facts.age_years is not None else stated.age_years,
        pregnant=facts.pregnant or stated.pregnant,
        breastfeeding=facts.breastfeeding or stated.breastfeeding,
        renal_impairment=facts.renal_impairment or stated.renal_impairment,
        hepatic_impairment=facts.hepatic_impairment or stated.hepatic_impairment,
    )


def _consistent(
    frame: QueryFrame, reply: UnderstandingReply, drugs: dict[str, str], details: Mapping[str, str]
) -> Reading:
    """The frame made consistent and the reason it cannot be acted on as is, if any (`details`:
    strings.toml [details], what a clarifying question asks for)."""
    turn = frame.turn_type
    if turn == TurnType.OUT_OF_SCOPE:
        return Reading(frame, Reason.OUT_OF_SCOPE)
    if turn == TurnType.SMALLTALK:
        return Reading(frame, Reason.SMALLTALK)
    if reply.unlisted_drugs and not frame.drug_ids:
        if turn == TurnType.CLARIFY:
            turn = TurnType.SECTION_QUESTION if frame.section_key else TurnType.FREE_FORM
        detail = ", ".join(n[:MAX_ECHO_CHARS] for n in reply.unlisted_drugs[:3])
        return Reading(frame.but(turn_type=turn, missing_fields=("drug_id",)), Reason.DRUG_NOT_FOUND, detail)
    if turn == TurnType.INDICATION_LOOKUP:
        frame = frame.but(section_key="", section_cue=None)
        if not frame.indication:
            return Reading(
                frame.but(turn_type=TurnType.CLARIFY, missing_fields=("indication",)),
                Reason.MISSING_REQUIRED_FIELD,
                details["missing_indication"],
            )
        return Reading(frame)
    if turn == TurnType.CLARIFY and len(frame.drug_ids) > 1:
        return Reading(
            frame.but(missing_fields=("drug_id",)),
            Reason.AMBIGUOUS_DRUG,
            " | ".join(drugs[d] for d in frame.drug_ids),
        )
    if turn == TurnType.CLARIFY and frame.drug_ids:  # the drug is known, what is asked of it is not
        return Reading(
            frame.but(missing_fields=("section_key",)),
            Reason.MISSING_REQUIRED_FIELD,
            details["missing_section"],
        )
    if turn == TurnType.CLARIFY or (turn in _NEEDS_DRUG and not frame.drug_ids):
        return Reading(
            frame.but(turn_type=TurnType.CLARIFY, missing_fields=("drug_id",)),
            Reason.MISSING_REQUIRED_FIELD,
            details["missing_drug"],
        )
    if turn == TurnType.SECTION_QUESTION and not frame.section_key:
        return Reading(frame.but(turn_type=TurnType.FREE_FORM))  # as the router reads it: free-form
    if turn == TurnType.PATIENT_ASSESSMENT and frame.patient.empty:
        return Reading(
            frame.but(turn_type=TurnType.SECTION_QUESTION if frame.section_key else TurnType.FREE_FORM)
        )
    return Reading(frame)
