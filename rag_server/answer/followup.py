"""Follow-up turns: what a question leaves out, the conversation's earlier turn supplies.

* No drug named, but a section cue or a patient fact ("còn liều cho trẻ em thì sao?"), or a follow-up
  word ("nó", "thuốc này", rules.toml [conversation]): the earlier turn's drugs.
* A new drug named without a section, with a follow-up word ("còn zentavir thì sao?"): the earlier
  turn's section for the new drug.
A drug named in the turn always replaces the earlier one. Nothing else is carried over.
"""

from __future__ import annotations

import dataclasses

from rag_server.answer.memory import Recalled
from rag_server.domain import Reason
from rag_server.text.match import find_any, tokenize
from rag_server.understanding.frame import TurnType, Understanding
from rag_server.vocabulary.rules import Rules

_NEEDS_DRUG = (Reason.MISSING_REQUIRED_FIELD,)


def resolve(understanding: Understanding, recalled: Recalled, rules: Rules) -> Understanding:
    frame = understanding.frame
    if not recalled.drug_ids:
        return understanding
    followup = bool(find_any(tokenize(frame.query), rules.followup))
    needs_drug = understanding.reason in _NEEDS_DRUG and "drug_id" in frame.missing_fields
    plain_corpus = (
        not understanding.reason and frame.turn_type == TurnType.FREE_FORM and not frame.drug_ids and followup
    )
    if needs_drug or plain_corpus:
        frame = dataclasses.replace(frame, drug_ids=list(recalled.drug_ids), missing_fields=[])
        if frame.section_key:
            frame.turn_type = TurnType.SECTION_QUESTION
        elif not frame.patient.empty:
            frame.turn_type = TurnType.PATIENT_ASSESSMENT
        else:
            frame.turn_type = TurnType.FREE_FORM
        return Understanding(frame, Reason.UNSPECIFIED, "", understanding.mentions)
    keeps_section = (
        not understanding.reason
        and frame.drug_ids
        and not frame.section_key
        and followup
        and recalled.section_key
        and frame.turn_type in (TurnType.DRUG_OVERVIEW, TurnType.FREE_FORM)
    )
    if keeps_section:
        frame = dataclasses.replace(
            frame, section_key=recalled.section_key, turn_type=TurnType.SECTION_QUESTION
        )
        return Understanding(frame, Reason.UNSPECIFIED, "", understanding.mentions)
    return understanding
