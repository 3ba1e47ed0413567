"""Issue 17: damaged books say what they lost, a book with text never goes in empty, `ingest --json`
reports every file (a single failed one too), and book ids keep the letters of any file name.

Damaged copies are made here from the real fixture PDFs: bytes flipped inside one page's content
stream, one page's content stream cut short (a truncated stream; the rest of the file intact)."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from conftest import FIXTURE_PDFS

pymupdf = pytest.importorskip("pymupdf")
HEART = FIXTURE_PDFS["heart"]


def _content_span(data: bytes, path, page_no: int) -> tuple[int, int]:
    """Byte span of the raw data of a page's (first) content stream in the file."""
    with pymupdf.open(path) as doc:
        xref = doc[page_no - 1].get_contents()[0]
    obj = re.search(rb"(?<![0-9])%d\s+0\s+obj\b" % xref, data)
    start = re.compile(rb"stream\r?\n").search(data, obj.end()).end()
    return start, data.index(b"endstream", start)


def flipped_copy(tmp_path, page_no: int = 3):
    """The heart-failure article with 20 bytes inverted in the middle of page 3's content stream."""
    data = bytearray(HEART.read_bytes())
    start, end = _content_span(bytes(data), HEART, page_no)
    mid = (start + end) // 2
    for k in range(20):
        data[mid + 3 * k] ^= 0xFF
    out = tmp_path / "heart-flipped.pdf"
    out.write_bytes(bytes(data))
    return out


def cut_stream_copy(tmp_path, page_no: int = 4):
    """The article with page 4's content stream truncated to a tenth (its Length no longer true)."""
    data = HEART.read_bytes()
    start, end = _content_span(data, HEART, page_no)
    out = tmp_path / "heart-cut.pdf"
    out.write_bytes(data[: start + (end - start) // 10] + b"\n" + data[end:])
    return out


@pytest.mark.parametrize("make,page", [(flipped_copy, 3), (cut_stream_copy, 4)])
def test_damaged_copy_is_ingested_with_a_warning_naming_its_page(corpus_db, cli, make, page, tmp_path):
    damaged = make(tmp_path)
    res = cli("ingest", damaged, "--id", "damaged", "--json")
    assert res.exit_code == 0, res.stderr
    (report,) = json.loads(res.stdout)
    assert report["status"] == "added" and report["warnings"], report
    assert re.search(rf"\bpage {page}\b", report["warnings"][0]) and "damaged" in report["warnings"][0]
    # one line per book on stderr, naming the page; no MuPDF chatter
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "warning" in lines[0] and f"page {page}" in lines[0], res.stderr
    clean = json.loads(cli("books", "--json").stdout)
    by_id = {b["id"]: b for b in clean}
    assert by_id["damaged"]["warnings"] == report["warnings"]
    assert by_id["damaged"]["unreadable_pages"] == report["unreadable_pages"]
    assert by_id["heart"]["warnings"] == [] and by_id["heart"]["unreadable_pages"] == []
    assert by_id["damaged"]["passages"] < by_id["heart"]["passages"]  # text was really lost
    # kept in the corpus: `books` shows it later, in the table run too
    later = cli("books")
    assert later.exit_code == 0 and f"page {page}" in later.stderr and "damaged" in later.stderr
    assert "damaged" in json.loads(cli("info", "--json").stdout)["books_with_warnings"]


def test_strict_refuses_a_damaged_book_and_writes_nothing(corpus_db, cli, fingerprint, tmp_path):
    damaged = flipped_copy(tmp_path)
    before = fingerprint(corpus_db)
    res = cli("ingest", damaged, "--strict", "--json")
    assert res.exit_code == 3
    (report,) = json.loads(res.stdout)
    assert report["status"] == "failed" and "page 3" in report["error"] and "--strict" in report["error"]
    assert fingerprint(corpus_db) == before
    # a healthy file goes in under --strict as usual
    res = cli("ingest", FIXTURE_PDFS["faa"], "--id", "faa-again", "--strict", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)[0]["warnings"] == []


def test_unreadable_page_is_an_ocr_candidate_in_the_page_records(tmp_path):
    from ragcli.ingest import pdf

    parsed = pdf.parse(cut_stream_copy(tmp_path))
    health = {p.number: p.health for p in parsed.pages}
    assert health[4] in ("unreadable", "partial")
    assert all(h == "ok" for n, h in health.items() if n != 4)
    assert parsed.unreadable_pages == ([4] if health[4] == "unreadable" else [])


def test_healthy_fixtures_have_no_warnings(template_db):
    for book_id, result in template_db["results"].items():
        assert result.warnings == [] and result.unreadable_pages == [], book_id


def one_line_pdf(path, pages: int = 600):
    """One line of real text per page, at the top: where running headers live."""
    with pymupdf.open() as doc:
        for i in range(1, pages + 1):
            doc.new_page().insert_text((72, 72), f"Line {i}: aneurysm clip number {i}.")
        doc.save(path)
    return path


def test_one_line_per_page_book_keeps_its_lines(cli, tmp_path):
    book = one_line_pdf(tmp_path / "clips.pdf")
    res = cli("ingest", book, "--json")
    assert res.exit_code == 0, res.stderr
    (report,) = json.loads(res.stdout)
    assert report["status"] == "added" and report["pages"] == 600 and report["passages"] == 600
    assert report["warnings"] == []
    hits = json.loads(cli("search", "aneurysm clip number 417", "--json", "--mode", "lexical").stdout)
    assert hits[0]["text"] == "Line 417: aneurysm clip number 417." and hits[0]["page"] == 417


def test_running_headers_are_still_removed(template_db):
    """The fix keeps lines that are a page's only text; real running headers still go."""
    from ragcli.store.db import sqlite3

    conn = sqlite3.connect(template_db["path"])
    texts = [t for (t,) in conn.execute("SELECT text FROM passages WHERE book_id = 'faa'")]
    conn.close()
    assert texts and not any(t.startswith("7-45") for t in texts)


def test_a_book_whose_text_gives_no_passage_fails_with_a_reason(embedder, tmp_path, monkeypatch):
    from ragcli.errors import InputError
    from ragcli.ingest import pipeline
    from ragcli.store import db

    book = one_line_pdf(tmp_path / "clips.pdf", pages=40)
    monkeypatch.setattr(pipeline.chunking, "chunk_book", lambda sections, figures: [])
    conn = db.connect(tmp_path / "c.db")
    with pytest.raises(InputError, match=r"40 pages with [\d,]+ characters of text gave no passage"):
        pipeline.ingest_file(conn, book, embedder)
    assert conn.execute("SELECT COUNT(*) FROM books").fetchone()[0] == 0


@pytest.mark.parametrize("args", [["missing.pdf"], ["not-a-pdf.pdf"], ["missing.pdf", "other-missing.pdf"]])
def test_failed_ingest_json_prints_a_report_for_every_file(cli, tmp_path, args):
    (tmp_path / "not-a-pdf.pdf").write_text("plain text, not a PDF\n" * 20)
    res = cli("ingest", *[tmp_path / a for a in args], "--json")
    assert res.exit_code == 3
    reports = json.loads(res.stdout)
    assert [r["path"] for r in reports] == [str(tmp_path / a) for a in args]
    assert all(r["status"] == "failed" and r["error"] and r["exit_code"] == 3 for r in reports)


def test_failed_single_file_json_in_a_real_process(run_module, tmp_path):
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(HEART.read_bytes()[:5000])
    proc = run_module("ingest", bad, "--json", "--db", tmp_path / "c.db")
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    (report,) = json.loads(proc.stdout)
    assert report["status"] == "failed" and "bad.pdf" in report["error"]


@pytest.mark.parametrize("name,book_id", [
    ("Ünïcode name.pdf", "unicode-name"),
    ("Привет мир.pdf", "privet-mir"),
    ("Ελληνικά.pdf", "ellenika"),
    ("fm4-25-11 first aid.pdf", "fm4-25-11-first-aid"),
])
def test_book_ids_keep_the_letters_of_any_file_name(cli, tmp_path, name, book_id):
    target = tmp_path / name
    shutil.copy(FIXTURE_PDFS["faa"], target)
    res = cli("ingest", target, "--json")
    assert res.exit_code == 0, res.stderr
    (report,) = json.loads(res.stdout)
    assert report["book_id"] == book_id and report["path"] == str(target)


def test_a_name_without_letters_falls_back_to_the_hash_prefix(cli, tmp_path):
    from ragcli.text import file_sha256

    target = tmp_path / "☠☠☠.pdf"
    shutil.copy(FIXTURE_PDFS["faa"], target)
    (report,) = json.loads(cli("ingest", target, "--json").stdout)
    assert report["book_id"] == file_sha256(target)[:12]


def test_health_sentences():
    from ragcli.ingest import health

    assert health.page_ranges([9, 3, 4, 5, 12, 13]) == "3-5, 9, 12-13"
    pages = [health.PageHealth(n, 1000) for n in range(1, 11)]
    pages[2].problems = ["syntax error in content stream"]
    pages[3].problems = ["zlib error"]
    pages[3].chars = 10
    pages[6].chars, pages[6].image_cover = 0, 0.95
    pages[7].chars = 0
    health.classify(pages)
    assert [p.status for p in pages[2:8]] == ["partial", "unreadable", "ok", "ok", "no_text_layer", "blank"]
    out = health.warnings(pages, ["trying to repair broken xref"], (0, 5), (100, 10_000))
    assert out == ["page 4 could not be read and page 3 only in part: the file is damaged (MuPDF repaired "
                   "its structure)", "page 7 has no text layer (scanned?): its text is not in the corpus"]
    assert health.warnings(pages[:2], [], (4, 5), (6_000, 10_000)) == [
        "the outline is damaged (4 of 5 entries point to no page): sections come from headings instead",
        "60% of the text (6,000 of 10,000 characters) was taken for running headers and footers and left out"]


def test_a_book_stored_before_the_health_columns_reads_as_healthy(tmp_path, monkeypatch):
    from ragcli.store import corpus as store
    from ragcli.store import db, migrations

    path = tmp_path / "old.db"
    before = [s for s in migrations.STEPS if s[0] < "m005"]
    with monkeypatch.context() as m:
        m.setattr(migrations, "STEPS", before)
        conn = db.connect(path)
        with conn:
            conn.execute("INSERT INTO books(id, title, path, file_hash, page_count, ingested_at) "
                         "VALUES ('old', 'Old', '/x.pdf', 'ab', 3, '2026-01-01')")
            conn.execute("INSERT INTO pages(book_id, number, label) VALUES ('old', 1, '1')")
        conn.close()
    conn = db.connect(path)
    (book,) = store.list_books(conn)
    assert book.id == "old" and book.warnings == [] and book.unreadable_pages == []
    assert conn.execute("SELECT health FROM pages").fetchall() == [("ok",)]
