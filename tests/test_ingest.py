"""Ingest of real PDFs: sections, figures, page labels, running lines; re-ingest, --replace, remove.

The sample book and the fixture PDFs are ingested once per session (conftest `template_db`); tests
that change the corpus work on a copy (`corpus_db`).
"""
from __future__ import annotations

import json
import shutil

import pytest

from conftest import BOOKS, FIXTURE_PDFS, SAMPLE_BOOK

pymupdf = pytest.importorskip("pymupdf")
SAMPLE_TITLE = "A Primer of Cerebrovascular Neurosurgery"


def _rows(path, sql, *args):
    from ragcli.store.db import sqlite3

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def _sections(path, book_id):
    return [json.loads(r[0]) for r in _rows(path, "SELECT path FROM sections WHERE book_id=? ORDER BY ordinal",
                                            book_id)]


def _labels(path, book_id):
    return dict(_rows(path, "SELECT number, label FROM pages WHERE book_id=?", book_id))


def test_every_book_went_in(template_db):
    results = template_db["results"]
    assert {r.status for r in results.values()} == {"added"}
    primer = results["primer"]
    assert primer.title == SAMPLE_TITLE and primer.pages == 18
    assert primer.passages > 30 and primer.figures == 10 and primer.embedded == primer.passages + 10


def test_sample_book_sections_keep_the_outline_path(template_db):
    paths = _sections(template_db["path"], "primer")
    assert ["Chapter 2 Intracranial Aneurysms", "2.1 Subarachnoid Hemorrhage", "2.1.1 Clinical Grading"] in paths
    assert ["Chapter 5 Vasospasm and Delayed Cerebral Ischemia", "5.1 Nimodipine"] in paths
    assert ["Glossary"] in paths
    rows = _rows(template_db["path"], "SELECT page_start, page_end FROM sections WHERE book_id='primer'")
    assert all(1 <= a <= b <= 18 for a, b in rows)
    # 5.1 starts on physical page 13 (printed "11")
    start = _rows(template_db["path"], "SELECT page_start FROM sections WHERE book_id='primer' AND path LIKE ?",
                  '%"5.1 Nimodipine"%')
    assert start == [(13,)]


def test_headings_by_font_when_there_is_no_outline(template_db):
    with pymupdf.open(FIXTURE_PDFS["heart"]) as doc:
        assert doc.get_toc() == []
    paths = _sections(template_db["path"], "heart")
    titles = [p[-1] for p in paths]
    for heading in ("1. Introduction", "2. Methods", "3. Results", "10. Medication", "11. Discussion"):
        assert [heading] in paths, titles  # top level: not nested under the article title
    # reading order in a two-column layout: numbered sections come in their own order
    numbered = [t for t in titles if t[:1].isdigit()]
    assert numbered == sorted(numbered, key=lambda t: int(t.split(".")[0]))


def test_figure_captions_found(template_db):
    rows = _rows(template_db["path"], "SELECT book_id, number, caption, page, bbox FROM figures")
    by_book: dict = {}
    for book_id, number, caption, page, bbox in rows:
        by_book.setdefault(book_id, {})[number] = (caption, page, bbox)
    assert sorted(by_book["primer"]) == ["1.1", "1.2", "2.1", "2.2", "2.3", "3.1", "4.1", "4.2", "5.1", "6.1"]
    assert by_book["primer"]["2.2"][0].startswith("Figure 2.2: Permanent clip")
    assert by_book["primer"]["3.1"][1] == 9
    # two captions in one text block, each with the nearest image
    assert by_book["faa"]["7-26"][0] == "Figure 7-26. Self-locking nuts."
    assert by_book["faa"]["7-27"][0] == "Figure 7-27. Stainless steel self-locking nut."
    assert by_book["faa"]["7-26"][2] is not None
    assert by_book["malawi"]["1"][0].startswith("Figure 1 Patient flow pattern")
    sections = _rows(template_db["path"], "SELECT section_path FROM figures WHERE book_id='primer' AND number='5.1'")
    assert json.loads(sections[0][0])[0] == "Chapter 5 Vasospasm and Delayed Cerebral Ischemia"  # page 14


def test_page_labels_as_printed(template_db):
    primer = _labels(template_db["path"], "primer")
    assert primer[1] == "i" and primer[2] == "ii" and primer[3] == "1" and primer[18] == "16"
    assert _labels(template_db["path"], "faa") == {1: "7-45"}
    # the PDF labels its pages from 0, the page prints "Page 2 of 10": the printed number wins
    malawi = _labels(template_db["path"], "malawi")
    assert malawi[2] == "2" and malawi[10] == "10"


def test_titles(template_db):
    titles = dict(_rows(template_db["path"], "SELECT id, title FROM books"))
    assert titles["primer"] == SAMPLE_TITLE
    assert titles["heart"] == "Patient Experiences of Structured Heart Failure Programmes"  # no metadata title
    assert titles["malawi"].startswith("Understanding the barriers to setting up a healthcare quality")


def test_running_headers_and_footers_are_not_passages(template_db):
    texts = [r[0] for r in _rows(template_db["path"],
                                 "SELECT text FROM passages WHERE book_id='primer' AND page_start >= 3")]
    assert texts and not any(SAMPLE_TITLE in t for t in texts)
    malawi = " ".join(r[0] for r in _rows(template_db["path"], "SELECT text FROM passages WHERE book_id='malawi'"))
    assert "Page 2 of 10" not in malawi and "biomedcentral.com/1472-6963/14/1" not in malawi


def test_passages_are_sized_and_never_cross_sections(template_db):
    from ragcli.ingest import chunking

    rows = _rows(template_db["path"], "SELECT text, section_path, page_start, page_end FROM passages "
                 "WHERE kind='passage'")
    assert all(len(t.split()) <= chunking.MAX_WORDS + 5 for t, *_ in rows)
    assert all(a <= b for *_, a, b in rows)
    sections = {r[0] for r in _rows(template_db["path"], "SELECT path FROM sections")}
    assert {r[1] for r in rows} <= sections


def test_figures_are_searchable_items(template_db, corpus_db, cli):
    n_fig = _rows(template_db["path"], "SELECT COUNT(*) FROM figures")[0][0]
    assert _rows(template_db["path"], "SELECT COUNT(*) FROM passages WHERE kind='figure'")[0][0] == n_fig
    res = cli("search", "pterional craniotomy burr holes bone flap outline", "--json", "--mode", "lexical")
    assert res.exit_code == 0, res.stderr
    figures = [h for h in json.loads(res.stdout) if h["kind"] == "figure"]
    assert figures and figures[0]["figure_number"] == "3.1" and figures[0]["page_label"] == "7"


def test_second_ingest_is_a_no_op(corpus_db, cli, fingerprint):
    before = fingerprint(corpus_db)
    res = cli("ingest", SAMPLE_BOOK, "--json")
    assert res.exit_code == 0, res.stderr
    report = json.loads(res.stdout)
    assert [(r["status"], r["book_id"]) for r in report] == [("unchanged", "primer")]
    res = cli("ingest", SAMPLE_BOOK)
    assert res.exit_code == 0 and "unchanged" in res.stderr and "already in the corpus" in res.stderr
    assert fingerprint(corpus_db) == before


def _changed_copy(src, folder):
    """The same article with one extra sentence on page 3 (same file name: same default book id)."""
    folder.mkdir()
    target = folder / src.name
    with pymupdf.open(src) as doc:
        doc[2].insert_text((60, 400), "Zanzibar marmalade committees reviewed every ward register.", fontsize=9)
        doc.save(target)
    return target


def test_changed_file_needs_replace_and_reuses_vectors(corpus_db, cli, fingerprint, tmp_path):
    changed = _changed_copy(FIXTURE_PDFS["malawi"], tmp_path / "v2")
    before = fingerprint(corpus_db)
    res = cli("ingest", changed, "--id", "malawi")
    assert res.exit_code == 2 and "--replace" in res.stderr
    assert fingerprint(corpus_db) == before

    res = cli("ingest", changed, "--id", "malawi", "--replace", "--json")
    assert res.exit_code == 0, res.stderr
    (report,) = json.loads(res.stdout)
    assert report["status"] == "replaced" and report["book_id"] == "malawi"
    assert report["reused"] > 0 and 0 < report["embedded"] < report["reused"]

    from ragcli.store import db

    conn = db.connect(corpus_db, create=False)
    n_pass = conn.execute("SELECT COUNT(*) FROM passages").fetchone()[0]
    assert conn.execute("SELECT COUNT(*) FROM passage_vec").fetchone()[0] == n_pass  # no orphans
    assert conn.execute("SELECT COUNT(*) FROM books").fetchone()[0] == 4
    hits = conn.execute("SELECT rowid FROM passages_fts WHERE passages_fts MATCH 'marmalade'").fetchall()
    assert len(hits) == 1
    conn.close()
    res = cli("ingest", changed, "--id", "malawi", "--replace", "--json")
    assert json.loads(res.stdout)[0]["status"] == "unchanged"


def test_books_list_and_remove(corpus_db, cli):
    res = cli("books", "--json")
    assert res.exit_code == 0, res.stderr
    books = {b["id"]: b for b in json.loads(res.stdout)}
    assert set(books) == set(BOOKS)
    assert books["primer"]["page_count"] == 18 and books["primer"]["figures"] == 10 and books["primer"]["sections"] > 30

    res = cli("books", "remove", "malawi", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout) == {"removed": "malawi"}
    assert {b["id"] for b in json.loads(cli("books", "--json").stdout)} == set(BOOKS) - {"malawi"}
    for table in ("pages", "sections", "figures", "passages", "terms"):
        assert _rows(corpus_db, f"SELECT COUNT(*) FROM {table} WHERE book_id='malawi'") == [(0,)]
    from ragcli.store import db

    conn = db.connect(corpus_db, create=False)
    assert conn.execute("SELECT COUNT(*) FROM passage_vec WHERE book_id='malawi'").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM passages_fts WHERE passages_fts MATCH 'Lilongwe'").fetchone()[0] == 0
    conn.close()

    res = cli("books", "remove", "malawi")
    assert res.exit_code == 5 and "no book with id 'malawi'" in res.stderr


def test_books_on_an_empty_corpus(cli, tmp_path):
    from ragcli.store import db

    db.connect(tmp_path / "corpus.db").close()  # an empty corpus ($RAGCLI_DB)
    res = cli("books")
    assert res.exit_code == 0 and "the corpus is empty" in res.stderr
    res = cli("books", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout) == []


@pytest.mark.parametrize("before", [False, True])
def test_read_only_commands_refuse_a_missing_corpus(run_module, tmp_path, before):
    """`books --db /tmp/missing.db` (or `--db` before the command) fails and creates nothing."""
    missing = tmp_path / "nowhere" / "missing.db"
    for command in (["books"], ["info"], ["summary", "topics"]):
        args = ["--db", missing, *command] if before else [*command, "--db", missing]
        proc = run_module(*args)
        assert proc.returncode == 4 and "no corpus at" in proc.stderr, (command, proc.stderr)
        assert not missing.parent.exists()


def test_title_and_id_options(cli, tmp_path):
    res = cli("ingest", FIXTURE_PDFS["faa"], "--title", "Nuts and Bolts", "--id", "nuts", "--json")
    assert res.exit_code == 0, res.stderr
    (report,) = json.loads(res.stdout)
    assert (report["book_id"], report["title"], report["status"]) == ("nuts", "Nuts and Bolts", "added")
    res = cli("ingest", FIXTURE_PDFS["faa"], FIXTURE_PDFS["heart"], "--id", "x")
    assert res.exit_code == 2 and "single file" in res.stderr


def test_folder_ingest_in_a_subprocess(run_module, tmp_path):
    folder = tmp_path / "books" / "nested"
    folder.mkdir(parents=True)
    shutil.copy(FIXTURE_PDFS["faa"], folder)
    (folder / "cover.png").write_bytes(b"\x89PNG not a book")
    proc = run_module("ingest", tmp_path / "books", "--json")
    assert proc.returncode == 0, proc.stderr
    (report,) = json.loads(proc.stdout)
    assert report["status"] == "added" and report["figures"] == 2
    proc = run_module("ingest", tmp_path / "books")
    assert proc.returncode == 0 and "unchanged" in proc.stderr


def test_ingest_hashes_the_file_once(embedder, tmp_path, monkeypatch):
    """The unchanged-file check and the parsed book share one read of the file's sha256."""
    from ragcli import text
    from ragcli.ingest import pdf, pipeline
    from ragcli.store import db

    calls = []

    def counting(path):
        calls.append(path)
        return text.file_sha256(path)

    monkeypatch.setattr(pipeline, "file_sha256", counting)
    monkeypatch.setattr(pdf, "file_sha256", counting)
    conn = db.connect(tmp_path / "c.db")
    result = pipeline.ingest_file(conn, FIXTURE_PDFS["malawi"], embedder)
    assert result.status == "added" and len(calls) == 1
    assert result.book_id and conn.execute("SELECT file_hash FROM books").fetchone()[0] == text.file_sha256(
        FIXTURE_PDFS["malawi"])
    conn.close()
