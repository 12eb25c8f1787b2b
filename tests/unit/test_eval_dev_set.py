"""The evaluation sets: the dev (tuning) split eval/dev_questions.jsonl and the frozen holdout
eval/holdout_questions.jsonl: well-formed, balanced, disjoint, and (with the real corpus) labelled
consistently with it and free of copied formulary text."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from rag_server.evaluation.dataset import Question, load_questions
from rag_server.text.match import folded_words
from rag_server.vocabulary import load_vocabulary

REPO = Path(__file__).resolve().parents[2]
DEV_SET = REPO / "eval" / "dev_questions.jsonl"
HOLDOUT = REPO / "eval" / "holdout_questions.jsonl"
REAL_DRUGS = {
    "alopurinol",
    "amlodipin",
    "amoxicilin",
    "ciprofloxacin",
    "metformin",
    "methotrexat",
    "paracetamol",
    "abacavir",
    "acarbose",
    "acebutolol",
    "acenocoumarol",
    "acetazolamid",
}
KEY_SECTIONS = (
    "chong_chi_dinh",
    "than_trong",
    "lieu_luong_va_cach_dung",
    "tuong_tac_thuoc",
    "thoi_ky_mang_thai",
    "thoi_ky_cho_con_bu",
)


@pytest.fixture(scope="module")
def dev_set() -> list[Question]:
    return load_questions(DEV_SET, load_vocabulary().keys)


@pytest.fixture(scope="module")
def holdout() -> list[Question]:
    return load_questions(HOLDOUT, load_vocabulary().keys)


@pytest.fixture(scope="module", params=["dev", "holdout"])
def question_set(
    request: pytest.FixtureRequest, dev_set: list[Question], holdout: list[Question]
) -> list[Question]:
    return dev_set if request.param == "dev" else holdout


def test_holdout_covers_the_styles_the_dev_set_lacked(holdout: list[Question]) -> None:
    styles = Counter(s for q in holdout for s in q.style)
    for style in ("short_name", "colloquial_cue", "two_cues", "synonym", "generic", "no_drug", "class",
                  "dose", "variant", "list", "typo"):
        assert styles[style] >= 3, style
    kinds = Counter(q.kind for q in holdout)
    assert kinds["abstain"] >= 60 and kinds["patient"] >= 20 and kinds["corpus"] >= 5


def test_holdout_and_dev_set_share_no_question(dev_set: list[Question], holdout: list[Question]) -> None:
    dev = {_key(q) for q in dev_set}
    assert [q.id for q in holdout if q.kind != "patient" and _key(q) in dev] == []
    assert {q.id for q in dev_set} & {q.id for q in holdout} == set()


def test_dev_set_is_large_and_covers_every_kind_and_style(dev_set: list[Question]) -> None:
    assert len(dev_set) >= 150
    kinds = Counter(q.kind for q in dev_set)
    assert kinds["section"] >= 150 and kinds["indication"] >= 20
    assert kinds["nonsense_indication"] >= 8 and kinds["abstain"] >= 10
    styles = Counter(s for q in dev_set for s in q.style)
    for style in ("diacritics", "no_diacritics", "brand", "misspelt", "free_form", "colloquial", "inn_en"):
        assert styles[style] >= 4, style
    reasons = Counter(r for q in dev_set for r in q.expect_decision)
    for reason in ("DRUG_NOT_FOUND", "OUT_OF_SCOPE", "CLARIFY"):
        assert reasons[reason] >= 3, reason


def test_dev_set_gold_is_over_the_real_monographs_and_balanced(dev_set: list[Question]) -> None:
    golds = {q.gold_drug_id for q in dev_set if q.kind == "section"}
    golds |= {d for q in dev_set if q.kind == "indication" for d in q.gold_drug_ids}
    assert golds == REAL_DRUGS
    per_key = Counter(q.gold_section_key for q in dev_set if q.kind == "section")
    for key in KEY_SECTIONS:
        assert per_key[key] >= 10, key
    assert len(per_key) >= 18  # nearly every section a monograph has gets questions
    per_drug = Counter(q.gold_drug_id for q in dev_set if q.kind == "section")
    assert min(per_drug.values()) >= 12


def test_queries_are_distinct(question_set: list[Question]) -> None:
    queries = Counter(_key(q) for q in question_set if q.kind != "abstain")
    assert [q for q, n in queries.items() if n > 1] == []


def _key(q: Question) -> tuple[str, str]:
    """What makes a question itself: its words (symbols are words of a nonsense indication)."""
    return " ".join(folded_words(q.query)), q.indication or q.query.strip()


# --- against the real corpus (read at run time from ../shared/corpus, never copied) ----------------


def _monograph_texts(corpus_dir: Path) -> dict[str, str]:
    """drug_id -> Markdown of its monograph (the excerpt file holds five, split at their titles)."""
    texts = {p.stem: p.read_text(encoding="utf-8") for p in sorted((corpus_dir / "monographs").glob("*.md"))}
    excerpt = next(corpus_dir.glob("dtqg2018_*.md")).read_text(encoding="utf-8")
    titles = ["ABACAVIR", "ACARBOSE", "ACEBUTOLOL", "ACENOCOUMAROL", "ACETAZOLAMID"]
    starts = [re.search(rf"^#+\s*\**{t}\**\s*$", excerpt, re.M) for t in titles]
    offsets = [m.start() for m in starts if m is not None]
    assert len(offsets) == len(titles), "excerpt titles not found"
    for title, begin, end in zip(titles, offsets, [*offsets[1:], len(excerpt)], strict=True):
        texts[title.lower()] = excerpt[begin:end]
    return texts


def _sections(markdown: str) -> dict[str, str]:
    """section_key -> text, from heading-like lines (identity lines count as their own sections)."""
    vocab = load_vocabulary()
    out: dict[str, list[str]] = {}
    current = "_title"
    for line in markdown.splitlines():
        label = re.sub(r"[#*_]", "", line).strip().rstrip(":").strip()
        identity = re.match(r"^[#*\s]*(T[eê]n chung qu[oố]c t[eế]|M[aã] ATC|Lo[aạ]i thu[oố]c)", line)
        key = vocab.heading_key(identity.group(1)) if identity else None
        if key is None and label and len(label) < 45 and not label.endswith("."):
            key = vocab.heading_key(label)
        if key is not None:
            current = key
            if identity:
                out.setdefault(key, []).append(line)
            continue
        out.setdefault(current, []).append(line)
    if "**Dạng thuốc và hàm lượng**" in markdown and "dang_thuoc_va_ham_luong" not in out:
        out["dang_thuoc_va_ham_luong"] = [markdown]  # run into the "Loại thuốc" line in one monograph
    return {k: "\n".join(v) for k, v in out.items()}


@pytest.mark.corpus
def test_gold_sections_exist_in_the_monographs(question_set: list[Question], corpus_dir: Path) -> None:
    sections = {drug: _sections(text) for drug, text in _monograph_texts(corpus_dir).items()}
    missing = [
        (q.id, q.gold_drug_id, q.gold_section_key)
        for q in question_set
        if q.kind == "section" and q.gold_section_key not in sections[q.gold_drug_id]
    ]
    assert missing == []


@pytest.mark.corpus
def test_indication_gold_is_named_in_each_gold_drugs_chi_dinh(
    question_set: list[Question], corpus_dir: Path
) -> None:
    """A literal indication is named in its gold drugs' chi_dinh; a made-up one nowhere. Synonyms
    ("huyết áp cao" for "tăng huyết áp") and generic words ("người lớn") are exempt by their style."""
    texts = _monograph_texts(corpus_dir)
    chi_dinh = {drug: " ".join(folded_words(_sections(t).get("chi_dinh", ""))) for drug, t in texts.items()}
    everything = " ".join(" ".join(folded_words(t)) for t in texts.values())
    for q in question_set:
        if {"synonym", "generic"} & set(q.style):
            continue
        phrase = " ".join(folded_words(q.indication_text))
        if q.kind == "indication":
            for drug in q.gold_drug_ids:
                assert f" {phrase} " in f" {chi_dinh[drug]} ", (q.id, drug, phrase)
        elif q.kind == "nonsense_indication":
            assert f" {phrase} " not in f" {everything} ", (q.id, phrase)


@pytest.mark.corpus
def test_no_question_copies_formulary_text(question_set: list[Question], corpus_dir: Path) -> None:
    """Questions are written in our own words: no run of 8 words taken from the formulary."""
    corpus = " " + " ".join(" ".join(folded_words(t)) for t in _monograph_texts(corpus_dir).values()) + " "
    copied = []
    for q in question_set:
        for text in (q.query, q.indication):
            toks = folded_words(text)
            copied += [
                (q.id, " ".join(toks[i : i + 8]))
                for i in range(len(toks) - 7)
                if f" {' '.join(toks[i : i + 8])} " in corpus
            ]
    assert copied == []
