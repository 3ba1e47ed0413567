"""Bad input through the CLI: each gets a clear message and a documented exit code, and the corpus
file is exactly as before (compared row by row with `fingerprint`). Exit codes: 2 usage, 3 input,
4 corpus, 5 not found, 130 interrupted (ragcli/errors.py)."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3 as stdlib_sqlite3

import pytest

from conftest import FIXTURE_PDFS, SAMPLE_BOOK

pymupdf = pytest.importorskip("pymupdf")
MALAWI = FIXTURE_PDFS["malawi"]


@pytest.fixture
def bad_files(tmp_path):
    """Broken inputs made from the real fixture PDFs."""
    folder = tmp_path / "bad"
    folder.mkdir()
    data = MALAWI.read_bytes()
    (folder / "truncated.pdf").write_bytes(data[: int(len(data) * 0.3)])
    (folder / "notes.pdf").write_text("Meeting notes, not a PDF at all.\n" * 40)
    (folder / "random.pdf").write_bytes(bytes((i * 7919 + 13) % 256 for i in range(8000)))
    (folder / "notes.txt.bin").write_bytes(b"\x00\x01binary")
    with pymupdf.open(MALAWI) as doc:
        doc.save(folder / "secret.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="s3cret",
                 owner_pw="owner-pw")
    with pymupdf.open(MALAWI) as doc, pymupdf.open() as scan:
        for page in list(doc)[:2]:  # each page rendered to a picture: no text layer left
            pix = page.get_pixmap(dpi=40)
            new = scan.new_page(width=page.rect.width, height=page.rect.height)
            new.insert_image(new.rect, pixmap=pix)
        scan.save(folder / "scan.pdf")
    return folder


CASES = [  # file, exit code, words the message must hold
    ("missing.pdf", 3, "no such file"),
    ("notes.pdf", 3, "not a PDF"),
    ("random.pdf", 3, "not a PDF"),
    ("truncated.pdf", 3, "truncated or damaged"),
    ("secret.pdf", 3, "encrypted; give its password with --password"),
    ("scan.pdf", 3, "no text layer"),
]


@pytest.mark.parametrize("name,code,words", CASES)
def test_bad_file_refused_and_corpus_unchanged(corpus_db, cli, fingerprint, bad_files, name, code, words):
    before = fingerprint(corpus_db)
    res = cli("ingest", bad_files / name, *(["--ocr", "never"] if name == "scan.pdf" else []))
    assert res.exit_code == code, res.stderr
    assert words in res.stderr and name in res.stderr and "Traceback" not in res.stderr
    assert res.stdout == ""
    assert fingerprint(corpus_db) == before


def test_bad_file_into_no_corpus_creates_nothing(cli, bad_files, tmp_path):
    res = cli("ingest", bad_files / "missing.pdf")
    assert res.exit_code == 3 and not (tmp_path / "corpus.db").exists()


def test_unsupported_file_type(cli, bad_files):
    res = cli("ingest", bad_files / "notes.txt.bin")
    assert res.exit_code == 3 and "not a PDF" in res.stderr


def test_encrypted_pdf_with_password(corpus_db, cli, fingerprint, bad_files):
    before = fingerprint(corpus_db)
    res = cli("ingest", bad_files / "secret.pdf", "--password", "wrong")
    assert res.exit_code == 3 and "wrong password" in res.stderr
    assert fingerprint(corpus_db) == before
    res = cli("ingest", bad_files / "secret.pdf", "--password", "s3cret", "--json")
    assert res.exit_code == 0, res.stderr
    (report,) = json.loads(res.stdout)
    assert report["status"] == "added" and report["book_id"] == "secret" and report["passages"] > 20
    assert report["reused"] > 0  # same text as the malawi article already in the corpus


def test_folder_run_reports_bad_files_and_ingests_the_rest(cli, bad_files, tmp_path):
    shutil.copy(FIXTURE_PDFS["faa"], bad_files)
    res = cli("ingest", bad_files, "--json")
    assert res.exit_code == 3  # the first failure's code
    report = {os.path.basename(r["path"]): r for r in json.loads(res.stdout)}
    assert report["faa-amt-handbook-sample.pdf"]["status"] == "added"
    assert report["scan.pdf"]["status"] == "added" and report["scan.pdf"]["ocr_pages"] == 2  # OCR'd
    failed = {name for name, r in report.items() if r["status"] == "failed"}
    assert failed == {"notes.pdf", "random.pdf", "truncated.pdf", "secret.pdf"}
    assert all(report[name]["error"] and report[name]["exit_code"] == 3 for name in failed)
    for name in failed | {"notes.txt.bin"}:  # the file of no supported format is reported too
        assert name in res.stderr
    books = json.loads(cli("books", "--json").stdout)
    assert [b["id"] for b in books] == ["faa-amt-handbook-sample", "scan"]


def test_read_only_corpus(corpus_db, cli, fingerprint, monkeypatch):
    """Tests run as root, where chmod 444 does not stop writes. A file the user cannot write is opened
    with `?mode=ro` (ragcli.store.db); here `_writable` says no, so SQLite refuses writes exactly as it
    would for a user without write permission."""
    from ragcli.store import db

    before = fingerprint(corpus_db)
    monkeypatch.setattr(db, "_writable", lambda path: False)
    res = cli("ingest", FIXTURE_PDFS["faa"], "--id", "another")
    assert res.exit_code == 4 and "read-only" in res.stderr, res.stderr
    res = cli("books", "remove", "primer")
    assert res.exit_code == 4 and "read-only" in res.stderr, res.stderr
    res = cli("search", "nimodipine", "--json", "-k", "2")  # reading still works
    assert res.exit_code == 0 and len(json.loads(res.stdout)) == 2
    res = cli("ask", "what is nimodipine for?", "--json", "--no-expand")  # the answer, without its log
    assert res.exit_code == 0 and json.loads(res.stdout)["status"] and "was not saved" in res.stderr, res.stderr
    assert fingerprint(corpus_db) == before


def test_locked_corpus(corpus_db, cli, fingerprint, monkeypatch):
    monkeypatch.setenv("RAGCLI_BUSY_TIMEOUT_MS", "200")
    before = fingerprint(corpus_db)
    from ragcli.store.db import sqlite3  # the same SQLite library: POSIX locks never conflict within a process

    holder = sqlite3.connect(corpus_db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        res = cli("ingest", FIXTURE_PDFS["faa"], "--id", "another")
        assert res.exit_code == 4 and "locked by another process" in res.stderr, res.stderr
        res = cli("books", "remove", "primer")
        assert res.exit_code == 4 and "locked" in res.stderr, res.stderr
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert fingerprint(corpus_db) == before


def test_bad_busy_timeout_setting(corpus_db, cli, monkeypatch):
    monkeypatch.setenv("RAGCLI_BUSY_TIMEOUT_MS", "soon")
    res = cli("books")
    assert res.exit_code == 4 and "RAGCLI_BUSY_TIMEOUT_MS" in res.stderr


def test_sqlite_file_of_another_program(cli, fingerprint, tmp_path):
    other = tmp_path / "other.db"
    conn = stdlib_sqlite3.connect(other)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO customers(name) VALUES ('Ada')")
    conn.commit()
    conn.close()
    before, header = fingerprint(other), other.read_bytes()[:100]
    for args in (("ingest", FIXTURE_PDFS["faa"]), ("books",), ("search", "x"), ("info",)):
        res = cli(*args, "--db", other)
        assert res.exit_code == 4 and "is not a ragcli corpus" in res.stderr, (args, res.stderr)
    assert fingerprint(other) == before
    assert other.read_bytes()[:100] == header  # not even switched to WAL


@pytest.mark.parametrize("content", [b"just a text file\n" * 300, b"\x00" * 50 + b"x" * 5000])
def test_file_that_is_not_a_database(cli, tmp_path, content):
    path = tmp_path / "notes.db"
    path.write_bytes(content)
    res = cli("books", "--db", path)
    assert res.exit_code == 4 and "is not a ragcli corpus" in res.stderr and "Traceback" not in res.stderr
    assert path.read_bytes() == content


def test_corpus_from_a_newer_ragcli(corpus_db, cli, fingerprint, run_module):
    conn = stdlib_sqlite3.connect(corpus_db)
    conn.execute("INSERT INTO migrations(name, applied_at) VALUES ('m999_from_the_future', '2099-01-01')")
    conn.commit()
    conn.close()
    before = fingerprint(corpus_db)
    res = cli("ingest", FIXTURE_PDFS["faa"])
    assert res.exit_code == 4 and "newer ragcli" in res.stderr and "upgrade ragcli" in res.stderr
    proc = run_module("search", "aneurysm", "--db", corpus_db)
    assert proc.returncode == 4 and "newer ragcli" in proc.stderr
    assert fingerprint(corpus_db) == before


def test_corpus_path_is_a_directory(cli, tmp_path):
    res = cli("books", "--db", tmp_path)
    assert res.exit_code == 4 and "is a directory" in res.stderr


# -- Ctrl-C and crashes mid-book ----------------------------------------------------------------

def test_interrupt_while_embedding_changes_nothing(corpus_db, embedder, fingerprint, tmp_path):
    from ragcli.store import db
    from ragcli.ingest import pipeline as ingest

    before = fingerprint(corpus_db)
    conn = db.connect(corpus_db)

    seen = []

    def progress(phase, done, total):
        seen.append(phase)
        if phase == "embed" and done > 0:
            raise KeyboardInterrupt

    changed = tmp_path / "faa-v2.pdf"  # new text, so there is something to embed
    with pymupdf.open(FIXTURE_PDFS["faa"]) as doc:
        doc[0].insert_text((80, 530), "Castellated nuts are safetied with cotter pins.", fontsize=9)
        doc.save(changed)
    with pytest.raises(KeyboardInterrupt):
        ingest.ingest_file(conn, changed, embedder, book_id="faa2", progress=progress)
    assert "pages" in seen and "embed" in seen
    conn.close()
    assert fingerprint(corpus_db) == before


def _fail_after_some_rows(monkeypatch, exc):
    from ragcli.store import corpus as store

    real = store.insert_passages

    def insert_some(conn, book_id, passages, *rest):
        real(conn, book_id, passages[:5], *[r[:5] for r in rest])  # rows really written ...
        raise exc  # ... then Ctrl-C or a crash

    monkeypatch.setattr(store, "insert_passages", insert_some)


def test_interrupt_while_storing_changes_nothing(corpus_db, cli, fingerprint, monkeypatch, tmp_path):
    before = fingerprint(corpus_db)
    _fail_after_some_rows(monkeypatch, KeyboardInterrupt())
    res = cli("ingest", FIXTURE_PDFS["faa"], "--id", "faa2")
    assert res.exit_code == 130 and "interrupted" in res.stderr
    assert fingerprint(corpus_db) == before
    # the same during --replace: the old book stays whole
    changed = tmp_path / "v2.pdf"
    with pymupdf.open(SAMPLE_BOOK) as doc:
        doc[5].insert_text((40, 300), "An added sentence about saccular aneurysms.", fontsize=8)
        doc.save(changed)
    res = cli("ingest", changed, "--id", "primer", "--replace")
    assert res.exit_code == 130
    assert fingerprint(corpus_db) == before


def test_crash_while_storing_changes_nothing(corpus_db, cli, fingerprint, monkeypatch):
    before = fingerprint(corpus_db)
    _fail_after_some_rows(monkeypatch, RuntimeError("disk on fire"))
    res = cli("ingest", FIXTURE_PDFS["faa"], "--id", "faa2")
    assert res.exit_code == 70 and "internal error" in res.stderr and "disk on fire" in res.stderr
    assert fingerprint(corpus_db) == before


def test_interrupted_first_ingest_leaves_an_empty_corpus(cli, fingerprint, monkeypatch, tmp_path):
    _fail_after_some_rows(monkeypatch, KeyboardInterrupt())
    res = cli("ingest", FIXTURE_PDFS["faa"])
    assert res.exit_code == 130
    res = cli("books", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout) == []


def test_an_argument_that_is_not_text_exits_2_with_a_message(corpus_db, tmp_path):
    """`ragcli search $'\\xff barriers'`: bytes the locale cannot decode are refused (exit 2, one line),
    not an internal error; an existing file with such a name is still taken as a path, and refused as
    a book in one line (exit 3: the corpus keeps paths as text; issue 44)."""
    import subprocess
    import sys

    from serve_helpers import ROOT

    env = {**os.environ, "LC_ALL": "C.UTF-8"}
    res = subprocess.run([sys.executable, "-m", "ragcli", "search", b"\xff barriers"], capture_output=True,
                         cwd=ROOT, env=env, timeout=120)
    err = res.stderr.decode("utf-8", "replace")
    assert res.returncode == 2, err
    assert "not valid text" in err and "\\xff barriers" in err and "Traceback" not in err
    named = tmp_path / os.fsdecode(b"caf\xe9.pdf")
    shutil.copyfile(FIXTURE_PDFS["malawi"], named)
    res = subprocess.run([sys.executable, "-m", "ragcli", "ingest", os.fsencode(named), "--json"],
                         capture_output=True, cwd=ROOT, env=env, timeout=300)
    err = res.stderr.decode("utf-8", "replace")
    assert res.returncode == 3 and "caf\\xe9.pdf: the file name is not valid UTF-8; rename" in err, err[-500:]
    assert "Traceback" not in err and "internal error" not in err
