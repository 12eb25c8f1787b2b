"""The asked terms of a question: what it asks ABOUT, as Vietnamese words and phrases, with the forms that
mean the same. "zelvorin có gây đau đầu không" asks about "đau đầu" (one word, its form "nhức đầu" too),
never about "đầu".

From the question's words (text.words: underthesea's segmentation), leaving out the drug names and the
section cue:
  1. the phrases of the clinical vocabulary (clinical.toml [[term]] groups, medical terms, conditions),
     longest first, unless made of fillers only: each is one term, its forms its group (or itself);
  2. every other run of words inside one segmented word, stopwords and question fillers (rules.toml
     [lexical], [question]) left out, is a term of its own ("nướu răng").
The effect of a "does X cause Y" question is the first term after an effect cue ("có gây", "cause"), the
first vocabulary phrase after a weaker one ("có bị", "có làm": "dung dịch có bị ánh sáng làm hỏng không"
asks no effect), or the last term before "có phải do".
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from rag_server.text.match import Phrase, Phrases, Tok, find_any, folded_words, typed_single, union
from rag_server.text.words import Words
from rag_server.understanding.frame import AskedTerm
from rag_server.understanding.lexicon import is_vietnamese_syllable
from rag_server.vocabulary.language import Language

MIN_TERM_CHARS = 2
MAX_TERMS = 12  # a question asks about a handful of things; more is prose


def asked_terms(words: Words, skip: Collection[int], language: Language) -> tuple[AskedTerm, ...]:
    """The asked terms of a question (see the module doc); `skip`: token indices that are no term (drug
    names, the section cue)."""
    toks = words.toks
    keep = [i for i, t in enumerate(toks) if i not in skip and not t.is_punct]
    usable = set(keep) - _filler_positions(words, language)
    kept = set(keep)
    masked = [t if i in kept else t._replace(raw="\x00", folded="\x00") for i, t in enumerate(toks)]
    forms_of = language.forms_of
    out: list[AskedTerm] = []
    taken: set[int] = set()
    for i, pat in _claimed(masked, language, _function_positions(toks, language)):
        if len(pat) == 1 and not words.aligned(i, 1) and is_vietnamese_syllable(toks[i].folded):
            continue  # one syllable of a longer word ("đầu" of "khởi đầu"); "cataracts" is no syllable
        if not usable & set(range(i, i + len(pat))):
            continue  # fillers only ("có", "không"); a phrase holding one ("uống cùng sữa") is a term
        span = range(i, i + len(pat))
        taken.update(span)
        forms = forms_of.get(pat.folded, (pat,))
        out.append(_term(toks, i, len(pat), forms))

    run: list[int] = []
    for i in sorted(usable - taken):
        if run and (i != run[-1] + 1 or words.word_of[i] != words.word_of[run[-1]]):
            out.append(_plain(toks, run))
            run = []
        run.append(i)
    if run:
        out.append(_plain(toks, run))
    seen: set[str] = set()
    terms: list[AskedTerm] = []
    for term in sorted(out, key=lambda t: t.start):
        key = term.text.lower()
        if _content(term) and key not in seen:
            seen.add(key)
            terms.append(term)
    if len(terms) > MAX_TERMS:  # vocabulary phrases first, then the others in text order
        kept = {id(t) for t in [t for t in terms if t.known][:MAX_TERMS]}
        kept |= {id(t) for t in [t for t in terms if not t.known][: MAX_TERMS - len(kept)]}
        terms = [t for t in terms if id(t) in kept]
    return tuple(terms)


def effect_of(
    toks: Sequence[Tok], terms: Sequence[AskedTerm], language: Language, drug_at: int | None = None,
    fact_spans: Sequence[tuple[int, int]] = (),
) -> AskedTerm | None:
    """The effect of a "does X cause Y" question: the first term after an effect cue, else the last one
    before a "có phải do" cue (the last vocabulary term, when one is); None when the question has neither
    cue. A condition cue ("đang bị", "mắc bệnh": rules.toml [question] condition_cues) is no effect cue,
    and neither is a weak cue before the drug's name (`drug_at`, its first token) unless a link ("khi",
    "sau khi": effect_links) ties it to the drug: "bầu 2 tháng bị viêm đường tiểu uống cipro được không"
    tells what the patient has, "bị đau đầu khi uống Y" and "uống Y bị X" what Y did. A cue inside the
    words of a patient fact (`fact_spans`, token spans: the "gây" of "mổ … gây mê toàn thân") is none."""
    rules = language.rules
    links = [i for i, _ in find_any(toks, rules.effect_links)]

    def tied(i: int) -> bool:  # a weak cue at i is about the drug
        return drug_at is None or i >= drug_at or any(i < j < drug_at for j in links)

    for cues, weak in ((rules.effect_cues, False), (rules.weak_effect_cues, True)):
        found = find_any(toks, union(cues, rules.condition_cues))
        hits = [(i, p) for i, p in found if p in cues and (not weak or tied(i))
                and not any(a <= i < b for a, b in fact_spans)]
        if hits:
            i, p = hits[0]
            after = toks[i + len(p) - 1].end
            later = [t for t in terms if t.start >= after and (t.known or not weak)]
            if later:
                return _listed(later, toks, rules.list_separators)
            again = _said_again(terms, toks, i + len(p))
            if again is not None:  # "… buồn ngủ rũ rượi, thuốc này có gây buồn ngủ không": the term again
                return again
    before = [toks[i].start for i, _ in find_any(toks, rules.effect_after)]
    if before:
        earlier = [t for t in terms if t.end <= before[0]]
        if earlier:  # the last vocabulary term before it ("chán ăn không ăn được cơm có phải do thuốc")
            return ([t for t in earlier if t.known] or earlier)[-1]
    return None


def _said_again(terms: Sequence[AskedTerm], toks: Sequence[Tok], at: int) -> AskedTerm | None:
    """A vocabulary term said earlier and again right at token `at` (the asked terms keep its first
    occurrence only)."""
    folded = [t.folded for t in toks[at:] if not t.is_punct]
    for term in terms:
        words = folded_words(term.text)
        if term.known and words and folded[: len(words)] == words:
            return term
    return None


def _listed(terms: Sequence[AskedTerm], toks: Sequence[Tok], separators: Phrases) -> AskedTerm:
    """The first term, with the vocabulary terms listed right after it ("mệt, nhức đầu", "buồn nôn hay
    tiêu chảy") as one effect: its forms are all of theirs."""
    effect = [terms[0]]
    for term in terms[1:]:
        gap = [t for t in toks if effect[-1].end <= t.start and t.end <= term.start]
        if not term.known or not gap or len(find_any(gap, separators)) != len(gap):
            break
        effect.append(term)
    if len(effect) == 1:
        return effect[0]
    first, last = effect[0], effect[-1]
    forms = tuple(dict.fromkeys(f for t in effect for f in t.forms))
    text = ", ".join(t.text for t in effect)
    return AskedTerm(text, forms, first.start, last.end, known=True)


def _claimed(toks: Sequence[Tok], language: Language, function: set[int]) -> list[tuple[int, Phrase]]:
    """Non-overlapping vocabulary phrases, longest first, but a phrase starting on a function word yields
    to one that does not: typed without diacritics, "bi tieu chay" is "bị tiêu chảy", not "bí tiểu"."""
    hits = typed_single(toks, language.term_vocabulary.matches(toks))
    hits.sort(key=lambda h: (h[0] in function, -len(h[1]), h[1].text, h[0]))
    taken = [False] * len(toks)
    found: list[tuple[int, Phrase]] = []
    for i, pat in hits:
        if not any(taken[i : i + len(pat)]):
            taken[i : i + len(pat)] = [True] * len(pat)
            found.append((i, pat))
    return sorted(found)


def _function_positions(toks: Sequence[Tok], language: Language) -> set[int]:
    """Where a question filler or an effect / condition cue starts ("bị", "có", "đang")."""
    rules = language.rules
    cues = union(rules.question_fillers, rules.weak_effect_cues, rules.condition_cues)
    return {i for i, _ in cues.matches(toks)}


def _filler_positions(words: Words, language: Language) -> set[int]:
    """Token positions of fillers that are whole words: "thuốc" of "thuốc lá" (one word) is no filler. Typed
    without diacritics, the segmentation cannot be trusted ("dai thi" read as one word): every filler
    counts."""
    rules = language.rules
    fillers = union(rules.question_fillers, language.fillers)
    toks = words.toks
    return {
        j
        for i, p in find_any(toks, fillers)
        if toks[i].loose or words.aligned(i, len(p))
        for j in range(i, i + len(p))
    }


def _term(toks: Sequence[Tok], i: int, n: int, forms: Sequence[Phrase]) -> AskedTerm:
    text = " ".join(t.raw for t in toks[i:i + n])
    return AskedTerm(text, tuple(dict.fromkeys([text, *(f.text for f in forms)])), toks[i].start,
                     toks[i + n - 1].end, known=True)


def _plain(toks: Sequence[Tok], run: Sequence[int]) -> AskedTerm:
    text = " ".join(toks[i].raw for i in run)
    return AskedTerm(text, (text,), toks[run[0]].start, toks[run[-1]].end)


def _content(term: AskedTerm) -> bool:
    letters = [c for c in term.text if c.isalpha()]
    return len(letters) >= MIN_TERM_CHARS and not term.text.replace(" ", "").isdigit()
