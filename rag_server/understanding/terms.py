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

from rag_server.text.match import Phrase, Phrases, Tok, find_any, typed_single
from rag_server.text.words import Words
from rag_server.understanding.frame import AskedTerm
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
    for i, pat in typed_single(masked, find_any(masked, language.term_vocabulary)):
        if not words.aligned(i, len(pat)) and len(pat) == 1:
            continue  # one syllable of a longer word ("đầu" of "khởi đầu")
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


def effect_of(toks: Sequence[Tok], terms: Sequence[AskedTerm], language: Language) -> AskedTerm | None:
    """The effect of a "does X cause Y" question: the first term after an effect cue, else the last one
    before a "có phải do" cue; None when the question has neither cue. A condition cue ("đang bị", "mắc
    bệnh": rules.toml [question] condition_cues) is no effect cue: "đang bị X thì uống Y được không" tells
    what the patient has, "uống Y bị X" what Y did."""
    rules = language.rules
    for cues, weak in ((rules.effect_cues, False), (rules.weak_effect_cues, True)):
        hits = [(i, p) for i, p in find_any(toks, (*cues, *rules.condition_cues)) if p in cues]
        if hits:
            i, p = hits[0]
            after = toks[i + len(p) - 1].end
            later = [t for t in terms if t.start >= after and (t.known or not weak)]
            if later:
                return later[0]
    before = [toks[i].start for i, _ in find_any(toks, rules.effect_after)]
    if before:
        earlier = [t for t in terms if t.end <= before[0]]
        if earlier:
            return earlier[-1]
    return None


def _filler_positions(words: Words, language: Language) -> set[int]:
    """Token positions of fillers that are whole words: "thuốc" of "thuốc lá" (one word) is no filler."""
    rules = language.rules
    fillers = Phrases((*rules.question_fillers, *language.fillers))
    return {
        j for i, p in find_any(words.toks, fillers) if words.aligned(i, len(p)) for j in range(i, i + len(p))
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
