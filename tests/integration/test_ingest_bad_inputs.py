"""Bad input to build_chunks() -> IngestInputError with a machine-readable kind and a clear message."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from formulary_fixtures.sample_formulary import render_sample
from ingest.build import IngestInputError, build_chunks


@pytest.fixture(scope="module")
def sample_bytes() -> bytes:
    return render_sample().pdf


def expect(path: Path, kind: str) -> IngestInputError:
    with pytest.raises(IngestInputError) as info:
        build_chunks(path)
    assert info.value.kind == kind, info.value.message
    assert info.value.message
    return info.value


def test_text_file_renamed_pdf(tmp_path: Path) -> None:
    path = tmp_path / "notes.pdf"
    path.write_text("Chỉ định: tăng huyết áp.\nĐây là tệp văn bản, không phải PDF.\n", encoding="utf-8")
    assert "%PDF-" in expect(path, "not_pdf").message


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.pdf"
    path.write_bytes(b"")
    expect(path, "not_pdf")


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.9])
def test_truncated_pdf(tmp_path: Path, sample_bytes: bytes, fraction: float) -> None:
    path = tmp_path / "truncated.pdf"
    path.write_bytes(sample_bytes[: int(len(sample_bytes) * fraction)])
    expect(path, "corrupt")


def test_garbage_after_header(tmp_path: Path) -> None:
    path = tmp_path / "garbage.pdf"
    path.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 40)
    expect(path, "corrupt")


def test_encrypted_pdf(tmp_path: Path, sample_bytes: bytes) -> None:
    doc = pymupdf.open(stream=sample_bytes, filetype="pdf")
    path = tmp_path / "locked.pdf"
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="mat-khau", owner_pw="chu-so-huu")
    doc.close()
    assert "password" in expect(path, "encrypted").message


def test_pdf_with_text_but_no_monographs(tmp_path: Path) -> None:
    doc = pymupdf.open()
    for n in range(3):
        page = doc.new_page()
        page.insert_text((72, 72), f"Bien ban hop so {n + 1}", fontsize=16)
        page.insert_text((72, 110), "Noi dung cuoc hop: ke hoach nam sau, ngan sach va nhan su.", fontsize=10)
    path = tmp_path / "minutes.pdf"
    doc.save(path)
    doc.close()
    assert "monograph" in expect(path, "no_monographs").message


def test_owner_password_only_pdf_is_readable(tmp_path: Path, sample_bytes: bytes) -> None:
    doc = pymupdf.open(stream=sample_bytes, filetype="pdf")
    path = tmp_path / "restricted.pdf"
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="chu-so-huu",
             permissions=pymupdf.PDF_PERM_PRINT)
    doc.close()
    result = build_chunks(path)
    assert result.monograph_count == 8 and result.gates_ok
