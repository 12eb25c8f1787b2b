"""Many DISTINCT requests over the FICTIONAL sample formulary, for bench_throughput.py: its drugs (as the
server lists them) x the section phrasings of sections.toml x colloquial wrappers, the conditions of
clinical.toml x colloquial wrappers, free-form questions naming a drug. Every generator yields each text
at most once, in a seeded order; the section route (drug_id + section_key) has as many distinct bodies as
the formulary has sections."""

from __future__ import annotations

import itertools
import random
import tomllib
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VOCABULARY = ROOT / "rag_server" / "vocabulary"

# How people wrap a section question: the phrase and the name in many orders and registers.
SECTION_WRAPPERS = (
    "{phrase} của {name}", "{name} {phrase}", "cho em hỏi {phrase} của {name} với", "{phrase} {name} là gì ạ",
    "bác sĩ ơi {name} {phrase} thế nào", "{name}: {phrase}?", "mình muốn biết {phrase} thuốc {name}",
    "{phrase} thuốc {name} ra sao", "xin hỏi {name} {phrase}", "{name} thì {phrase} như thế nào vậy",
    "ad cho hỏi {phrase} của thuốc {name}", "{phrase} {name}?",
)
FREE_FORM = (
    "{name} có gây buồn ngủ không", "{name} có ảnh hưởng đến gan không", "uống {name} lúc đói có sao không",
    "{name} dùng lâu dài có an toàn không", "{name} có làm tăng đường huyết không",
    "người già dùng {name} có gì đặc biệt", "{name} có gây chóng mặt không", "{name} có gây rụng tóc không",
    "{name} tác động lên cơ chế nào trong cơ thể", "{name} có làm khô miệng không",
    "{name} uống cùng sữa được không", "{name} có gây tăng cân không", "{name} có gây ho không",
    "{name} có làm tim đập nhanh không", "{name} có gây đau đầu không", "{name} có gây táo bón không",
)
FREE_WRAPPERS = ("{q}", "cho mình hỏi {q}", "{q} ạ", "bác sĩ ơi {q}", "{q} vậy", "em thắc mắc là {q}")
CONDITION_WRAPPERS = ("{c}", "bệnh {c}", "bị {c}", "{c} nặng", "{c} mạn tính", "{c} ở người lớn",
                      "điều trị {c}", "{c} kéo dài", "con bị {c}", "mẹ em bị {c}", "thuốc trị {c}",
                      "{c} dùng thuốc gì", "{c} thì uống thuốc nào", "chữa {c}", "{c} tái phát",
                      "{c} lâu năm", "người lớn bị {c}", "{c} nhẹ", "{c} cấp", "dự phòng {c}")


def name_forms(names: Sequence[str]) -> list[str]:
    """How a drug name is typed: as printed, lower case, capitalised."""
    forms: list[str] = []
    for name in names:
        for form in (name, name.lower(), name[:1].upper() + name[1:].lower()):
            if form not in forms:
                forms.append(form)
    return forms


def section_phrases() -> list[str]:
    data = tomllib.loads((VOCABULARY / "sections.toml").read_text(encoding="utf-8"))
    return [p for section in data["section"] for p in section.get("phrases", [])]


def fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFD", text.casefold().replace("đ", "d"))
    return " ".join("".join(c for c in decomposed if not unicodedata.combining(c)).split())


def condition_forms(indication_texts: Sequence[str] | None = None, present: bool = True) -> list[str]:
    """clinical.toml's conditions, each as its name and its synonyms (how clinicians type it). With
    `indication_texts` (the formulary's Chỉ định sections): only the conditions they name (`present`), or
    only those they do not."""
    data = tomllib.loads((VOCABULARY / "clinical.toml").read_text(encoding="utf-8"))
    folded = [f" {fold(t)} " for t in indication_texts or ()]
    out: list[str] = []
    for entry in data["condition"]:
        forms = [entry["name"], *entry.get("synonyms", [])]
        if indication_texts is not None:
            named = any(f" {fold(form)} " in text for form in forms for text in folded)
            if named != present:
                continue
        out += forms
    return out


def _shuffled(texts: Iterator[str], seed: int) -> Iterator[str]:
    pool = list(dict.fromkeys(texts))  # each text once
    random.Random(seed).shuffle(pool)
    return iter(pool)


def section_questions(names: Sequence[str], seed: int) -> Iterator[str]:
    combos = itertools.product(name_forms(names), section_phrases(), SECTION_WRAPPERS)
    return _shuffled((w.format(name=n, phrase=p) for n, p, w in combos), seed)


def free_form_questions(names: Sequence[str], seed: int) -> Iterator[str]:
    combos = itertools.product(name_forms(names), FREE_FORM, FREE_WRAPPERS)
    return _shuffled((w.format(q=q.format(name=n)) for n, q, w in combos), seed)


def indications(seed: int, forms: Sequence[str]) -> Iterator[str]:
    """Each condition form in each wrapper, as typed and typed without diacritics."""
    texts = [w.format(c=c) for c, w in itertools.product(forms, CONDITION_WRAPPERS)]
    return _shuffled(itertools.chain(texts, (fold(t) for t in texts)), seed)


def take(texts: Iterator[str], n: int) -> list[str]:
    out = list(itertools.islice(texts, n))
    if len(out) < n:
        raise RuntimeError(f"only {len(out)} distinct requests could be made, {n} were asked for")
    return out
