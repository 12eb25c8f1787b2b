"""The drug catalog: names -> drug_ids, built from the store and cached per manifest generation.

Names come from the monograph display names (and their parenthetical aliases), the INN line
(`ten_chung_quoc_te`) and the brand list (`ten_thuong_mai`, split on ';'). Matching inside a question is
word-boundary exact and accent-compatible (see textmatch), longest name first. Only when a question has
no exact match at all is a bounded typo tolerated (fuzzy.py), and only for display names and INNs.
A name that fits two drugs equally well is never guessed: it is returned as ambiguous.

A brand (or parenthetical alias) made only of words that occur in the prose of two or more monographs
("Bé nóng", "Paracetamol" listed as a brand of a combination) is ignored: it would read ordinary
words, or another drug's name, as a brand.
"""

from __future__ import annotations

import re
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from functools import lru_cache

from rag_server.domain import Chunk, ChunkKind
from rag_server.store.base import ChunkFilter, Store
from rag_server.text.normalize import fold
from rag_server.understanding.fuzzy import FuzzyIndex
from rag_server.understanding.textmatch import Phrase, Tok, compatible, phrase, tokenize
from rag_server.vocabulary import Vocabulary

INN_SECTION = "ten_chung_quoc_te"
BRAND_SECTION = "ten_thuong_mai"
MIN_ALIAS_CHARS = 3
MIN_STRIPPED_BRAND_CHARS = 4
MAX_NAME_WORDS = 8
_PARENS = re.compile(r"\(([^()]*)\)")
_ROMAN = re.compile(r"^[ivxlcdm]+$")
_STRENGTH = re.compile(
    r"^(\d+([.,]\d+)?|mg|g|ml|mcg|ui|iu|tab|tabs|caps|cap|inj|sr|xr|er|ds|forte|plus|kids?)$"
)


class Tier(IntEnum):
    """Where a name came from; a lower tier is a better match."""

    TITLE = 0
    INN = 1
    BRAND = 2


@dataclass(frozen=True)
class DrugInfo:
    drug_id: str
    display_name: str
    section_keys: tuple[str, ...]  # book order


@dataclass(frozen=True)
class NameEntry:
    drug_id: str
    tier: Tier
    name: Phrase


@dataclass(frozen=True)
class Mention:
    """A drug name found in a question: token span [start, end) and the drugs it fits best."""

    start: int
    end: int
    text: str
    drug_ids: tuple[str, ...]
    distance: int = 0  # 0 = exact, else the typo distance

    @property
    def ambiguous(self) -> bool:
        return len(self.drug_ids) > 1


@dataclass
class Catalog:
    drugs: dict[str, DrugInfo]
    names: dict[tuple[str, ...], list[NameEntry]] = field(default_factory=dict)
    fuzzy: FuzzyIndex = field(default_factory=lambda: FuzzyIndex([]))
    common_words: frozenset[str] = frozenset()
    generation: str = ""

    # ----------------------------------------------------------------- lookups
    def display_name(self, drug_id: str) -> str:
        info = self.drugs.get(drug_id)
        return info.display_name if info else drug_id

    def names_of(self, drug_id: str) -> list[Phrase]:
        """Every name the catalog knows for a drug (display, aliases, INN, brands)."""
        return [e.name for entries in self.names.values() for e in entries if e.drug_id == drug_id]

    def find(self, question: str | Sequence[Tok]) -> list[Mention]:
        toks = tokenize(question) if isinstance(question, str) else list(question)
        mentions = self._exact(toks)
        if not mentions:
            mentions = self._fuzzy(toks)
        return sorted(mentions, key=lambda m: m.start)

    def _exact(self, toks: Sequence[Tok]) -> list[Mention]:
        taken = [False] * len(toks)
        found: list[Mention] = []
        max_len = min(MAX_NAME_WORDS, max((len(k) for k in self.names), default=0))
        for n in range(max_len, 0, -1):
            for i in range(0, len(toks) - n + 1):
                if any(taken[i : i + n]) or any(t.is_punct for t in toks[i : i + n]):
                    continue
                key = tuple(t.folded for t in toks[i : i + n])
                entries = [e for e in self.names.get(key, ()) if _fits(toks[i : i + n], e.name)]
                if not entries:
                    continue
                best = min(e.tier for e in entries)
                ids = tuple(sorted({e.drug_id for e in entries if e.tier == best}))
                for j in range(i, i + n):
                    taken[j] = True
                found.append(Mention(i, i + n, " ".join(t.raw for t in toks[i : i + n]), ids))
        return found

    def _fuzzy(self, toks: Sequence[Tok]) -> list[Mention]:
        words_only = [i for i, t in enumerate(toks) if not t.is_punct]
        candidates: list[tuple[int, int, int, tuple[str, ...]]] = []  # (distance, start, end, ids)
        for n in range(1, 5):
            for a in range(0, len(words_only) - n + 1):
                idx = words_only[a : a + n]
                if idx[-1] - idx[0] != n - 1:
                    continue  # punctuation inside
                span = [toks[i] for i in idx]
                if all(t.folded in self.common_words for t in span):
                    continue
                hits = self.fuzzy.lookup(" ".join(t.folded for t in span))
                if not hits:
                    continue
                best = hits[0][0]
                ids = tuple(sorted({key for dist, _, key in hits if dist == best}))
                candidates.append((best, idx[0], idx[-1] + 1, ids))
        candidates.sort(key=lambda c: (c[0], -(c[2] - c[1]), c[1]))
        taken = [False] * len(toks)
        found: list[Mention] = []
        for dist, start, end, ids in candidates:
            if any(taken[start:end]):
                continue
            for j in range(start, end):
                taken[j] = True
            found.append(Mention(start, end, " ".join(t.raw for t in toks[start:end]), ids, dist))
        return found


def _fits(span: Sequence[Tok], name: Phrase) -> bool:
    return all(compatible(t, raw, folded) for t, raw, folded in zip(span, name.raw, name.folded, strict=True))


# ----------------------------------------------------------------------- building
def split_display_name(display: str) -> list[str]:
    """ "PARACETAMOL (Acetaminophen)" -> ["PARACETAMOL (Acetaminophen)", "PARACETAMOL", "Acetaminophen"]."""
    out = [display.strip()]
    bare = _PARENS.sub(" ", display).strip()
    if bare:
        out.append(bare)
    out.extend(inner.strip() for inner in _PARENS.findall(display) if inner.strip())
    return list(dict.fromkeys(out))


def inn_names(text: str, vocabulary: Vocabulary) -> list[str]:
    """The INN line's value: label removed, split on ';' and newlines, parentheses as aliases."""
    value = text
    if ":" in value.split("\n", 1)[0] and vocabulary.heading_key(value.split(":", 1)[0]) == INN_SECTION:
        value = value.split(":", 1)[1]
    names: list[str] = []
    for part in re.split(r"[;\n]", value):
        part = part.strip().strip("*_.").strip()
        if part:
            names.extend(split_display_name(part))
    return names


def brand_names(text: str) -> list[str]:
    """The brand list split on ';' (and newlines), emphasis marks and the final period dropped."""
    names: list[str] = []
    for part in re.split(r"[;\n]", text.replace("\\_", "_")):
        part = part.strip().strip("*_").strip().rstrip(".").strip()
        if part:
            names.append(part)
    return names


def _strip_strength(name: Phrase) -> Phrase | None:
    """ "Agimol 150" -> "Agimol": a brand with its trailing strength/form words removed."""
    raw = list(name.raw)
    while raw and _STRENGTH.match(name.folded[len(raw) - 1]):
        raw.pop()
    if not raw or len(raw) == len(name.raw) or len("".join(raw)) < MIN_STRIPPED_BRAND_CHARS:
        return None
    return phrase(" ".join(raw))


def _usable(name: Phrase) -> bool:
    joined = "".join(name.folded)
    return (
        len(joined) >= MIN_ALIAS_CHARS
        and not joined.isdigit()
        and not _ROMAN.match(joined)
        and len(name) <= MAX_NAME_WORDS
    )


_WORDS = re.compile(r"[^\W_]+")


@lru_cache(maxsize=200_000)
def _fold_word(word: str) -> str:
    return fold(word)


def common_words(chunks: Iterable[Chunk], skip_sections: frozenset[str]) -> frozenset[str]:
    """Folded words used in the prose of two or more monographs."""
    seen: dict[str, str] = {}  # word -> first drug_id seen with it
    common: set[str] = set()
    for chunk in chunks:
        if chunk.chunk_kind != ChunkKind.PROSE or chunk.section_key in skip_sections:
            continue
        for raw in set(_WORDS.findall(chunk.text.lower())):
            word = _fold_word(raw)
            first = seen.setdefault(word, chunk.drug_id)
            if first != chunk.drug_id:
                common.add(word)
    return frozenset(common)


def build_catalog(chunks: Sequence[Chunk], vocabulary: Vocabulary, generation: str = "") -> Catalog:
    by_drug: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in chunks:
        by_drug[chunk.drug_id].append(chunk)
    drugs: dict[str, DrugInfo] = {}
    for drug_id, items in by_drug.items():
        names = Counter(c.drug_name for c in items)
        keys = sorted({c.section_key for c in items}, key=lambda k: (vocabulary.order(k), k))
        drugs[drug_id] = DrugInfo(drug_id, names.most_common(1)[0][0], tuple(keys))
    common = common_words(chunks, frozenset({BRAND_SECTION, INN_SECTION}))

    entries: dict[tuple[str, ...], dict[tuple[str, Tier], NameEntry]] = defaultdict(dict)

    def add(drug_id: str, tier: Tier, text: str, filter_common: bool) -> None:
        name = phrase(text)
        if not _usable(name):
            return
        if filter_common and all(w in common for w in name.folded):
            return
        slot = entries[name.folded]
        current = slot.get((drug_id, tier))
        if current is None:
            slot[(drug_id, tier)] = NameEntry(drug_id, tier, name)

    for drug_id, info in drugs.items():
        for i, text in enumerate(split_display_name(info.display_name)):
            add(drug_id, Tier.TITLE, text, filter_common=i >= 2)
        add(drug_id, Tier.TITLE, drug_id.replace("-", " "), filter_common=False)
    for chunk in sorted(chunks, key=lambda c: (c.drug_id, c.part_index)):
        if chunk.chunk_kind != ChunkKind.PROSE:
            continue
        if chunk.section_key == INN_SECTION:
            for text in inn_names(chunk.text, vocabulary):
                add(chunk.drug_id, Tier.INN, text, filter_common=False)
        elif chunk.section_key == BRAND_SECTION:
            for text in brand_names(chunk.text):
                add(chunk.drug_id, Tier.BRAND, text, filter_common=True)
                stripped = _strip_strength(phrase(text))
                if stripped is not None:
                    add(chunk.drug_id, Tier.BRAND, stripped.text, filter_common=True)

    index = {key: list(slot.values()) for key, slot in entries.items()}
    fuzzy = FuzzyIndex(
        (" ".join(key), e.drug_id) for key, slot in index.items() for e in slot if e.tier != Tier.BRAND
    )
    return Catalog(drugs=drugs, names=index, fuzzy=fuzzy, common_words=common, generation=generation)


class CatalogCache:
    """Catalogs per (store, manifest generation): rebuilt after a load switches generations.

    Keeps the last few stores' catalogs (a process normally serves one store; tests run several).
    """

    def __init__(self, size: int = 4) -> None:
        self._lock = threading.Lock()
        self._size = size
        self._catalogs: dict[int, tuple[str, Catalog]] = {}

    def get(self, store: Store, vocabulary: Vocabulary) -> Catalog | None:
        """None when the store serves no corpus yet."""
        manifest = store.manifest()
        if manifest is None:
            return None
        stamp = f"{manifest.generation}|{manifest.created_at}|{manifest.corpus_sha}"
        with self._lock:
            cached = self._catalogs.get(id(store))
            if cached is not None and cached[0] == stamp:
                return cached[1]
            catalog = build_catalog(store.scroll(ChunkFilter()), vocabulary, generation=manifest.generation)
            self._catalogs.pop(id(store), None)
            self._catalogs[id(store)] = (stamp, catalog)
            while len(self._catalogs) > self._size:
                self._catalogs.pop(next(iter(self._catalogs)))
            return catalog
