"""The safety pre-filter (seed 004), before understanding: a question seeking to cause harm is refused; a
question signalling an emergency (an overdose or poisoning that has happened, a child who swallowed
medicine, a severe allergic reaction, intent to self-harm) gets the message to seek urgent care at once.
The phrases are data (vocabulary/safety.toml)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from rag_server.text.match import Phrases, find_any, tokenize
from rag_server.vocabulary.safety import SafetyVocabulary


class Signal(StrEnum):
    NONE = "none"
    HARM = "harm"  # refused
    OVERDOSE = "overdose"
    ALLERGY = "allergy"
    SELF_HARM = "self_harm"

    @property
    def emergency(self) -> bool:
        return self in (Signal.OVERDOSE, Signal.ALLERGY, Signal.SELF_HARM)


@dataclass(frozen=True)
class SafetyCheck:
    signal: Signal
    phrase: str = ""


def check(question: str, vocabulary: SafetyVocabulary) -> SafetyCheck:
    """The first signal the question carries: harm before any emergency (a harmful request is refused
    even when it also names an overdose)."""
    toks = tokenize(question)
    lists: tuple[tuple[Signal, Phrases], ...] = (
        (Signal.HARM, vocabulary.harm),
        (Signal.SELF_HARM, vocabulary.self_harm),
        (Signal.OVERDOSE, vocabulary.overdose),
        (Signal.ALLERGY, vocabulary.allergy),
    )
    for signal, phrases in lists:
        found = find_any(toks, phrases)
        if found:
            return SafetyCheck(signal, found[0][1].text)
    return SafetyCheck(Signal.NONE)
