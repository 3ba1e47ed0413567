"""A PDF whose text layer comes out as U+FFFD only (tests/fixtures/m041-streamswap-sample.pdf, a real
damaged font map; issue 44 item 8): every page is found unreadable, read by OCR under `--ocr auto`, and
refused with a message naming the damaged text layer under `--ocr never`, never stored as passages of
`����`. The check on its own: a page mostly U+FFFD or unassigned code points is not language; a page
of real text with a few U+FFFD (a missing glyph here and there) still is.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from ragcli.errors import InputError
from ragcli.ingest import health, pdf

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "m041-streamswap-sample.pdf"


def test_replacement_only_text_is_not_language():
    assert "replacement characters" in health.not_language("\ufffd" * 30 + " " + "\ufffd" * 12)
    assert "unassigned" in health.not_language("\U000e0fff\u0378" * 20)
    real = ("The aneurysm is clipped at its neck and the \ufffd parent artery is kept open; the surgeon checks "
            "the flow with a small probe before closing the dura. ") * 3
    assert health.not_language(real) is None
    assert health.not_language("\ufffd" * 5) is None  # too little to tell


def test_the_damaged_fixture_is_refused_without_ocr():
    with pytest.raises(InputError, match="is not text .*--ocr auto"):
        pdf.parse(FIXTURE, ocr="never")


def test_the_damaged_fixture_is_read_by_ocr(tmp_path):
    import pymupdf

    one = tmp_path / "m041-page1.pdf"  # the first page only: OCR of all 18 takes minutes on a small machine
    with pymupdf.open(FIXTURE) as doc:
        doc.select([0])
        doc.save(one)
    book = pdf.parse(one, ocr="auto")
    text = " ".join(s.text for s in book.sections)
    assert "\ufffd" not in text and "Primer" in text, text[:300]
    assert book.unreadable_pages == [1] and "read by OCR" in book.warnings[0]


def test_the_whole_fixture_is_found_unreadable_page_by_page():
    import pymupdf

    with pymupdf.open(FIXTURE) as doc:
        reasons = [health.not_language(page.get_text()) or "" for page in doc]
    assert len(reasons) == 18 and all(reasons), reasons
    # PyMuPDF's plain text of this file is the shifted form; pdf.py's reading gives U+FFFD: both are caught
    with pytest.raises(InputError):
        pdf.parse(FIXTURE, ocr="never")
