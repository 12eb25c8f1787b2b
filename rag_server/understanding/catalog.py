"""The drug catalog: names -> drug_ids, built from the served generation's chunks (once per generation).

Names come from the monograph display names (and their parenthetical aliases), the INN line
(`ten_chung_quoc_te`) and the brand list (`ten_thuong_mai`, split on ';'). Matching inside a question is
word-boundary exact and accent-compatible (text.match), longest name first. Only when a question has
no exact match at all is a bounded typo tolerated (fuzzy.py), for every kind of name; a typo of a brand
or of a distinctive word must be typed in Latin letters that are no Vietnamese syllable.
A name that fits two drugs equally well is never guessed: it is returned as ambiguous.

Distinctive words (tier WORD, the weakest): a word of a multi-word title or INN ("pelmironic" of "ACID
PELMIRONIC") names its drug alone when it has >= 5 letters, is no generic salt/class word
(rules.toml [names]), no Vietnamese syllable and no word of the vocabulary or the rules. In one drug's
names only, it resolves to that drug; in several drugs' names it is ambiguous (CLARIFY). A one-word part
of a combination ("AMOXICILIN" of "AMOXICILIN VÀ KALI CLAVULANAT") never stands for the combination. A
distinctive word next to an unknown drug-like word ("ticarcilin clavulanic") is dropped: it is part of
another drug's name. An ambiguous distinctive word beside a drug named in full is ignored.

A brand's first word (tier BRAND_WORD, the weakest): "Tylenol" of "Tylenol 8 Hour" names the brand's
drug when it has >= 4 letters and is no strength/form word, generic or known word, word of two
monographs' prose or Vietnamese syllable; in several drugs' names it is ambiguous (CLARIFY). A whole name
of the same spelling keeps priority. Exact matches only (never in the typo index).

A brand (or parenthetical alias) made only of words that occur in the prose of two or more monographs
("Bé nóng", "Paracetamol" listed as a brand of a combination) is ignored: it would read ordinary
words, or another drug's name, as a brand.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from functools import cached_property

from rag_server.domain import Chunk, ChunkKind
from rag_server.text.match import Phrase, Tok, folded_words, match_at, phrase, tokenize
from rag_server.understanding.fuzzy import LONG_BOUND, FuzzyIndex
from rag_server.understanding.lexicon import is_drug_like, is_vietnamese_syllable
from rag_server.vocabulary import Vocabulary
from rag_server.vocabulary.language import Language

MAX_CLASS_TEXT_CHARS = 400
_ATC_CODE = re.compile(r"\b[A-Za-z]\d{2}(?:[A-Za-z]{1,2}(?:\d{2})?)?\b")
MIN_ALIAS_CHARS = 3
MIN_STRIPPED_BRAND_CHARS = 4
MAX_NAME_WORDS = 8
MIN_DISTINCTIVE_CHARS = 5
BRAND_MAX_EDITS = 1  # see FuzzyIndex: brands are too many for a two-edit index
MIN_PREFIX_CHARS = 4  # "cipro", "amox": a shorter prefix says too little
MAX_PREFIX_DRUGS = 8  # a prefix of more drugs' names than this is ignored, not listed
MAX_PREFIX_WORDS_SCANNED = 64  # words of a question examined for a prefix
MAX_WORD_CHARS = 40  # a longer "word" is no drug name (nor a typo or a prefix of one)
MAX_FUZZY_SPANS = 48  # spans of a question looked up in the typo index
MAX_FUZZY_WORDS = 64  # words of a question where a typo'd name may start
_PARENS = re.compile(r"\(([^()]*)\)")
_ROMAN = re.compile(r"^[ivxlcdm]+$")
_STRENGTH = re.compile(
    r"^(\d+([.,]\d+)?|mg|g|ml|mcg|ui|iu|tab|tabs|caps|cap|inj|sr|xr|er|ds|forte|plus|kids?)$"
)


class MatchStage(StrEnum):
    """How a drug name in a question was matched (recorded on every mention, shown to the caller)."""

    EXACT = "exact"  # a whole name, word-boundary exact, accent-compatible
    FUZZY = "fuzzy"  # a bounded typo of a whole name
    PREFIX = "prefix"  # the first >= 4 letters of an INN or brand ("cipro")


class Tier(IntEnum):
    """Where a name came from; a lower tier is a better match."""

    TITLE = 0
    INN = 1
    BRAND = 2
    WORD = 3  # one distinctive word of a multi-word title or INN
    BRAND_WORD = 4  # the first word of a multi-word brand ("Tylenol" of "Tylenol 8 Hour")


@dataclass(frozen=True)
class DrugInfo:
    drug_id: str
    display_name: str
    section_keys: tuple[str, ...]  # book order
    atc_codes: tuple[str, ...] = ()  # from the Mã ATC line
    class_text: str = ""  # the Loại thuốc line (what kind of medicine the formulary says it is)


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
    weak: bool = False  # matched through a distinctive word only (tier WORD)
    stage: MatchStage = MatchStage.EXACT
    tier: Tier = Tier.TITLE  # the best tier of the name matched
    char_start: int = 0  # [char_start, char_end) in the question (set by the reading)
    char_end: int = 0

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
    known_words: frozenset[str] = frozenset()  # never an unknown drug name (vocabulary, rules, names, prose)
    ordinary_words: frozenset[str] = frozenset()  # vocabulary, rules and common prose words (not names)
    joiners: frozenset[str] = frozenset()  # generic words and conjunctions inside a drug name
    by_drug: dict[str, tuple[Phrase, ...]] = field(default_factory=dict)  # drug_id -> names_of(drug_id)
    primary: dict[str, tuple[Phrase, ...]] = field(default_factory=dict)  # drug_id -> title and INN names
    prefixes: PrefixIndex = field(default_factory=lambda: PrefixIndex([]))

    @cached_property
    def longest_name(self) -> int:
        """Characters of the longest folded name (a longer span is no typo of a name)."""
        return max((len(" ".join(key)) for key in self.names), default=0)

    @cached_property
    def longest_name_words(self) -> int:
        """Words of the longest name (at most MAX_NAME_WORDS): where an exact match may end."""
        return min(MAX_NAME_WORDS, max((len(k) for k in self.names), default=0))

    @cached_property
    def first_words(self) -> frozenset[str]:
        """The first folded word of every name (where an exact match may start)."""
        return frozenset(key[0] for key in self.names if key)

    # ----------------------------------------------------------------- lookups
    def display_name(self, drug_id: str) -> str:
        info = self.drugs.get(drug_id)
        return info.display_name if info else drug_id

    def names_of(self, drug_id: str) -> list[Phrase]:
        """Every name the catalog knows for a drug (display, aliases, INN, brands, and a distinctive word
        when it names this drug alone)."""
        return list(self.by_drug.get(drug_id, ()))

    def find(self, question: str | Sequence[Tok]) -> list[Mention]:
        """Drug names in a question: exact names, then for the words still unexplained unique prefixes of
        INNs and brands ("cipro" is an abbreviation before it is a typo of "Ciprol"); only when there is
        neither, bounded typos."""
        toks = tokenize(question) if isinstance(question, str) else list(question)
        exact = self._exact(toks)
        mentions = self._guard(toks, exact)
        mentions += self._prefixed(toks, exact)  # a word that is a whole name is never a prefix
        if not mentions:
            mentions = self._guard(toks, self._fuzzy(toks))
        return sorted(mentions, key=lambda m: m.start)

    def _prefixed(self, toks: Sequence[Tok], found: Sequence[Mention]) -> list[Mention]:
        """A word of >= MIN_PREFIX_CHARS Latin letters, no known word and no Vietnamese syllable, that
        begins the names of one drug ("cipro"); of several drugs it is ambiguous (CLARIFY lists them), of
        more than MAX_PREFIX_DRUGS it is ignored (too short to say anything)."""
        covered = {i for m in found for i in range(m.start, m.end)}
        out: list[Mention] = []
        for i, tok in enumerate(toks[:MAX_PREFIX_WORDS_SCANNED]):
            if i in covered or not (MIN_PREFIX_CHARS <= len(tok.folded) <= MAX_WORD_CHARS):
                continue
            if not is_drug_like(tok, self.ordinary_words, MIN_PREFIX_CHARS):
                continue
            ids = self.prefixes.drugs(tok.folded, MAX_PREFIX_DRUGS)
            if ids:
                out.append(Mention(i, i + 1, tok.raw, ids, 0, False, MatchStage.PREFIX, Tier.BRAND))
        return out

    def _guard(self, toks: Sequence[Tok], mentions: list[Mention]) -> list[Mention]:
        """Drop a distinctive-word mention that is part of an unknown drug's name, and an ambiguous one
        beside a drug named in full."""
        covered = {i for m in mentions for i in range(m.start, m.end)}
        kept = [m for m in mentions if not (m.weak and self._unknown_neighbour(toks, m, covered))]
        if any(not m.weak for m in kept):
            kept = [m for m in kept if not (m.weak and m.ambiguous)]
        return kept

    def _unknown_neighbour(self, toks: Sequence[Tok], mention: Mention, covered: set[int]) -> bool:
        for step, start in ((-1, mention.start - 1), (1, mention.end)):
            i = start
            while 0 <= i < len(toks) and i not in covered and toks[i].folded in self.joiners:
                i += step
            if 0 <= i < len(toks) and i not in covered and is_drug_like(toks[i], self.known_words):
                return True
        return False

    def _exact(self, toks: Sequence[Tok]) -> list[Mention]:
        taken = [False] * len(toks)
        found: list[Mention] = []
        max_len = self.longest_name_words
        starts = [i for i, t in enumerate(toks) if t.folded in self.first_words]
        for n in range(max_len, 0, -1):
            for i in starts:
                if i + n > len(toks) or any(taken[i : i + n]) or any(t.is_punct for t in toks[i : i + n]):
                    continue
                key = tuple(t.folded for t in toks[i : i + n])
                entries = [e for e in self.names.get(key, ()) if match_at(toks, i, e.name)]
                if not entries:
                    continue
                best = min(e.tier for e in entries)
                ids = _resolves_to(entries)
                for j in range(i, i + n):
                    taken[j] = True
                text = " ".join(t.raw for t in toks[i : i + n])
                found.append(Mention(i, i + n, text, ids, weak=best >= Tier.WORD, tier=best))
        return found

    def _fuzzy(self, toks: Sequence[Tok]) -> list[Mention]:
        """Bounded: only spans of plausible name length (each word <= MAX_WORD_CHARS, the span no longer
        than the longest name + the edit bound) with a word that is no known word, among the first
        MAX_FUZZY_WORDS words, at most MAX_FUZZY_SPANS of them: a typo lookup costs the same whatever the
        question."""
        words_only = [i for i, t in enumerate(toks) if not t.is_punct][:MAX_FUZZY_WORDS]
        longest = self.longest_name + LONG_BOUND
        # (distance, start, end, ids, weak)
        candidates: list[tuple[int, int, int, tuple[str, ...], bool]] = []
        budget = MAX_FUZZY_SPANS
        for a in range(len(words_only)):
            for n in range(1, 5):
                idx = words_only[a : a + n]
                if len(idx) < n or idx[-1] - idx[0] != n - 1:
                    break  # the end of the question, or punctuation inside
                span = [toks[i] for i in idx]
                if any(len(t.folded) > MAX_WORD_CHARS for t in span):
                    break
                if sum(len(t.folded) for t in span) + n - 1 > longest:
                    break
                if all(t.folded in self.known_words or t.folded in self.common_words for t in span):
                    continue
                budget -= 1
                if budget < 0:
                    break
                found = self._fuzzy_span(span)
                if found is not None:
                    candidates.append((found[0], idx[0], idx[-1] + 1, found[1], found[2]))
            if budget < 0:
                break
        candidates.sort(key=lambda c: (c[0], -(c[2] - c[1]), c[1]))
        taken = [False] * len(toks)
        mentions: list[Mention] = []
        for dist, start, end, ids, weak in candidates:
            if any(taken[start:end]):
                continue
            for j in range(start, end):
                taken[j] = True
            text = " ".join(t.raw for t in toks[start:end])
            mentions.append(Mention(start, end, text, ids, dist, weak, MatchStage.FUZZY))
        return mentions

    def _fuzzy_span(self, span: Sequence[Tok]) -> tuple[int, tuple[str, ...], bool] | None:
        """(distance, drug_ids, weak) of the closest names within bounds, each name read at its best tier;
        a brand or distinctive word only for a span typed in non-Vietnamese Latin words."""
        latin = all(t.folded.isdigit() or (t.raw == t.folded and not is_vietnamese_syllable(t.folded))
                    for t in span)
        best: int | None = None
        ids: set[str] = set()
        tiers: list[Tier] = []
        for dist, name, _ in self.fuzzy.lookup(" ".join(t.folded for t in span)):
            entries = self.names.get(tuple(name.split(" ")), [])
            if not entries:
                continue
            tier = min(e.tier for e in entries)
            if tier >= Tier.BRAND and not latin:
                continue
            if best is not None and dist > best:
                break
            best = dist
            ids.update(_resolves_to(entries))
            tiers.append(tier)
        if best is None:
            return None
        return best, tuple(sorted(ids)), min(tiers) >= Tier.WORD


class PrefixIndex:
    """Folded one-word names (and first words of longer names) sorted, for prefix lookups by bisection;
    each word maps to the drugs its entries resolve to."""

    def __init__(self, words: Iterable[tuple[str, tuple[str, ...]]]) -> None:
        merged: dict[str, set[str]] = defaultdict(set)
        for word, ids in words:
            merged[word].update(ids)
        self._words = sorted(merged)
        self._ids = [tuple(sorted(merged[w])) for w in self._words]

    def drugs(self, prefix: str, limit: int) -> tuple[str, ...]:
        """The drugs of every indexed word starting with `prefix` (a proper prefix: the word itself is an
        exact name and matched as such); () when there are none or more than `limit`."""
        start = bisect.bisect_left(self._words, prefix)
        found: set[str] = set()
        for word, ids in zip(self._words[start:], self._ids[start:], strict=False):
            if not word.startswith(prefix):
                break
            if word == prefix:
                continue
            found.update(ids)
            if len(found) > limit:
                return ()
        return tuple(sorted(found))


def _resolves_to(entries: Iterable[NameEntry]) -> tuple[str, ...]:
    """The drugs a name stands for: those at its best tier."""
    listed = list(entries)
    best = min(e.tier for e in listed)
    return tuple(sorted({e.drug_id for e in listed if e.tier == best}))


# ----------------------------------------------------------------------- building
def split_display_name(display: str) -> list[str]:
    """ "PARACETAMOL (Acetaminophen)" -> ["PARACETAMOL (Acetaminophen)", "PARACETAMOL", "Acetaminophen"]."""
    out = [display.strip()]
    bare = _PARENS.sub(" ", display).strip()
    if bare:
        out.append(bare)
    out.extend(inner.strip() for inner in _PARENS.findall(display) if inner.strip())
    return list(dict.fromkeys(out))


def _label_value(text: str, vocabulary: Vocabulary) -> str:
    """ "Loại thuốc: Kháng sinh ..." -> "Kháng sinh ..." (the label, when printed, removed)."""
    head, sep, rest = text.partition(":")
    if sep and vocabulary.heading_key(head) is not None:
        return rest.strip()
    return text.strip()


def inn_names(text: str, vocabulary: Vocabulary) -> list[str]:
    """The INN line's value: label removed, split on ';' and newlines, parentheses as aliases."""
    value = text
    inn = vocabulary.roles.inn
    if ":" in value.split("\n", 1)[0] and vocabulary.heading_key(value.split(":", 1)[0]) == inn:
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


def common_words(chunks: Iterable[Chunk], skip_sections: frozenset[str]) -> frozenset[str]:
    """Folded words used in the prose of two or more monographs."""
    seen: dict[str, str] = {}  # word -> first drug_id seen with it
    common: set[str] = set()
    for chunk in chunks:
        if chunk.chunk_kind != ChunkKind.PROSE or chunk.section_key in skip_sections:
            continue
        for word in set(folded_words(chunk.text)):
            first = seen.setdefault(word, chunk.drug_id)
            if first != chunk.drug_id:
                common.add(word)
    return frozenset(common)


def _add_short_names(
    entries: dict[tuple[str, ...], dict[tuple[str, Tier], NameEntry]],
    short_names: Sequence[tuple[Phrase, Phrase]],
) -> None:
    """Short names clinicians type for a drug (clinical.toml [[short_name]]: "MTX" for methotrexat), as
    brands of every drug whose title or INN is the name they stand for; a short name the formulary itself
    uses for another drug is left to it."""
    for short, name in short_names:
        owners = {e.drug_id for e in entries.get(name.folded, {}).values() if e.tier <= Tier.INN}
        slot = entries[short.folded]
        if owners and not slot:
            for drug_id in sorted(owners):
                slot[(drug_id, Tier.BRAND)] = NameEntry(drug_id, Tier.BRAND, short)
        elif not slot:
            del entries[short.folded]


def build_catalog(chunks: Sequence[Chunk], language: Language, generation: str = "") -> Catalog:
    vocabulary, rules = language.vocabulary, language.rules
    roles = vocabulary.roles
    by_drug: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in chunks:
        by_drug[chunk.drug_id].append(chunk)
    drugs: dict[str, DrugInfo] = {}
    for drug_id, items in by_drug.items():
        names = Counter(c.drug_name for c in items)
        keys = sorted({c.section_key for c in items}, key=lambda k: (vocabulary.order(k), k))
        prose = sorted((c for c in items if c.chunk_kind == ChunkKind.PROSE), key=lambda c: c.part_index)
        atc = " ".join(c.text for c in prose if c.section_key == roles.atc)
        kind = " ".join(c.text for c in prose if c.section_key == roles.drug_class)
        drugs[drug_id] = DrugInfo(
            drug_id,
            names.most_common(1)[0][0],
            tuple(keys),
            tuple(dict.fromkeys(m.upper() for m in _ATC_CODE.findall(atc))),
            _label_value(kind, vocabulary)[:MAX_CLASS_TEXT_CHARS],
        )
    common = common_words(chunks, frozenset({roles.brands, roles.inn}))

    entries: dict[tuple[str, ...], dict[tuple[str, Tier], NameEntry]] = defaultdict(dict)
    word_sources: list[tuple[str, str]] = []  # (drug_id, title or INN text) whose words may stand alone
    brand_words: list[tuple[str, str]] = []  # (drug_id, multi-word brand) whose first word may stand alone

    def add(drug_id: str, tier: Tier, text: str, filter_common: bool, words_alone: bool = False) -> None:
        name = phrase(text)
        if not _usable(name):
            return
        if filter_common and all(w in common for w in name.folded):
            return
        slot = entries[name.folded]
        current = slot.get((drug_id, tier))
        if current is None:
            slot[(drug_id, tier)] = NameEntry(drug_id, tier, name)
        if words_alone:
            word_sources.append((drug_id, text))

    for drug_id, info in drugs.items():
        for i, text in enumerate(split_display_name(info.display_name)):
            add(drug_id, Tier.TITLE, text, filter_common=i >= 2, words_alone=i >= 1)
        add(drug_id, Tier.TITLE, drug_id.replace("-", " "), filter_common=False, words_alone=True)
    for chunk in sorted(chunks, key=lambda c: (c.drug_id, c.part_index)):
        if chunk.chunk_kind != ChunkKind.PROSE:
            continue
        if chunk.section_key == roles.inn:
            for text in inn_names(chunk.text, vocabulary):
                add(chunk.drug_id, Tier.INN, text, filter_common=False, words_alone=True)
        elif chunk.section_key == roles.brands:
            for text in brand_names(chunk.text):
                add(chunk.drug_id, Tier.BRAND, text, filter_common=True)
                brand_words.append((chunk.drug_id, text))
                stripped = _strip_strength(phrase(text))
                if stripped is not None:
                    add(chunk.drug_id, Tier.BRAND, stripped.text, filter_common=True)

    _add_short_names(entries, language.clinical.short_names)
    vocabulary_words = language.known_words
    conjunctions = [c.folded for c in rules.name_conjunctions]
    excluded = rules.generic_name_words | vocabulary_words
    _add_distinctive_words(entries, word_sources, excluded, conjunctions)
    _add_brand_first_words(entries, brand_words, excluded | common)

    index = {key: list(slot.values()) for key, slot in entries.items()}
    names_by_drug: dict[str, list[Phrase]] = defaultdict(list)
    primary: dict[str, list[Phrase]] = defaultdict(list)
    for slot_entries in index.values():
        resolved = _resolves_to(slot_entries)
        for e in slot_entries:
            if e.tier < Tier.WORD or resolved == (e.drug_id,):
                names_by_drug[e.drug_id].append(e.name)
            if e.tier <= Tier.INN:
                primary[e.drug_id].append(e.name)
    prefixes = PrefixIndex(
        (key[0], _resolves_to(slot_entries))
        for key, slot_entries in index.items()
        if key[0].isalpha() and len(key[0]) > MIN_PREFIX_CHARS
    )
    fuzzy = FuzzyIndex(  # a brand's first word alone is matched exactly only
        (" ".join(key), e.drug_id, BRAND_MAX_EDITS if e.tier == Tier.BRAND else LONG_BOUND)
        for key, slot in index.items()
        for e in slot
        if e.tier != Tier.BRAND_WORD
    )
    name_words = frozenset(w for key in index for w in key)
    joiners = rules.generic_name_words | frozenset(w for c in conjunctions if len(c) == 1 for w in c)
    return Catalog(
        drugs=drugs,
        names=index,
        fuzzy=fuzzy,
        common_words=common,
        generation=generation,
        known_words=vocabulary_words | name_words | common,
        ordinary_words=vocabulary_words | common,
        joiners=joiners,
        by_drug={d: tuple(dict.fromkeys(names)) for d, names in names_by_drug.items()},
        primary={d: tuple(dict.fromkeys(names)) for d, names in primary.items()},
        prefixes=prefixes,
    )


def distinctive_words(
    text: str, excluded: frozenset[str], conjunctions: Sequence[tuple[str, ...]]
) -> list[tuple[str, str]]:
    """(folded, raw) words of a multi-word name that may name its drug alone (see the module doc). The
    name is cut into parts at conjunctions and punctuation ("A VÀ KALI B", "A + ACID B", "A/B")."""
    toks = tokenize(text)
    longest = max((len(c) for c in conjunctions), default=0)
    parts: list[list[Tok]] = [[]]
    i = 0
    while i < len(toks):
        joint = 1 if toks[i].is_punct else 0
        if not joint:
            ahead = tuple(t.folded for t in toks[i : i + longest])
            joint = next((len(c) for c in conjunctions if ahead[: len(c)] == c), 0)
        if joint:
            parts.append([])
            i += joint
            continue
        parts[-1].append(toks[i])
        i += 1
    out: list[tuple[str, str]] = []
    for part in parts:
        if len(part) < 2:
            continue  # a one-word name, or a one-word part of a combination, names a drug of its own
        for tok in part:
            word = tok.folded
            if (
                len(word) >= MIN_DISTINCTIVE_CHARS
                and word.isalpha()
                and word not in excluded
                and not is_vietnamese_syllable(word)
            ):
                out.append((word, tok.raw))
    return out


def _add_distinctive_words(
    entries: dict[tuple[str, ...], dict[tuple[str, Tier], NameEntry]],
    sources: Sequence[tuple[str, str]],
    excluded: frozenset[str],
    conjunctions: Sequence[tuple[str, ...]],
) -> None:
    """A WORD entry for every drug whose names contain a distinctive word (one drug: it resolves; several:
    ambiguous). A word that is a whole name already keeps that name's better tier."""
    owners: dict[str, set[str]] = defaultdict(set)  # folded word -> drugs with a name containing it
    for key, slot in entries.items():
        for drug_id, _ in slot:
            for word in key:
                owners[word].add(drug_id)
    words: dict[str, Phrase] = {}
    for _, text in sources:
        for folded, raw in distinctive_words(text, excluded, conjunctions):
            words.setdefault(folded, phrase(raw))
    for word, word_phrase in words.items():
        slot = entries[(word,)]
        for drug_id in sorted(owners[word]):
            slot.setdefault((drug_id, Tier.WORD), NameEntry(drug_id, Tier.WORD, word_phrase))


def brand_first_word(text: str, excluded: frozenset[str]) -> tuple[str, str] | None:
    """(folded, raw) first word of a multi-word brand ("Tylenol" of "Tylenol 8 Hour") when it may name the
    brand alone: >= 4 letters, no strength/form word, no generic or known word, no Vietnamese syllable."""
    toks = [t for t in tokenize(text) if not t.is_punct]
    if len(toks) < 2:
        return None
    first = toks[0]
    word = first.folded
    if (
        len(word) < MIN_STRIPPED_BRAND_CHARS
        or not word.isalpha()
        or _STRENGTH.match(word)
        or _ROMAN.match(word)
        or word in excluded
        or is_vietnamese_syllable(word)
    ):
        return None
    return word, first.raw


def _add_brand_first_words(
    entries: dict[tuple[str, ...], dict[tuple[str, Tier], NameEntry]],
    brands: Sequence[tuple[str, str]],
    excluded: frozenset[str],
) -> None:
    """A BRAND_WORD entry for every drug whose names contain the first word of a multi-word brand (one
    drug: it resolves; several: ambiguous). A word that is a whole name (or a distinctive word) keeps that
    better tier."""
    owners: dict[str, set[str]] = defaultdict(set)  # folded word -> drugs with a name containing it
    for key, slot in entries.items():
        for drug_id, _ in slot:
            for word in key:
                owners[word].add(drug_id)
    words: dict[str, Phrase] = {}
    for _, text in brands:
        found = brand_first_word(text, excluded)
        if found is not None:
            words.setdefault(found[0], phrase(found[1]))
    for word, word_phrase in words.items():
        if not owners[word]:
            continue
        slot = entries[(word,)]
        for drug_id in sorted(owners[word]):
            slot.setdefault((drug_id, Tier.BRAND_WORD), NameEntry(drug_id, Tier.BRAND_WORD, word_phrase))
