"""The situation a question describes, recognised from its parts (vocabulary/situation.toml), before anything
else is read: an ingestion that has happened, a severe reaction happening now, intent to harm oneself, intent
to harm someone else (refused).

Each part is found in the question's words: its phrases (whole words; a word typed without diacritics
matches any accented form, but an English question never matches Vietnamese by folding), its combos (two
pieces a few words apart: "cả … vỉ", "cho … uống"), and the amount structurally: a number (digits, glued
to its unit as in "30ml", or number words: "hai mươi lăm") followed by a unit or by a drug name; a count of
at least `many_from` is also the part `many`. ONE rule composes the parts: the situations are tried in the
order situation.toml lists them, and one is recognised when every part of one of its `requires` sets is
present and none of its `blockers` is (unless one of its `overrides_blockers` is). A general question about
overdose ("xử trí quá liều X", "triệu chứng ngộ độc X") names no event and no reaction: it stays answerable.
Cost: one pass over the question's words per part list (phrases indexed by first word).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Collection, Iterator, Sequence

from rag_server.text.match import Phrase, Phrases, Tok, claim, match_at, words
from rag_server.understanding.frame import Situation, SituationKind, SituationPart
from rag_server.vocabulary.situation import SituationVocabulary

WHO_PARTS = ("child", "self", "other")
AMOUNT = "amount"
MANY = "many"
MAX_COUNT = 10**6
_GLUED = re.compile(r"^(\d{1,6})([a-z]+)$")
_SENTENCE_END = re.compile(r"[.?!\n](?!\d)")  # "2.5 mg" is no sentence end


def recognise(
    toks: Sequence[Tok],
    text: str,
    vocabulary: SituationVocabulary,
    child_age: bool = False,
    drug_starts: Collection[int] = (),
) -> Situation:
    """The first situation whose parts the question says (see the module doc); Situation() when none.
    `toks`: the question's tokens, accents read word by word (text.match.AccentRule.WORD); `child_age`: the
    question states a child's age ("2 tuổi", "18 months old"), which counts as the part `child`;
    `drug_starts`: character offsets where a drug name begins (a number before one is an amount)."""
    ws = words(toks)
    english = _english(ws, vocabulary.english)
    if english:
        ws = [t._replace(loose=False) for t in ws]
    found = _parts(ws, vocabulary, frozenset(drug_starts), text)
    if english:  # "can lumiprazol be taken": "be" is no "bé"
        bare = vocabulary.vietnamese_only
        found = {k: p for k, p in found.items() if text[p.start : p.end].lower() not in bare}
    if child_age and "child" not in found:
        found["child"] = SituationPart("child", "", 0, 0)
    present = set(found)
    for rule in vocabulary.rules:
        matched = next((group for group in rule.requires if group <= present), None)
        if matched is None:
            continue
        blocking = {b for b in present & rule.blockers if _beside_event(found[b], found, text)}
        if rule.vetoed(present) or (blocking and not present & rule.overrides):
            continue
        shown = [p for p in (*WHO_PARTS, *sorted(matched), "followup_reference") if p in found]
        parts = tuple(_with_text(found[p], text) for p in dict.fromkeys(shown))
        return Situation(SituationKind(rule.kind), parts)
    return Situation()


def _beside_event(blocker: SituationPart, found: dict[str, SituationPart], text: str) -> bool:
    """A blocker (a dosing question, nursing, missed doses) blocks only in the sentence that tells the
    event: "Tối qua em uống liền 20 viên … Mà cho em hỏi luôn thuốc này uống lúc đói có được không?" asks a
    second question after the event, it does not make it a dosing question. Only for an event of many
    tablets or a whole pack: "bé uống 2 viên rồi. Giờ uống thêm được không?" stays a dosing question."""
    taken = found.get("took") or found.get("swallowed")
    # the event is where its amount is told (a first "uống" may be the dosing question's own verb)
    event = found.get(MANY) or found.get("whole_pack") or found.get("took_all")
    if taken is None or event is None:
        return True
    first, last = sorted((blocker.start, event.start))
    return not _SENTENCE_END.search(text, first, last)


def _english(ws: Sequence[Tok], markers: frozenset[str]) -> bool:
    """ASCII only, with at least two distinct English marker words."""
    return all(t.raw.isascii() for t in ws) and len({t.raw for t in ws if t.raw in markers}) >= 2


class _PartIndex:
    """Every part's phrases in two indexed sets (those matched loosely; one-word accented phrases matched
    only by a word typed with its diacritics), each pattern mapped to the parts that list it: one pass over
    the question finds every part's occurrences. Built once per vocabulary (it lives as long as the
    process)."""

    def __init__(self, parts: dict[str, Phrases]) -> None:
        self.owners: dict[Phrase, list[str]] = {}
        loose: list[Phrase] = []
        single: list[Phrase] = []
        for name, phrases in parts.items():
            for p in phrases:
                if p not in self.owners:
                    (loose if len(p) > 1 or p.raw[0] == p.folded[0] else single).append(p)
                self.owners.setdefault(p, []).append(name)
        self.loose, self.single = Phrases(loose), Phrases(single)

    def first(self, ws: Sequence[Tok], strict: Sequence[Tok]) -> dict[str, tuple[int, Phrase]]:
        """part name -> its first occurrence, as find_any would claim it within that part's phrases (the
        loose and the strict ones claimed apart)."""
        firsts: dict[str, tuple[int, Phrase]] = {}
        for hits in (self.loose.matches(ws), self.single.matches(strict)):
            by_part: dict[str, list[tuple[int, Phrase]]] = {}
            for hit in hits:
                for name in self.owners[hit[1]]:
                    by_part.setdefault(name, []).append(hit)
            for name, part_hits in by_part.items():
                start = claim(part_hits, len(ws))[0]
                if name not in firsts or start[0] < firsts[name][0]:
                    firsts[name] = start
        return firsts


_INDEXES: dict[int, tuple[SituationVocabulary, _PartIndex]] = {}


def _index(vocabulary: SituationVocabulary) -> _PartIndex:
    cached = _INDEXES.get(id(vocabulary))
    if cached is None or cached[0] is not vocabulary:
        cached = _INDEXES[id(vocabulary)] = (vocabulary, _PartIndex(vocabulary.parts))
    return cached[1]


def _with_text(part: SituationPart, text: str) -> SituationPart:
    if part.text or part.end <= part.start:
        return part
    return SituationPart(part.part, text[part.start : part.end], part.start, part.end)


def _parts(
    ws: Sequence[Tok], vocabulary: SituationVocabulary, drug_starts: frozenset[int], text: str = ""
) -> dict[str, SituationPart]:
    """part name -> its first occurrence (the words of an inert phrase are no part's)."""
    found: dict[str, SituationPart] = {}
    ws = _without_inert(ws, vocabulary.inert)
    strict = [t._replace(loose=False) for t in ws]
    firsts = _index(vocabulary).first(ws, strict)
    for name in vocabulary.parts:
        if name in firsts:
            i, pat = firsts[name]
            found[name] = SituationPart(name, "", ws[i].start, ws[i + len(pat) - 1].end)
    for combo in vocabulary.combos:
        if combo.part not in found:
            span = _combo(ws, combo.first, combo.then, combo.max_gap)
            if span is not None:
                found[combo.part] = SituationPart(combo.part, "", *span)
    past = vocabulary.past_year_part
    if past and past not in found:
        year = _past_year(ws, vocabulary.past_year_before)
        if year is not None:
            found[past] = SituationPart(past, "", *year)
    amount = _amount(ws, vocabulary, drug_starts, text)
    if amount is not None:
        part, count, pack = amount
        found.setdefault(AMOUNT, part)
        if count >= vocabulary.many_from or pack:
            found.setdefault(MANY, SituationPart(MANY, "", part.start, part.end))
    return found


EARLIEST_YEAR = 1950  # a four-digit number from here to last year, after "năm" / "in", is a year gone by


def _past_year(ws: Sequence[Tok], before: Phrases) -> tuple[int, int] | None:
    """(start, end) of the first past calendar year told ("năm 2016", "in 2019"): what happened then is
    over. This year and later are not past."""
    this_year = datetime.date.today().year
    for i, pat in before.matches(ws):
        j = i + len(pat)
        year = ws[j].raw if j < len(ws) else ""
        if len(year) == 4 and year.isdigit() and EARLIEST_YEAR <= int(year) < this_year:
            return ws[i].start, ws[j].end
    return None


def _without_inert(ws: Sequence[Tok], inert: Phrases) -> Sequence[Tok]:
    """The words with those of each inert phrase blanked (kept in place, so offsets and gaps stay)."""
    spans = inert.matches(ws) if inert else []
    if not spans:
        return ws
    out = list(ws)
    for i, pat in spans:
        for k in range(i, i + len(pat)):
            out[k] = out[k]._replace(raw="\x00", folded="\x00")
    return out


def _combo(ws: Sequence[Tok], first: Phrases, then: Phrases, max_gap: int) -> tuple[int, int] | None:
    """(start, end) of the first `first` ... `then` with at most max_gap words between, in one clause (the
    words are read without their punctuation: a gap of more than one space between two words was a mark)."""
    for i, pat in first.matches(ws):
        after = i + len(pat)
        for j in range(after, min(len(ws), after + max_gap + 1)):
            if ws[j].start - ws[j - 1].end > 1:
                break  # "trộn 10 viên, chắc ông uống hết": no "trộn … uống" across the comma
            for end_pat in then.by_first.get(ws[j].folded, ()):
                if match_at(ws, j, end_pat):
                    return ws[i].start, ws[j + len(end_pat) - 1].end
    return None


def _amount(
    ws: Sequence[Tok], vocabulary: SituationVocabulary, drug_starts: frozenset[int], text: str = ""
) -> tuple[SituationPart, int, bool] | None:
    """The question's "<number> <unit>" (or "<number> <drug name>", or "30ml") with its count and whether its
    unit is a container (one "vỉ" is already many): the first that is many, else the first ("mỗi tiếng uống
    một lần, tính ra 14 viên" took 14 tablets)."""
    first: tuple[SituationPart, int, bool] | None = None
    for found in _amounts(ws, vocabulary, drug_starts, text):
        if found[1] >= vocabulary.many_from or found[2]:
            return found
        first = first or found
    return first


def _amounts(
    ws: Sequence[Tok], vocabulary: SituationVocabulary, drug_starts: frozenset[int], text: str = ""
) -> Iterator[tuple[SituationPart, int, bool]]:
    """Each "<number> <unit>" of the question; a rate ("40 ml/phút", "10 mg/kg") is no amount taken."""
    for i, tok in enumerate(ws):
        glued = _GLUED.match(tok.folded)
        if glued and _is_unit(glued.group(2), vocabulary.units) and text[tok.end : tok.end + 1] != "/":
            count = min(int(glued.group(1)), MAX_COUNT)
            yield (
                SituationPart(AMOUNT, "", tok.start, tok.end),
                count,
                _is_unit(glued.group(2), vocabulary.pack_units),
            )
            continue
        count, width = _number_at(ws, i, vocabulary)
        if not width or _labelled(ws, i, vocabulary.number_labels):
            continue
        j = _past_strength(ws, i + width, vocabulary.strength_units)
        if j < len(ws) and ws[j].start in drug_starts and ws[j].start - ws[j - 1].end <= 1:
            # "2 acarbose", in one clause: "tiểu đường type 2, acarbose" counts nothing
            yield SituationPart(AMOUNT, "", tok.start, ws[j].end), count, False
            continue
        for unit in vocabulary.units.by_first.get(ws[j].folded, ()) if j < len(ws) else ():
            if match_at(ws, j, unit):
                end = ws[j + len(unit) - 1].end
                if text[end : end + 1] == "/":
                    break  # a rate: "Clcr 40 ml/phút"
                pack = any(match_at(ws, j, p) for p in vocabulary.pack_units.by_first.get(ws[j].folded, ()))
                yield SituationPart(AMOUNT, "", tok.start, end), count, pack
                break


def _past_strength(ws: Sequence[Tok], j: int, units: frozenset[str]) -> int:
    """The word after a strength starting at word j ("500 mg", "500mg"), else j."""
    if j < len(ws) and (m := _GLUED.match(ws[j].folded)) and m.group(2) in units:
        return j + 1
    if j + 1 < len(ws) and ws[j].folded.isdigit() and ws[j + 1].folded in units:
        return j + 2
    return j


def _labelled(ws: Sequence[Tok], i: int, labels: Phrases) -> bool:
    """The number at word i follows a label ("type 2", "độ 3", "giai đoạn 2"): it names a kind, no count."""
    return any(len(p) <= i and match_at(ws, i - len(p), p) for p in labels)


def _is_unit(folded: str, units: Phrases) -> bool:
    return any(len(u) == 1 and u.folded[0] == folded for u in units.by_first.get(folded, ()))


def _number_at(ws: Sequence[Tok], i: int, vocabulary: SituationVocabulary) -> tuple[int, int]:
    """(value, words) of the number starting at word i, (0, 0) when none: digits, or a run of number words
    where a multiplier multiplies what came before it ("hai mươi lăm" = 25, "chục" alone = 10)."""
    if ws[i].folded.isdigit():
        return min(int(ws[i].folded[:7]), MAX_COUNT), 1
    total = current = 0
    j = i
    while j < len(ws):
        word = _word_value(ws, j, vocabulary.multipliers)
        if word is not None:
            value, width = word
            current = max(current, 1) * value
            if value >= 100:
                total, current = total + current, 0
            j += width
            continue
        word = _word_value(ws, j, vocabulary.numbers)
        if word is None:
            break
        current += word[0]
        j += word[1]
    return (min(total + current, MAX_COUNT), j - i) if j > i else (0, 0)


def _word_value(ws: Sequence[Tok], j: int, table: Sequence[tuple[Phrase, int]]) -> tuple[int, int] | None:
    best: tuple[int, int] | None = None
    for pat, value in table:
        if pat.folded[0] == ws[j].folded and match_at(ws, j, pat) and (best is None or len(pat) > best[1]):
            best = (value, len(pat))
    return best
