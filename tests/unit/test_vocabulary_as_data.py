"""Vocabulary as data: no section key of sections.toml is written in the code of rag_server/ or ingest/ (code
asks `Vocabulary.roles` what a section is for), and ingestion writes no Vietnamese words of its own into a
chunk but those of strings.toml. Docstrings may name a key (they are prose); string literals may not."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.parse import table_marker
from rag_server.retrieval.reference import referenced_sections
from rag_server.vocabulary import load_vocabulary
from rag_server.vocabulary.strings import load_strings

ROOT = Path(__file__).resolve().parents[2]
VOCABULARY = ROOT / "rag_server" / "vocabulary"
KEYS = sorted(s["key"] for s in tomllib.loads((VOCABULARY / "sections.toml").read_text("utf-8"))["section"])
# a key as a whole word of a literal: "chi_dinh", "monographs_without_chi_dinh", "chi_dinh:2"
KEY_IN = re.compile(r"(?<![a-z0-9])(" + "|".join(map(re.escape, KEYS)) + r")(?![a-z0-9])")
MARKED = "àáảãạăắằẳẵặâấầẩẫậèéẻẽẹêếềểễệìíỉĩịòóỏõọôốồổỗộơớờởỡợùúủũụưứừửữựỳýỷỹỵđ"
VIETNAMESE = re.compile(rf"[^\W\d_]*[{MARKED}][^\W\d_]*", re.IGNORECASE)  # a word with a Vietnamese letter


def _sources(*roots: str) -> Iterator[Path]:
    """The Python sources under `roots` (generated code and test fixtures left out)."""
    for root in roots:
        for path in sorted((ROOT / root).rglob("*.py")):
            parts = path.relative_to(ROOT).parts
            if "gen" not in parts and "fixtures" not in parts:
                yield path


def _literals(path: Path) -> Iterator[ast.Constant]:
    """The string literals of a source, docstrings and regular expressions left out."""
    tree = ast.parse(path.read_text("utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
        func = node.func if isinstance(node, ast.Call) else None
        if isinstance(func, ast.Attribute) and func.attr == "compile":  # re.compile(...): a pattern
            skip.update(id(a) for a in getattr(node, "args", ()))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node


def test_the_vocabulary_declares_the_keys_the_scan_looks_for() -> None:
    assert len(KEYS) > 15 and "chi_dinh" in KEYS and "lieu_luong_va_cach_dung" in KEYS
    assert KEY_IN.search("monographs_without_chi_dinh") and not KEY_IN.search("chi_dinhx")


def test_no_section_key_is_written_in_code() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
        for path in _sources("rag_server", "ingest")
        for node in _literals(path)
        if KEY_IN.search(node.value)
    ]
    assert offenders == [], "ask Vocabulary.roles (sections.toml [roles]) for the section a role needs"


def test_the_check_sees_a_key_in_code(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text('"""Docs may say chi_dinh."""\nKEY = "chi_dinh"\nNAME = f"monographs_without_{KEY}"\n')
    assert [n.value for n in _literals(source) if KEY_IN.search(n.value)] == ["chi_dinh"]


def test_ingestion_writes_no_vietnamese_of_its_own() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
        for path in _sources("ingest")
        for node in _literals(path)
        if any(len(w) > 1 for w in VIETNAMESE.findall(node.value))
    ]
    assert offenders == [], "user-facing words belong in rag_server/vocabulary/strings.toml"


def test_the_chunk_strings_come_from_strings_toml() -> None:
    strings = load_strings()
    assert table_marker(12) == strings.in_chunk("table_marker", page=12) == "[Bảng: xem trang PDF 12]"
    assert {"table_marker", "table_note", "table_where", "table_where_printed"} <= set(strings.chunk)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("Xem mục Quá liều và xử trí.", ["qua_lieu_va_xu_tri"]), ("(xem thêm phần Thận trọng)", ["than_trong"]),
     ("Không xem được.", [])],
)
def test_pointer_words_are_vocabulary_data(text: str, expected: list[str]) -> None:
    vocabulary = load_vocabulary()
    assert vocabulary.pointer.see == {"xem"} and vocabulary.pointer.kinds == {"muc", "phan"}
    assert referenced_sections(text, vocabulary) == expected
