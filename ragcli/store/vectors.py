"""The vector index: sqlite-vec's vec0 tables, float16 copies and sign-bit codes per book block.

`dense_search` answers nearest-neighbour queries: over the passages, the sign-bit codes are scanned
with numpy (hamming distance) and the best candidates rescored exactly from float16 copies; other
tables, and corpora too small to gain from it, use sqlite-vec's exact scan. Figures:
docs/benchmarks.md. numpy is imported inside the functions: `ragcli books` never loads it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Optional, Sequence

from ragcli.store.sql import in_filter, select_in

if TYPE_CHECKING:
    import numpy as np

CODED_TABLES = ("passage_vec",)
BLOCK_ROWS = 8192  # rows per vector_codes row
OVERSAMPLE = 10  # candidates rescored exactly per wanted hit ...
MIN_CANDIDATES = 400  # ... and at least this many
PREFILTER = 2000  # rows kept by the hamming pass (at least; 1 in 200 of the rows scanned) for the
                  # float-query-against-bits pass. Recall@10 0.997 at 100k and 1M: docs/benchmarks.md
EXACT_BELOW = 2000  # fewer rows than this: sqlite-vec's exact scan is as fast


def as_f32(vector) -> np.ndarray:
    """A contiguous float32 array (the bytes vec0 stores)."""
    import numpy as np

    return np.ascontiguousarray(vector, dtype=np.float32)


def sign_codes(matrix: np.ndarray) -> np.ndarray:
    """(n, dim) -> (n, dim/8) uint8: bit i set when component i > 0 (vec_quantize_binary's layout)."""
    import numpy as np

    return np.packbits(np.asarray(matrix) > 0, axis=1, bitorder="little")


def _pg(conn):
    """The PostgreSQL twin of this module for a PostgreSQL library, else None (store/backend.py)."""
    if getattr(conn, "dialect", "sqlite") != "postgres":
        return None
    from ragcli.store.postgres import vectors as pg_vectors

    return pg_vectors


def add_vectors(conn, book_id: str, rowids: Sequence[int], matrix: np.ndarray,
                table: str = "passage_vec") -> None:
    """Store one book's vectors: the vec0 table, float16 copies, sign-bit code blocks."""
    import numpy as np

    if _pg(conn):
        return _pg(conn).add_vectors(conn, table, book_id, rowids, matrix)

    matrix = as_f32(matrix)
    conn.executemany(f"INSERT INTO {table}(rowid, book_id, embedding) VALUES (?,?,?)",
                     ((int(r), book_id, v.tobytes()) for r, v in zip(rowids, matrix)))
    if table in CODED_TABLES:
        half = matrix.astype(np.float16)
        conn.executemany(f"INSERT INTO {table}_half(id, vec) VALUES (?,?)",
                         ((int(r), v.tobytes()) for r, v in zip(rowids, half)))
        _add_code_blocks(conn, table, book_id, np.asarray(rowids, dtype="<i8"), sign_codes(matrix))


def _add_code_blocks(conn, table: str, book_id: str, rowids: np.ndarray, codes: np.ndarray) -> None:
    for start in range(0, len(rowids), BLOCK_ROWS):
        part = slice(start, start + BLOCK_ROWS)
        conn.execute("INSERT INTO vector_codes(tab, book_id, n, rowids, codes) VALUES (?,?,?,?,?)",
                     (table, book_id, len(rowids[part]), rowids[part].tobytes(), codes[part].tobytes()))


def rebuild_vector_codes(conn, table: str = "passage_vec", batch: int = 4096) -> None:
    """Encode every vector already in `table` (the m002 migration; call inside a transaction)."""
    import numpy as np

    conn.execute("DELETE FROM vector_codes WHERE tab = ?", (table,))
    conn.execute(f"DELETE FROM {table}_half")
    per_book: dict[str, tuple[list, list]] = {}
    cur = conn.execute(f"SELECT rowid, book_id, embedding FROM {table}")
    while rows := cur.fetchmany(batch):
        matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        conn.executemany(f"INSERT INTO {table}_half(id, vec) VALUES (?,?)",
                         ((r[0], v.tobytes()) for r, v in zip(rows, matrix.astype(np.float16))))
        for r, code in zip(rows, sign_codes(matrix)):
            ids, codes = per_book.setdefault(r[1], ([], []))
            ids.append(r[0])
            codes.append(code)
    for book_id, (ids, codes) in per_book.items():
        _add_code_blocks(conn, table, book_id, np.asarray(ids, dtype="<i8"), np.stack(codes))


def _coded_rows(conn, table: str, book_ids: Optional[Sequence[str]]) -> int:
    where, args = in_filter("book_id", book_ids)
    return conn.execute(f"SELECT COALESCE(SUM(n), 0) FROM vector_codes WHERE tab = ?{where}",
                        [table] + args).fetchone()[0]


class CodeScan:
    """Every coded row of a table (in some books): rowids, hamming distances to the query's code,
    and the code blocks themselves (kept as read, no copy) for the second pass."""

    def __init__(self, conn, query_code: np.ndarray, table: str, book_ids: Optional[Sequence[str]]):
        import numpy as np

        width = len(query_code)
        wide = width % 8 == 0  # 64-bit words when the code width allows
        q = query_code.view("<u8") if wide else query_code
        where, args = in_filter("book_id", book_ids)
        ids, dists, self.blocks = [], [], []
        for rowids, codes in conn.execute(f"SELECT rowids, codes FROM vector_codes WHERE tab = ?{where}",
                                          [table] + args):
            block = np.frombuffer(codes, dtype=np.uint8).reshape(-1, width)
            bits = np.bitwise_count((block.view("<u8") if wide else block) ^ q)
            d = bits[:, 0].astype(np.uint16)
            for j in range(1, bits.shape[1]):
                d += bits[:, j]
            ids.append(np.frombuffer(rowids, dtype="<i8"))
            dists.append(d)
            self.blocks.append(block)
        self.starts = np.cumsum([0] + [len(b) for b in self.blocks])
        self.ids = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
        self.dists = np.concatenate(dists) if dists else np.zeros(0, dtype=np.uint16)

    def codes(self, index: np.ndarray) -> np.ndarray:
        """The code rows at these positions of the scan."""
        import numpy as np

        which = np.searchsorted(self.starts, index, side="right") - 1
        out = np.empty((len(index), self.blocks[0].shape[1]), dtype=np.uint8)
        for b in np.unique(which):
            sel = which == b
            out[sel] = self.blocks[b][index[sel] - self.starts[b]]
        return out


def _smallest(values: np.ndarray, n: int) -> np.ndarray:
    import numpy as np

    return np.arange(len(values)) if n >= len(values) else np.argpartition(values, n - 1)[:n]


def quantised_search(conn, vector: np.ndarray, k: int, book_ids: Optional[Sequence[str]] = None,
                     table: str = "passage_vec", candidates: Optional[int] = None) -> list[tuple[int, float]]:
    """Three passes: hamming distance over sign-bit codes (all rows) keeps PREFILTER rows; the float
    query against their +-1 codes keeps `candidates` (default max(k * OVERSAMPLE, MIN_CANDIDATES));
    exact cosine against float16 copies ranks those."""
    import numpy as np

    q = as_f32(vector).ravel()
    q = q / max(float(np.linalg.norm(q)), 1e-12)
    scan = CodeScan(conn, sign_codes(q[None, :])[0], table, book_ids)
    if not len(scan.ids):
        return []
    want = candidates or max(int(k) * OVERSAMPLE, MIN_CANDIDATES)
    pre = _smallest(scan.dists, max(PREFILTER, len(scan.ids) // 200, want))
    signs = np.unpackbits(scan.codes(pre), axis=1, bitorder="little", count=len(q)).astype(np.float32)
    # sum of q over set bits = (q.(2b-1) + sum(q)) / 2; einsum, not BLAS: a threaded BLAS matvec of
    # this size takes 50x longer on a busy 2-core machine
    pick = pre[_smallest(-np.einsum("ij,j->i", signs, q), want)]
    found, matrix = _half_vectors(conn, table, scan.ids[pick])
    if not found:
        return []
    sims = np.einsum("ij,j->i", matrix, q) / np.maximum(np.sqrt(np.einsum("ij,ij->i", matrix, matrix)), 1e-12)
    top = np.argsort(-sims, kind="stable")[:k]
    return [(found[i], float(sims[i])) for i in top]


def _half_vectors(conn, table: str, rowids: np.ndarray) -> tuple[list[int], np.ndarray]:
    import numpy as np

    # 900 a query: the rows come back in id order within a query, and that order breaks ties
    rows = select_in(conn, f"SELECT id, vec FROM {table}_half WHERE id IN {{in}}", [int(r) for r in rowids],
                     size=900)
    found = [rid for rid, _ in rows]
    matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float16).reshape(len(found), -1)
    return found, matrix.astype(np.float32)


def add_term_vectors(conn, rows: Iterable[tuple[int, str, np.ndarray]]) -> None:
    """(term id, book id, vector) rows into term_vec (inside a transaction)."""
    if _pg(conn):
        return _pg(conn).add_term_vectors(conn, rows)
    conn.executemany("INSERT INTO term_vec(rowid, book_id, embedding) VALUES (?,?,?)",
                     [(tid, book_id, as_f32(v).tobytes()) for tid, book_id, v in rows])


def create_tables(conn, dim: int) -> None:
    """The vec0 tables for this dimension (inside a transaction)."""
    if _pg(conn):
        return _pg(conn).create_tables(conn, dim)
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS passage_vec USING vec0("
        f"book_id text, embedding float[{dim}] distance_metric=cosine)"
    )
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS term_vec USING vec0("
        f"book_id text, embedding float[{dim}] distance_metric=cosine)"
    )


def stored_vectors(conn, table: str, ids: Sequence[int]) -> dict[int, np.ndarray]:
    """Row id -> its stored (L2-normalised) float32 vector, from passage_vec or term_vec."""
    if table not in ("passage_vec", "term_vec"):
        raise ValueError(f"no vector table {table!r}")
    if _pg(conn):
        return _pg(conn).stored_vectors(conn, table, ids)
    import numpy as np

    rows = select_in(conn, f"SELECT rowid, embedding FROM {table} WHERE rowid IN {{in}}", ids)
    return {rowid: np.frombuffer(blob, dtype=np.float32) for rowid, blob in rows}


def has_vectors(conn) -> bool:
    if _pg(conn):
        return _pg(conn).has_vectors(conn)
    return bool(conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'passage_vec'").fetchone())


def drop_all(conn) -> None:
    """Every vector of every table (re-embedding; inside a transaction)."""
    if _pg(conn):
        return _pg(conn).drop_all(conn)
    conn.execute("DROP TABLE IF EXISTS passage_vec")
    conn.execute("DROP TABLE IF EXISTS term_vec")
    conn.execute("DELETE FROM passage_vec_half")
    conn.execute("DELETE FROM vector_codes")


def delete_book(conn, book_id: str) -> None:
    """A book's vectors (inside a transaction)."""
    if _pg(conn):
        return _pg(conn).delete_book(conn, book_id)
    if has_vectors(conn):
        conn.execute("DELETE FROM passage_vec WHERE book_id = ?", (book_id,))
        conn.execute("DELETE FROM term_vec WHERE book_id = ?", (book_id,))
        conn.execute("DELETE FROM passage_vec_half WHERE id IN (SELECT id FROM passages WHERE book_id = ?)",
                     (book_id,))
        conn.execute("DELETE FROM vector_codes WHERE book_id = ?", (book_id,))


def dense_search(conn, vector: np.ndarray, k: int, book_ids: Optional[Sequence[str]] = None,
                 table: str = "passage_vec") -> list[tuple[int, float]]:
    """Nearest neighbours by cosine; returns (rowid, similarity), best first.

    passage_vec: sign-bit codes scanned with numpy (hamming distance), the best
    max(k * OVERSAMPLE, MIN_CANDIDATES) rescored exactly from float16 copies. Other tables (and
    corpora too small to gain from it): sqlite-vec's exact scan. A PostgreSQL library: pgvector's HNSW
    index (store/postgres/search.py)."""
    if getattr(conn, "dialect", "sqlite") == "postgres":
        from ragcli.store.postgres import search as pg_search

        return pg_search.dense_search(conn, vector, k, book_ids, table)
    if not has_vectors(conn):
        return []
    if table in CODED_TABLES and _coded_rows(conn, table, book_ids) > EXACT_BELOW:
        return quantised_search(conn, vector, k, book_ids, table)
    return exact_search(conn, vector, k, book_ids, table)


def exact_search(conn, vector: np.ndarray, k: int, book_ids: Optional[Sequence[str]] = None,
                 table: str = "passage_vec") -> list[tuple[int, float]]:
    """sqlite-vec's exact KNN scan over float vectors."""
    where, args = in_filter("book_id", book_ids)
    sql = f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ?{where}"
    return [(r[0], 1.0 - r[1]) for r in conn.execute(sql, [as_f32(vector).tobytes(), int(k)] + args)]
