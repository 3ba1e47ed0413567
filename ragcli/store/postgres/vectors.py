"""The vector tables of a PostgreSQL library: pgvector `vector(dim)` rows keyed by passage and term id.

`passage_vec` has an HNSW cosine index (built as rows arrive) over the vectors cast to `halfvec(dim)`:
half the graph's size and faster to search at the same recall (D154); the rows stay float32, so exact
scans, stored vectors and `copy` are unchanged. `term_vec` is scanned exactly. Both reference their rows
(ON DELETE CASCADE), so a deleted book takes its vectors with it."""
from __future__ import annotations

from typing import Iterable, Sequence

from ragcli.store.sql import select_in

VECTOR_LOCK = "ragcli:vector-tables"
HNSW_M, HNSW_EF_CONSTRUCTION = 16, 64  # pgvector's defaults
HNSW_INDEX = "passage_vec_hnsw_half"


def hnsw_key(dim: int) -> str:
    """The indexed expression; a search must order by exactly this for the planner to use the graph."""
    return f"(embedding::halfvec({int(dim)}))"


def create_hnsw(conn, dim: int) -> None:
    conn.execute(f"CREATE INDEX {HNSW_INDEX} ON passage_vec USING hnsw ({hnsw_key(dim)} halfvec_cosine_ops) "
                 f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})")


def stored_dim(conn) -> int | None:
    """The dimension of the library's passage vectors (None before its first ingest)."""
    row = conn.execute("SELECT a.atttypmod FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                       "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ? AND "
                       "c.relname = 'passage_vec' AND a.attname = 'embedding'", (conn.schema,)).fetchone()
    return int(row[0]) if row else None


def to_halfvec_index(conn) -> None:
    """Migration m011: the float32 graph of an existing library replaced by the halfvec one (rebuilt
    from the stored rows: minutes for a million passages, under the migration's lock)."""
    dim = stored_dim(conn)
    if dim is None:
        return  # no vectors yet: create_tables builds the halfvec graph
    conn.execute("DROP INDEX IF EXISTS passage_vec_hnsw")
    conn.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")
    create_hnsw(conn, dim)


def _array(vec):
    """A stored vector as float32 numpy (pgvector's Python side gives a Vector or an ndarray)."""
    import numpy as np

    return np.asarray(vec.to_numpy() if hasattr(vec, "to_numpy") else vec, dtype=np.float32)


def has_vectors(conn) -> bool:
    return conn.execute("SELECT 1 FROM information_schema.tables WHERE table_schema = ? AND table_name = 'passage_vec'",
                        (conn.schema,)).fetchone() is not None


def create_tables(conn, dim: int) -> None:
    if has_vectors(conn):
        return
    with conn.transaction(lock=VECTOR_LOCK):  # two first ingests at once create the tables once
        if has_vectors(conn):
            return
        conn.execute(f"CREATE TABLE passage_vec (id BIGINT PRIMARY KEY REFERENCES passages(id) ON DELETE CASCADE, "
                     f"book_id TEXT NOT NULL, embedding vector({int(dim)}) NOT NULL)")
        conn.execute("CREATE INDEX passage_vec_book ON passage_vec(book_id)")
        create_hnsw(conn, dim)
        conn.execute(f"CREATE TABLE term_vec (id BIGINT PRIMARY KEY REFERENCES terms(id) ON DELETE CASCADE, "
                     f"book_id TEXT NOT NULL, embedding vector({int(dim)}) NOT NULL)")
        conn.execute("CREATE INDEX term_vec_book ON term_vec(book_id)")


def add_vectors(conn, table: str, book_id: str, rowids: Sequence[int], matrix) -> None:
    import numpy as np

    if table not in ("passage_vec", "term_vec"):
        raise ValueError(f"no vector table {table!r}")
    matrix = np.asarray(matrix, dtype=np.float32)
    conn.copy_rows(table, "id, book_id, embedding", ["int8", "text", "vector"],
                   ((int(rid), book_id, vec) for rid, vec in zip(rowids, matrix)))


def add_term_vectors(conn, rows: Iterable[tuple[int, str, object]]) -> None:
    import numpy as np

    by_book: dict[str, tuple[list, list]] = {}
    for tid, book_id, vec in rows:
        ids, vecs = by_book.setdefault(book_id, ([], []))
        ids.append(tid)
        vecs.append(np.asarray(vec, dtype=np.float32).ravel())
    for book_id, (ids, vecs) in by_book.items():
        add_vectors(conn, "term_vec", book_id, ids, np.stack(vecs))


def stored_vectors(conn, table: str, ids: Sequence[int]) -> dict:
    if table not in ("passage_vec", "term_vec"):
        raise ValueError(f"no vector table {table!r}")
    rows = select_in(conn, f"SELECT id, embedding FROM {table} WHERE id IN {{in}}", ids)
    return {rid: _array(vec) for rid, vec in rows}


def vectors_by_embed_hash(conn, hashes: Iterable[str]) -> dict[str, bytes]:
    rows = select_in(conn, "SELECT p.embed_hash, v.embedding FROM passages p JOIN passage_vec v ON v.id = p.id "
                           "WHERE p.embed_hash IN {in}", set(hashes))
    return {h: _array(vec).tobytes() for h, vec in rows}


def drop_all(conn) -> None:
    conn.execute("DROP TABLE IF EXISTS passage_vec")
    conn.execute("DROP TABLE IF EXISTS term_vec")


def delete_book(conn, book_id: str) -> None:
    if has_vectors(conn):  # the foreign keys cascade too; explicit, as SQLite's vec0 tables need it
        conn.execute("DELETE FROM passage_vec WHERE book_id = ?", (book_id,))
        conn.execute("DELETE FROM term_vec WHERE book_id = ?", (book_id,))
