"""Medicines as clinicians type them -> the names to look for.

One entry may hold a list ("A, B", "A + B", "A và B") and each medicine may carry a dose, a unit, a form,
a route, a frequency ("Ibuprofen 400mg x 3 lần/ngày", "miconazole (bôi)"). An entry is split on the list
separators, the words of clinical.toml [medication].strip and every number-with-unit are removed, and a
parenthesis is read as another name of the same medicine ("Bactrim (cotrimoxazol)") unless it held only
stripped words. What remains (at most `max_name_words` words) is the name.

Each name is then resolved against the catalog (exact, typo, prefix: `Catalog.find`) when it can be, and
its match keys are the spelling-variant keys (rag_server.text.spelling) of its specific words: salt words
are never matched, ions only when nothing more specific is named ("lithium carbonate" -> lithium).

Bounded: an entry is cut to MAX_ENTRY_CHARS before anything else; at most MAX_NAMES_PER_ENTRY names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag_server.text.match import Phrases, Tok, find_any, tokenize, words
from rag_server.text.spelling import MAX_KEY_CHARS, inn_key
from rag_server.understanding.catalog import Catalog, MatchStage
from rag_server.vocabulary.clinical import MedicationRules

MAX_ENTRY_CHARS = 200
MAX_NAMES_PER_ENTRY = 6
MIN_KEY_CHARS = 3
_SEPARATORS = frozenset(",;+/")
_QUANTITY = re.compile(r"^(?:x?\d+(?:[.,]\d+)?[a-zµμ%]*|\d+x|x\d+)$")


@dataclass(frozen=True)
class MedicationName:
    """One medicine named in a patient's medication entry."""

    entry: str  # the entry as typed (cut to MAX_ENTRY_CHARS)
    name: str  # the name after stripping doses, units, forms, routes, frequencies
    keys: tuple[str, ...]  # spelling-variant keys of its specific words
    drug_id: str = ""  # the catalog drug it resolves to, when it does (unambiguously)
    stage: MatchStage | None = None  # how it resolved


def split_entry(entry: str, rules: MedicationRules) -> list[str]:
    """The names in one medication entry (see the module doc)."""
    text = entry[:MAX_ENTRY_CHARS]
    parts: list[list[Tok]] = [[]]
    depth = 0
    for tok in tokenize(text):
        if tok.raw == "(":
            depth += 1
            parts.append([])
        elif tok.raw == ")":
            depth = max(0, depth - 1)
            parts.append([])
        elif tok.raw in _SEPARATORS:
            parts.append([])
        else:
            parts[-1].append(tok)
    names: list[str] = []
    for part in parts:
        for piece in _split_words(part, rules.separators):
            name = _strip(piece, rules)
            if name and name not in names:
                names.append(name)
    return names[:MAX_NAMES_PER_ENTRY]


def _split_words(toks: list[Tok], separators: Phrases) -> list[list[Tok]]:
    cuts = {i: len(p) for i, p in find_any(toks, separators)}
    pieces: list[list[Tok]] = [[]]
    i = 0
    while i < len(toks):
        if i in cuts:
            pieces.append([])
            i += cuts[i]
            continue
        pieces[-1].append(toks[i])
        i += 1
    return [p for p in pieces if p]


def _strip(toks: list[Tok], rules: MedicationRules) -> str:
    toks = [t for t in words(toks) if not _QUANTITY.match(t.folded)]
    drop = {j for i, p in find_any(toks, rules.strip) for j in range(i, i + len(p))}
    kept = [t for i, t in enumerate(toks) if i not in drop and any(ch.isalpha() for ch in t.raw)]
    return " ".join(t.raw for t in kept[: rules.max_name_words])


def name_keys(name: str, rules: MedicationRules) -> tuple[str, ...]:
    """Keys of the specific words of a name; of its ions when it names nothing more specific."""
    toks = [t for t in tokenize(name) if not t.is_punct]
    specific = [t for t in toks if t.folded not in rules.salt_words and t.folded not in rules.ion_words]
    chosen = specific or [t for t in toks if t.folded in rules.ion_words]
    keys = [inn_key(t.raw) for t in chosen if MIN_KEY_CHARS <= len(t.folded) <= MAX_KEY_CHARS]
    return tuple(dict.fromkeys(k for k in keys if k))


def read_medications(
    entries: Sequence[str], rules: MedicationRules, catalog: Catalog | None
) -> list[MedicationName]:
    """Every medicine named in the entries, resolved against the catalog where it can be."""
    out: list[MedicationName] = []
    seen: set[str] = set()
    for entry in dict.fromkeys(entries):
        typed = entry[:MAX_ENTRY_CHARS]
        for name in split_entry(typed, rules):
            if name in seen:
                continue
            seen.add(name)
            drug_id, stage = _resolve(name, catalog)
            keys = name_keys(name, rules)
            if keys or drug_id:
                out.append(MedicationName(typed, name, keys, drug_id, stage))
    return out


def _resolve(name: str, catalog: Catalog | None) -> tuple[str, MatchStage | None]:
    if catalog is None:
        return "", None
    if name in catalog.drugs:
        return name, MatchStage.EXACT
    mentions = [m for m in catalog.find(name) if not m.ambiguous]
    if len({m.drug_ids[0] for m in mentions}) == 1:
        return mentions[0].drug_ids[0], mentions[0].stage
    return "", None
