"""store/sql.py: IN lists, transactions, and SQLite's file errors as CorpusError at the statement."""
from __future__ import annotations

import pytest

from ragcli.errors import CorpusError
from ragcli.store import corpus as store
from ragcli.store import db
from ragcli.store.sql import DatabaseError, in_filter, select_in, transaction


@pytest.fixture
def conn(tmp_path):
    c = db.connect(tmp_path / "c.db")
    with transaction(c):
        c.executemany("INSERT INTO books(id, title, path, file_hash, page_count, ingested_at) VALUES (?,?,?,?,?,?)",
                      [(f"b{i}", f"Book {i}", f"b{i}.pdf", f"h{i}", 1, store.now()) for i in range(7)])
    yield c
    c.close()


def test_select_in_chunks_and_in_filter(conn):
    ids = [f"b{i}" for i in (6, 0, 3, 5, 1)] + ["missing"]
    rows = select_in(conn, "SELECT id FROM books WHERE id IN {in} ORDER BY id", ids, size=2)
    assert sorted(r[0] for r in rows) == ["b0", "b1", "b3", "b5", "b6"]
    assert select_in(conn, "SELECT id FROM books WHERE id IN {in}", []) == []
    assert in_filter("book_id", None) == ("", [])
    assert in_filter("book_id", ["a", "b"]) == (" AND book_id IN (?,?)", ["a", "b"])
    assert store.book_ids_present(conn, ["b1", "b2"]) and not store.book_ids_present(conn, ["b1", "zz"])


def test_transaction_rolls_back_and_raises_corpus_error(conn):
    with pytest.raises(CorpusError, match="UNIQUE"):
        with transaction(conn):
            store.set_meta(conn, "note", "written first")
            conn.execute("INSERT INTO books(id, title, path, file_hash, page_count, ingested_at) "
                         "VALUES ('b1', 't', 'p', 'h', 1, 'now')")
    assert store.get_meta(conn, "note") is None
    with pytest.raises(KeyboardInterrupt):
        with transaction(conn):
            store.set_meta(conn, "note", "interrupted")
            raise KeyboardInterrupt
    assert store.get_meta(conn, "note") is None


def test_file_errors_are_corpus_errors_anywhere(tmp_path, monkeypatch):
    path = tmp_path / "c.db"
    db.connect(path).close()
    monkeypatch.setattr(db, "_writable", lambda p: False)
    ro = db.connect(path)
    assert store.list_books(ro) == []  # reading works
    with pytest.raises(CorpusError, match="read-only"):
        store.set_meta(ro, "x", "y")  # a write outside any transaction: the statement itself says so
    with pytest.raises(DatabaseError):  # an SQL mistake stays a bug, not a corpus problem
        ro.execute("SELECT * FROM no_such_table")
    ro.close()


def test_locked_corpus_is_a_corpus_error(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCLI_BUSY_TIMEOUT_MS", "100")
    path = tmp_path / "c.db"
    conn = db.connect(path)
    holder = db.sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(CorpusError, match="locked by another process"):
            with transaction(conn):
                store.set_meta(conn, "x", "y")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert store.get_meta(conn, "x") is None
    conn.close()
