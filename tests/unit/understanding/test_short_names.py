"""Short names clinicians type for a drug (clinical.toml [[short_name]]) resolve to the drug whose title or
INN they stand for, only when the served formulary has that name. Fictional catalog."""

from __future__ import annotations

from dataclasses import replace

from fictional_formulary import build_chunks

from rag_server.text.match import phrase
from rag_server.understanding.catalog import build_catalog
from rag_server.vocabulary.language import Language, load_language


def _language(pairs: list[tuple[str, str]]) -> Language:
    base = load_language()
    clinical = replace(base.clinical, short_names=tuple((phrase(s), phrase(n)) for s, n in pairs))
    return replace(base, clinical=clinical)


def test_a_short_name_finds_the_drug_it_stands_for() -> None:
    catalog = build_catalog(build_chunks(), _language([("ZTR", "zentorin"), ("XQZ", "no such drug")]))
    assert [m.drug_ids for m in catalog.find("bn dùng ZTR liều bao nhiêu")] == [("zentorin",)]
    assert [m.drug_ids for m in catalog.find("ztr có gây ho không")] == [("zentorin",)]
    # standing for a drug the formulary does not have, a short name is no name at all
    assert catalog.find("bn dùng XQZ liều bao nhiêu") == []


def test_the_bundled_short_names_stand_for_real_names() -> None:
    shorts = load_language().clinical.short_names
    assert ("mtx", "methotrexat") in {(s.folded[0], " ".join(n.folded)) for s, n in shorts}
    assert all(len(s) and len(n) for s, n in shorts)
