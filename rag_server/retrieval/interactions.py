"""Medicines (as clinicians type them) against a monograph's interaction text, and how each matched.

For one medicine (rag_server.understanding.medications) and one chunk:
  * by name: a word of the chunk has the same spelling-variant key as a specific word of the medicine's
    name, or of the monograph title / INN it resolved to -> EXACT (same folded word) or VARIANT; within a
    bounded typo -> TYPO. Keys shorter than 5 letters must be the same word (accents included when typed)
    or the variant of a longer typed word ("lithium" for "Lithi").
  * by class: the chunk names (any alias of) a class the medicine belongs to -> CLASS, with how the
    membership is known (ATC code, Loại thuốc line, clinical vocabulary).
A chunk with a name match beats one with a class match only. Nothing found stays nothing: the facet is
INSUFFICIENT_EVIDENCE, never "safe".
Cost: one pass over each candidate chunk's words per medicine key (chunks are one drug's interaction
section; medicines are bounded by the request limits).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag_server.domain import Chunk, FactMatch, MatchKind
from rag_server.text.match import Tok, find_any, tokenize, words
from rag_server.text.spelling import inn_key, typo_bound, within_typo
from rag_server.understanding.catalog import Catalog
from rag_server.understanding.drug_classes import ClassIndex, Membership
from rag_server.understanding.medications import MedicationName, name_keys
from rag_server.vocabulary.clinical import MedicationRules

_RANK = {MatchKind.EXACT: 0, MatchKind.VARIANT: 1, MatchKind.TYPO: 2, MatchKind.CLASS: 3}


@dataclass(frozen=True)
class ChunkWords:
    """A chunk's words and their spelling keys, computed once per request."""

    chunk: Chunk
    toks: tuple[Tok, ...]
    keys: tuple[str, ...]

    @classmethod
    def of(cls, chunk: Chunk) -> ChunkWords:
        toks = tuple(words(tokenize(chunk.text)))
        return cls(chunk, toks, tuple(inn_key(t.raw) for t in toks))


def medication_keys(
    medication: MedicationName, catalog: Catalog | None, rules: MedicationRules
) -> list[tuple[str, str]]:
    """(key, the word it came from) of the medicine's own name and of its monograph's title and INN."""
    out: list[tuple[str, str]] = [(k, medication.name) for k in medication.keys]
    if catalog is not None and medication.drug_id:
        for name in catalog.primary.get(medication.drug_id, ()):
            out.extend((k, name.text) for k in name_keys(name.text, rules))
    return list(dict.fromkeys(out))


def name_matches(
    medication: MedicationName, keys: Sequence[tuple[str, str]], text: ChunkWords
) -> list[FactMatch]:
    found: dict[str, FactMatch] = {}
    typed = {t.folded: t for t in tokenize(medication.name) if not t.is_punct}
    for key, source in keys:
        short = typo_bound(key) == 0
        for tok, word_key in zip(text.toks, text.keys, strict=True):
            if not word_key or tok.folded in found:
                continue
            if word_key == key:
                if short and not _short_key_fits(tok, key, typed):
                    continue
                kind = MatchKind.EXACT if tok.folded in typed else MatchKind.VARIANT
            elif not short and within_typo(key, word_key) is not None:
                kind = MatchKind.TYPO
            else:
                continue
            detail = "" if source == medication.name else f"via {source}"
            found[tok.folded] = FactMatch(
                medication.entry, medication.name, tok.raw, kind, text.chunk.chunk_id, detail
            )
    return list(found.values())


def _short_key_fits(tok: Tok, key: str, typed: dict[str, Tok]) -> bool:
    """A key of < 5 letters says little ("sắt" and "sát" share one): the same word, accents included when
    they were typed, or a longer typed word that its spelling variant shortened ("lithium" = "lithi")."""
    mine = typed.get(tok.folded)
    if mine is not None:
        return mine.loose or mine.raw == tok.raw
    return any(len(word) > len(key) + 1 and inn_key(word) == key for word in typed)


def class_matches(
    medication: MedicationName, memberships: Sequence[Membership], text: ChunkWords
) -> list[FactMatch]:
    out: list[FactMatch] = []
    for membership in memberships:
        for i, alias in find_any(text.toks, membership.drug_class.aliases):
            matched = " ".join(t.raw for t in text.toks[i : i + len(alias)])
            detail = f"{medication.name} ∈ {membership.drug_class.name} ({membership.via})"
            out.append(FactMatch(
                medication.entry, medication.name, matched, MatchKind.CLASS, text.chunk.chunk_id, detail
            ))
            break  # one occurrence per class is enough to explain the chunk
    return out


def best_chunks(
    medication: MedicationName,
    texts: Sequence[ChunkWords],
    catalog: Catalog | None,
    classes: ClassIndex,
    rules: MedicationRules,
    limit: int,
) -> list[tuple[ChunkWords, list[FactMatch]]]:
    """The chunks that speak of the medicine (by name before by class), best first, at most `limit`."""
    keys = medication_keys(medication, catalog, rules)
    memberships = classes.classes_of(medication)
    scored: list[tuple[tuple[int, int, int], ChunkWords, list[FactMatch]]] = []
    for text in texts:
        matches = name_matches(medication, keys, text) or class_matches(medication, memberships, text)
        if matches:
            rank = min(_RANK.get(m.kind, 9) for m in matches)
            scored.append(((rank, -len(matches), text.chunk.part_index), text, matches))
    scored.sort(key=lambda s: (s[0], s[1].chunk.chunk_id))
    return [(text, matches) for _, text, matches in scored[:limit]]
