"""Books, pages, sections, figures, passages, terms and meta: the corpus's rows.

All SQL lives in store/ (this module; vectors.py: the vector index; summaries.py; db.py and
migrations.py: opening and the schema; info.py); sql.py holds the driver and the helpers."""
from __future__ import annotations

import datetime as _dt
import json
from typing import TYPE_CHECKING, Iterable, Optional, Sequence

from ragcli.errors import CorpusError
from ragcli.store import vectors as vector_index
from ragcli.store.sql import in_filter, placeholders, select_in
from ragcli.text import public_chars  # stored passages read before the ingest mapped them
from ragcli.types import Book, Hit, ParsedBook, Passage

if TYPE_CHECKING:  # numpy is imported where vectors are handled: `ragcli books` never loads it
    import numpy as np


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


# -- meta ----------------------------------------------------------------------------------------

def get_meta(conn, key: str) -> Optional[str]:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(conn, key: str, value: str) -> None:
    conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = ?",
                 (key, value, value))


def embedding_model(conn) -> Optional[tuple[str, int]]:
    name, dim = get_meta(conn, "embedding_model"), get_meta(conn, "embedding_dim")
    return (name, int(dim)) if name and dim else None


def embedding_source(conn) -> Optional[dict]:
    """Where the corpus's vectors were made ({"backend": "openai-http", "url": ..., "model": ...},
    {"backend": "llama.cpp", "path": ...}, ...); None for corpora from before it was recorded
    (the bundled model)."""
    raw = get_meta(conn, "embedding_source")
    return json.loads(raw) if raw else None


def check_embedding(conn, name: str) -> None:
    """Refuse to mix vectors of two models in one corpus."""
    recorded = embedding_model(conn)
    if recorded and recorded[0] != name:
        raise CorpusError(
            f"this corpus was embedded with {recorded[0]}, not {name}; use --embed-model {recorded[0]}, "
            f"or re-embed everything with `ragcli reembed --embed-model {name}`"
        )


def ensure_vector_tables(conn, name: str, dim: int, source: Optional[dict] = None) -> None:
    """Create the vec0 tables for this model's dimension and record the model and where it runs
    (inside a transaction)."""
    check_embedding(conn, name)
    recorded = embedding_model(conn)
    if recorded is None:
        set_meta(conn, "embedding_model", name)
        set_meta(conn, "embedding_dim", str(dim))
    elif recorded[1] != dim:
        raise CorpusError(f"{name} now gives {dim}-dimensional vectors, the corpus holds {recorded[1]}; "
                          f"re-embed with `ragcli reembed --embed-model ...`")
    if source:  # the latest place the model was reached (a server can move; the model cannot change)
        set_meta(conn, "embedding_source", json.dumps(source, sort_keys=True))
    vector_index.create_tables(conn, dim)


def drop_vectors(conn) -> None:
    """Every vector and the recorded model (re-embedding; inside a transaction)."""
    vector_index.drop_all(conn)
    conn.execute("DELETE FROM meta WHERE key IN ('embedding_model', 'embedding_dim', 'embedding_source')")


# -- books ---------------------------------------------------------------------------------------

def book_by_id(conn, book_id: str) -> Optional[Book]:
    books = list_books(conn, [book_id])
    return books[0] if books else None


def book_by_hash(conn, file_hash: str) -> Optional[Book]:
    row = conn.execute("SELECT id FROM books WHERE file_hash = ?", (file_hash,)).fetchone()
    return book_by_id(conn, row[0]) if row else None


def list_books(conn, ids: Optional[Sequence[str]] = None) -> list[Book]:
    sql = """
        SELECT b.id, b.title, b.path, b.file_hash, b.page_count, b.ingested_at,
          (SELECT COUNT(*) FROM sections s WHERE s.book_id = b.id),
          (SELECT COUNT(*) FROM figures f WHERE f.book_id = b.id),
          (SELECT COUNT(*) FROM passages p WHERE p.book_id = b.id AND p.kind = 'passage'),
          b.warnings, b.unreadable_pages,
          b.format, b.author,
          (SELECT COUNT(*) FROM pages g WHERE g.book_id = b.id AND g.ocr != ''),
          (SELECT MIN(g.ocr) FROM pages g WHERE g.book_id = b.id AND g.ocr != '')
        FROM books b"""
    args: list = []
    if ids is not None:
        sql += f" WHERE b.id IN ({placeholders(len(ids))})"
        args = list(ids)
    rows = conn.execute(sql + " ORDER BY b.ingested_at, b.id", args).fetchall()
    return [Book(r[0], r[1], r[2], r[3], r[4], r[6], r[7], r[8], r[5], json.loads(r[9]), json.loads(r[10]),
                 r[11], r[12], r[13], r[14] or "")
            for r in rows]


def delete_book(conn, book_id: str) -> None:
    """Delete a book and everything of it, the kept copy of its file too when no other book was read
    from the same bytes (call inside a transaction)."""
    vector_index.delete_book(conn, book_id)
    row = conn.execute("SELECT file_hash FROM books WHERE id = ?", (book_id,)).fetchone()
    conn.execute("DELETE FROM passages WHERE book_id = ?", (book_id,))
    conn.execute("DELETE FROM books WHERE id = ?", (book_id,))
    if row:  # the kept copy of its file goes with the last book read from those bytes
        conn.execute("DELETE FROM file_copies WHERE file_hash = ? AND NOT EXISTS "
                     "(SELECT 1 FROM books WHERE file_hash = ?)", (row[0], row[0]))


def vectors_by_embed_hash(conn, hashes: Iterable[str]) -> dict[str, bytes]:
    """Stored vectors for passages whose embedded text (and model) is unchanged."""
    if not vector_index.has_vectors(conn):
        return {}
    if _pg_search(conn):
        from ragcli.store.postgres import vectors as pg_vectors

        return pg_vectors.vectors_by_embed_hash(conn, hashes)
    rows = select_in(conn, "SELECT p.embed_hash, v.embedding FROM passages p JOIN passage_vec v ON v.rowid = p.id "
                           "WHERE p.embed_hash IN {in}", set(hashes))
    return {h: bytes(blob) for h, blob in rows}


def embedded_texts(conn) -> list[tuple[int, str, str]]:
    """(passage id, book id, embedded text) for every passage and figure, by book and id."""
    rows = conn.execute(
        "SELECT p.id, p.book_id, b.title, p.section_path, p.text, p.page_start, p.page_end "
        "FROM passages p JOIN books b ON b.id = p.book_id ORDER BY p.book_id, p.id").fetchall()
    return [(r[0], r[1], Passage(r[4], json.loads(r[3]), r[5], r[6]).embed_text(r[2])) for r in rows]


def all_terms(conn) -> list[tuple[int, str, str]]:
    """(term id, book id, term) of every book, by id."""
    return conn.execute("SELECT id, book_id, term FROM terms ORDER BY id").fetchall()


def set_embed_hashes(conn, pairs: Iterable[tuple[str, int]]) -> None:
    """(embed hash, passage id) pairs (inside a transaction)."""
    conn.executemany("UPDATE passages SET embed_hash = ? WHERE id = ?", pairs)


def insert_book(conn, book_id: str, parsed: ParsedBook, labels: dict[int, str]) -> None:
    conn.execute(
        "INSERT INTO books(id, title, path, file_hash, page_count, ingested_at, warnings, unreadable_pages,"
        " format, author) VALUES (?,?,?,?,?,?,?,?,?,?)",
        (book_id, parsed.title, parsed.source_path, parsed.file_hash, len(parsed.pages), now(),
         json.dumps(parsed.warnings), json.dumps(parsed.unreadable_pages), parsed.format, parsed.author))
    health = {p.number: p.health for p in parsed.pages}
    ocr = {p.number: p.ocr for p in parsed.pages}
    conn.executemany("INSERT INTO pages(book_id, number, label, health, ocr) VALUES (?,?,?,?,?)",
                     [(book_id, n, label, health.get(n, "ok"), ocr.get(n, "")) for n, label in labels.items()])
    conn.executemany(
        "INSERT INTO sections(book_id, ordinal, path, page_start, page_end) VALUES (?,?,?,?,?)",
        [(book_id, i, json.dumps(s.path), s.page_start, s.page_end) for i, s in enumerate(parsed.sections)])
    conn.executemany(
        "INSERT INTO figures(book_id, number, caption, page, bbox, section_path) VALUES (?,?,?,?,?,?)",
        [(book_id, f.number, f.caption, f.page, json.dumps(f.bbox) if f.bbox else None,
          json.dumps(f.section_path)) for f in parsed.figures])


def insert_passages(conn, book_id: str, passages: list[Passage], text_hashes: list[str],
                    embed_hashes: list[str], vectors: list[bytes]) -> None:
    import numpy as np

    columns = ("book_id, ordinal, kind, figure_number, section_path, heading, page_start, page_end, text,"
               " text_hash, embed_hash, ocr, text_kind")
    values = [(book_id, p.ordinal, p.kind, p.figure_number, json.dumps(p.section_path), " › ".join(p.section_path),
               p.page_start, p.page_end, p.text, th, eh, p.ocr, p.text_kind)
              for p, th, eh in zip(passages, text_hashes, embed_hashes)]
    if _pg_search(conn):  # ids first, then every row in one pipelined exchange (not a round trip a row)
        rowids = conn.next_ids("passages", len(values))
        conn.executemany(f"INSERT INTO passages(id, {columns}) VALUES (?,{','.join('?' * 13)})",
                         [(i, *v) for i, v in zip(rowids, values)])
    else:
        rowids = [conn.execute(f"INSERT INTO passages({columns}) VALUES ({','.join('?' * 13)})", v).lastrowid
                  for v in values]
    if rowids:
        matrix = np.frombuffer(b"".join(vectors[:len(rowids)]), dtype=np.float32).reshape(len(rowids), -1)
        vector_index.add_vectors(conn, book_id, rowids, matrix)


def insert_terms(conn, book_id: str, terms: list[tuple[str, str, float]], vectors: np.ndarray) -> None:
    if _pg_search(conn):
        ids = conn.next_ids("terms", len(terms))
        conn.executemany("INSERT INTO terms(id, book_id, term, source, weight) VALUES (?,?,?,?,?)",
                         [(i, book_id, term, source, weight) for i, (term, source, weight) in zip(ids, terms)])
    else:
        ids = [conn.execute("INSERT INTO terms(book_id, term, source, weight) VALUES (?,?,?,?)",
                            (book_id, term, source, weight)).lastrowid for term, source, weight in terms]
    vector_index.add_term_vectors(conn, [(i, book_id, vec) for i, vec in zip(ids, vectors)])


# -- retrieval -----------------------------------------------------------------------------------

def _pg_search(conn):
    """The PostgreSQL search module for a PostgreSQL library, else None (store/backend.py)."""
    if getattr(conn, "dialect", "sqlite") != "postgres":
        return None
    from ragcli.store.postgres import search as pg_search

    return pg_search


def fts_query(text: str) -> str:
    """User text -> a safe FTS5 query: every word quoted (no operator can leak), ORed, stopwords out."""
    from ragcli.text import STOPWORDS, WORD

    words = [w for w in WORD.findall(text) if w.lower() not in STOPWORDS]
    if not words:
        words = WORD.findall(text)
    seen, out = set(), []
    for w in words:
        key = w.lower()
        if key not in seen:
            seen.add(key)
            out.append('"' + w.replace('"', '""') + '"')
    return " OR ".join(out[:64])


def lexical(conn, text: str, k: int, book_ids: Optional[Sequence[str]] = None,
            kinds: Optional[Sequence[str]] = None) -> list[tuple[int, float]]:
    """The lexical leg for the words of `text`: (passage id, score) best first, higher better. SQLite:
    FTS5 BM25; PostgreSQL: full-text search (store/postgres/search.py)."""
    if _pg_search(conn):
        return _pg_search(conn).lexical_search(conn, text, k, book_ids, kinds)
    return lexical_search(conn, fts_query(text), k, book_ids, kinds)


def lexical_search(conn, fts_query: str, k: int, book_ids: Optional[Sequence[str]] = None,
                   kinds: Optional[Sequence[str]] = None) -> list[tuple[int, float]]:
    """FTS5 BM25 (rank is negative; smaller is better). Filters applied after the MATCH (CTE first)."""
    if not fts_query:
        return []
    where, args = in_filter("p.book_id", book_ids)
    kind_where, kind_args = in_filter("p.kind", kinds)
    where, args = where + kind_where, args + kind_args
    limit = k if not where else k * 20
    sql = (f"WITH m AS (SELECT rowid, rank FROM passages_fts WHERE passages_fts MATCH ? "
           f"ORDER BY rank LIMIT {int(limit)}) "
           f"SELECT m.rowid, m.rank FROM m JOIN passages p ON p.id = m.rowid WHERE 1=1{where} "
           f"ORDER BY m.rank LIMIT {int(k)}")
    return [(r[0], -r[1]) for r in conn.execute(sql, [fts_query] + args)]


def passage_count(conn) -> int:
    return conn.execute("SELECT count(*) FROM passages").fetchone()[0]


def document_frequency(conn, word: str) -> int:
    """How many passages contain the word (as FTS5 tokenises and stems it)."""
    if _pg_search(conn):
        return _pg_search(conn).document_frequency(conn, word)
    return conn.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH ?",
                        ('text : "' + word.replace('"', '""') + '"',)).fetchone()[0]


# the file a book was read from (absolute, from `files`), else the path saved with the book
BOOK_FILE = ("COALESCE((SELECT f.path FROM files f WHERE f.book_id = b.id AND f.path = b.path),"
             " (SELECT MIN(f.path) FROM files f WHERE f.book_id = b.id), b.path)")


def fetch_hits(conn, ids: Sequence[int]) -> dict[int, Hit]:
    rows = select_in(conn,
        "SELECT p.id, p.kind, p.book_id, b.title, p.section_path, p.page_start, p.page_end,"
        " COALESCE(pg.label, CAST(p.page_start AS TEXT)), p.text, p.figure_number, p.text_hash, p.ocr,"
        f" {BOOK_FILE}, p.text_kind"
        " FROM passages p JOIN books b ON b.id = p.book_id"
        " LEFT JOIN pages pg ON pg.book_id = p.book_id AND pg.number = p.page_start"
        " WHERE p.id IN {in}", ids)
    return {
        r[0]: Hit(passage_id=r[0], kind=r[1], book_id=r[2], book_title=r[3], section_path=json.loads(r[4]),
                  page_start=r[5], page_end=r[6], page_label=r[7], text=public_chars(r[8]), figure_number=r[9],
                  text_hash=r[10], ocr=r[11], path=r[12], text_kind=r[13])
        for r in rows
    }


def neighbours(conn, passage_id: int) -> tuple[Optional[int], Optional[int]]:
    """The ids of the passages just before and just after one passage in reading order (`ordinal`)
    within its book and section (same section path), None where the section begins or ends. Figure
    captions are passages too: a neighbour may be one."""
    row = conn.execute("SELECT book_id, ordinal, section_path FROM passages WHERE id = ?", (passage_id,)).fetchone()
    if row is None:
        return None, None
    book_id, ordinal, path = row
    prev = conn.execute(
        "SELECT id, section_path FROM passages WHERE book_id = ? AND ordinal < ? ORDER BY ordinal DESC LIMIT 1",
        (book_id, ordinal)).fetchone()
    nxt = conn.execute(
        "SELECT id, section_path FROM passages WHERE book_id = ? AND ordinal > ? ORDER BY ordinal LIMIT 1",
        (book_id, ordinal)).fetchone()
    return (prev[0] if prev and prev[1] == path else None), (nxt[0] if nxt and nxt[1] == path else None)



def terms_by_ids(conn, ids: Sequence[int]) -> dict[int, tuple[str, str, float, str]]:
    rows = select_in(conn, "SELECT id, term, source, weight, book_id FROM terms WHERE id IN {in}", ids)
    return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}


def book_terms(conn, book_ids: Optional[Sequence[str]] = None) -> list[tuple[int, str, str]]:
    """(id, term, source) of every term of the books (all books when None), in stored order."""
    where, args = in_filter("book_id", book_ids, prefix=" WHERE ")
    return [tuple(r) for r in conn.execute(f"SELECT id, term, source FROM terms{where}", args)]


def page_labels(conn, book_id: str) -> dict[int, str]:
    return dict(conn.execute("SELECT number, label FROM pages WHERE book_id = ?", (book_id,)).fetchall())


def counts(conn) -> dict[str, int]:
    """Rows of each kind. `passages` are text passages only (as `books` and ingest count them); the
    figure captions searched beside them are `figures`."""
    out = {}
    for table in ("books", "pages", "sections", "figures", "passages", "terms"):
        where = " WHERE kind = 'passage'" if table == "passages" else ""
        out[table] = conn.execute(f"SELECT COUNT(*) FROM {table}{where}").fetchone()[0]
    out["ocr_pages"] = conn.execute("SELECT COUNT(*) FROM pages WHERE ocr != ''").fetchone()[0]
    return out


def term_in_corpus(conn, word: str) -> bool:
    """Does this word (as FTS5 tokenises and stems it) occur anywhere in the corpus?"""
    if _pg_search(conn):
        return _pg_search(conn).term_in_corpus(conn, word)
    row = conn.execute("SELECT 1 FROM passages_fts WHERE passages_fts MATCH ? LIMIT 1",
                       ('"' + word.replace('"', '""') + '"',)).fetchone()
    return row is not None


def book_ids_present(conn, ids: Optional[Sequence[str]] = None) -> bool:
    """Cheap existence check (no passage counts): any book at all, or every one of `ids`."""
    if not ids:
        return conn.execute("SELECT 1 FROM books LIMIT 1").fetchone() is not None
    found = select_in(conn, "SELECT id FROM books WHERE id IN {in}", set(ids))
    return len(found) == len(set(ids))


def texts_with(conn, text: str, limit: int = 20) -> list[str]:
    """Up to `limit` passages whose text holds `text` exactly as written, case kept (an acronym: FTS5
    folds case and stems "IED" to "i", so the index cannot tell that a book writes "IED")."""
    return [t for (t,) in conn.execute("SELECT text FROM passages WHERE instr(text, ?) > 0 LIMIT ?", (text, limit))]
