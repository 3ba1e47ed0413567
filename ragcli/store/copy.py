"""Copy a whole library between backends (SQLite <-> PostgreSQL, or either to itself elsewhere).

Every row keeps its id and number: books, pages, sections, figures, passages, terms, files, the kept
copies of files (one at a time: each may be large), folders, meta (the embedding model, calibrations, the highest deleted summary numbers), summaries and their
sources, conversations, their turns and sources, and every vector (float32, as stored). The
destination must hold no library yet; everything is written in ONE transaction on it, so a copy that
fails or is interrupted leaves the destination as it was (atomic; run it again). The derived indexes
(FTS5 or the tsvector, sign-bit codes, HNSW) are built by the destination as the rows arrive.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from ragcli.errors import CorpusError
from ragcli.store import corpus as store
from ragcli.store import vectors as vector_index
from ragcli.store.sql import transaction

BATCH = 2000
SOURCE_COLUMNS = ("label, cited, passage_id, book_id, book_title, kind, figure_number, section_path, page_start,"
                  " page_end, page_label, text, text_hash")
# (table, columns, order): parents before children; the order makes a copy's rows arrive as they were made
TABLES: list[tuple[str, str, str]] = [
    ("books", "id, title, path, file_hash, page_count, ingested_at, warnings, unreadable_pages, format, author",
     "ingested_at, id"),
    ("pages", "book_id, number, label, health, ocr", "book_id, number"),
    ("sections", "id, book_id, ordinal, path, page_start, page_end", "id"),
    ("figures", "id, book_id, number, caption, page, bbox, section_path", "id"),
    ("passages", "id, book_id, ordinal, kind, figure_number, section_path, heading, page_start, page_end, text,"
                 " text_hash, embed_hash, ocr, text_kind", "id"),
    ("terms", "id, book_id, term, source, weight", "id"),
    ("files", "path, book_id, size, mtime_ns, file_hash", "path"),
    ("folders", "path, added_at, synced_at", "path"),
    ("summaries", "id, topic, topic_key, number, kind, text, model, params, claims, removed_citations, created_at",
     "id"),
    ("summary_sources", "summary_id, " + SOURCE_COLUMNS, "summary_id, rowid"),
    ("conversations", "id, title, book_ids, created_at, updated_at", "id"),
    ("conversation_turns", "id, conversation_id, number, question, standalone, rewritten, rewrite, answer, status,"
                           " notice, expanded_query, model, claims, removed_citations, timings, created_at", "id"),
    ("turn_sources", "turn_id, " + SOURCE_COLUMNS, "turn_id, rowid"),
]
IDENTITY_TABLES = ("sections", "figures", "passages", "terms", "summaries", "conversations", "conversation_turns")


@dataclass
class CopyReport:
    counts: dict[str, int] = field(default_factory=dict)  # rows copied per table (+ vectors)


def table_counts(conn) -> dict[str, int]:
    out = {table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table, _, _ in TABLES}
    out["file_copies"] = conn.execute("SELECT COUNT(*) FROM file_copies").fetchone()[0]
    has = vector_index.has_vectors(conn)
    for table in ("passage_vec", "term_vec"):
        out[table] = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] if has else 0
    return out


def _empty(conn) -> bool:
    return all(conn.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() is None
               for t in ("books", "summaries", "conversations"))


def copy_library(src, dst, progress: Optional[Callable[[str, int], None]] = None) -> CopyReport:
    """Copy every row and vector of `src` into the empty library `dst`, in one transaction on `dst`."""
    if not _empty(dst):
        raise CorpusError("the destination already holds a library (books, summaries or conversations); "
                          "copy into a new file or an empty schema")
    report = CopyReport()
    model = store.embedding_model(src)
    with transaction(dst):
        for key, value in src.execute("SELECT key, value FROM meta WHERE key != 'app' ORDER BY key").fetchall():
            store.set_meta(dst, key, value)
        if model:
            store.ensure_vector_tables(dst, model[0], model[1], store.embedding_source(src))
        for table, columns, order in TABLES:
            n = _copy_rows(src, dst, table, columns, order)
            report.counts[table] = n
            if table == "terms" and model:  # vectors once their rows exist (they reference them)
                report.counts["passage_vec"], report.counts["term_vec"] = _copy_vectors(src, dst)
            if table == "files":
                report.counts["file_copies"] = _copy_file_copies(src, dst)
            if progress:
                progress(table, n)
        _reset_identities(dst)
    return report


def _copy_rows(src, dst, table: str, columns: str, order: str) -> int:
    n = len(columns.split(","))
    insert = f"INSERT INTO {table}({columns}) VALUES ({', '.join('?' * n)})"
    cur = src.execute(f"SELECT {columns} FROM {table} ORDER BY {order}")
    total = 0
    while rows := cur.fetchmany(BATCH):
        dst.executemany(insert, rows)
        total += len(rows)
    return total


def _copy_file_copies(src, dst) -> int:
    """The kept copies of books' files, one at a time (a copy is up to files.KEEP_MAX_BYTES)."""
    hashes = [r[0] for r in src.execute("SELECT file_hash FROM file_copies ORDER BY file_hash")]
    for file_hash in hashes:
        row = src.execute("SELECT file_hash, name, size, data, stored_at FROM file_copies WHERE file_hash = ?",
                          (file_hash,)).fetchone()
        dst.execute("INSERT INTO file_copies(file_hash, name, size, data, stored_at) VALUES (?,?,?,?,?)",
                    (row[0], row[1], row[2], bytes(row[3]), row[4]))
    return len(hashes)


def _copy_vectors(src, dst) -> tuple[int, int]:
    import numpy as np

    counts = []
    for table, rows_sql in (("passage_vec", "SELECT id, book_id FROM passages ORDER BY id"),
                            ("term_vec", "SELECT id, book_id FROM terms ORDER BY id")):
        rows = src.execute(rows_sql).fetchall()
        copied = 0
        for start in range(0, len(rows), BATCH):
            part = rows[start:start + BATCH]
            vecs = vector_index.stored_vectors(src, table, [r[0] for r in part])
            by_book: dict[str, tuple[list, list]] = {}
            for rid, book_id in part:
                if rid in vecs:
                    ids, mats = by_book.setdefault(book_id, ([], []))
                    ids.append(rid)
                    mats.append(vecs[rid])
            for book_id, (ids, mats) in by_book.items():
                if table == "passage_vec":
                    vector_index.add_vectors(dst, book_id, ids, np.stack(mats))
                else:
                    vector_index.add_term_vectors(dst, [(i, book_id, m) for i, m in zip(ids, mats)])
                copied += len(ids)
        counts.append(copied)
    return counts[0], counts[1]


def _reset_identities(dst) -> None:
    """PostgreSQL: the next id of each table follows the copied ones (SQLite does this by itself)."""
    if getattr(dst, "dialect", "sqlite") != "postgres":
        return
    for table in IDENTITY_TABLES:
        dst.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"GREATEST((SELECT COALESCE(MAX(id), 0) FROM {table}), 1), "
                    f"(SELECT COUNT(*) > 0 FROM {table}))")
