"""Every SQL statement of ragcli lives here."""
from __future__ import annotations

import datetime as _dt
import json
from typing import TYPE_CHECKING, Iterable, Optional, Sequence

from ragcli.errors import CorpusError
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


def check_embedding(conn, name: str) -> None:
    """Refuse to mix vectors of two models in one corpus."""
    recorded = embedding_model(conn)
    if recorded and recorded[0] != name:
        raise CorpusError(
            f"this corpus was embedded with {recorded[0]}, not {name}; use --embed-model {recorded[0]}, "
            f"or re-embed everything with `ragcli reembed --embed-model {name}`"
        )


def ensure_vector_tables(conn, name: str, dim: int) -> None:
    """Create the vec0 tables for this model's dimension and record the model (inside a transaction)."""
    check_embedding(conn, name)
    if embedding_model(conn) is None:
        set_meta(conn, "embedding_model", name)
        set_meta(conn, "embedding_dim", str(dim))
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS passage_vec USING vec0("
        f"book_id text, embedding float[{dim}] distance_metric=cosine)"
    )
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS term_vec USING vec0("
        f"book_id text, embedding float[{dim}] distance_metric=cosine)"
    )


def has_vectors(conn) -> bool:
    return bool(conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'passage_vec'").fetchone())


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
          (SELECT COUNT(*) FROM passages p WHERE p.book_id = b.id AND p.kind = 'passage')
        FROM books b"""
    args: list = []
    if ids is not None:
        sql += f" WHERE b.id IN ({','.join('?' * len(ids))})"
        args = list(ids)
    rows = conn.execute(sql + " ORDER BY b.ingested_at, b.id", args).fetchall()
    return [Book(r[0], r[1], r[2], r[3], r[4], r[6], r[7], r[8], r[5]) for r in rows]


def delete_book(conn, book_id: str) -> None:
    """Delete a book and everything of it (call inside a transaction)."""
    if has_vectors(conn):
        conn.execute("DELETE FROM passage_vec WHERE book_id = ?", (book_id,))
        conn.execute("DELETE FROM term_vec WHERE book_id = ?", (book_id,))
        conn.execute("DELETE FROM passage_vec_half WHERE id IN (SELECT id FROM passages WHERE book_id = ?)",
                     (book_id,))
        conn.execute("DELETE FROM vector_codes WHERE book_id = ?", (book_id,))
    conn.execute("DELETE FROM passages WHERE book_id = ?", (book_id,))
    conn.execute("DELETE FROM books WHERE id = ?", (book_id,))


def vectors_by_embed_hash(conn, hashes: Iterable[str]) -> dict[str, bytes]:
    """Stored vectors for passages whose embedded text (and model) is unchanged."""
    if not has_vectors(conn):
        return {}
    found: dict[str, bytes] = {}
    hashes = list(set(hashes))
    for i in range(0, len(hashes), 500):
        part = hashes[i : i + 500]
        rows = conn.execute(
            f"SELECT p.embed_hash, v.embedding FROM passages p JOIN passage_vec v ON v.rowid = p.id "
            f"WHERE p.embed_hash IN ({','.join('?' * len(part))})", part).fetchall()
        found.update({h: bytes(blob) for h, blob in rows})
    return found


def insert_book(conn, book_id: str, parsed: ParsedBook, labels: dict[int, str]) -> None:
    conn.execute(
        "INSERT INTO books(id, title, path, file_hash, page_count, ingested_at) VALUES (?,?,?,?,?,?)",
        (book_id, parsed.title, parsed.source_path, parsed.file_hash, len(parsed.pages), now()))
    conn.executemany("INSERT INTO pages(book_id, number, label) VALUES (?,?,?)",
                     [(book_id, n, label) for n, label in labels.items()])
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

    rowids = []
    for p, th, eh in zip(passages, text_hashes, embed_hashes):
        cur = conn.execute(
            "INSERT INTO passages(book_id, ordinal, kind, figure_number, section_path, heading, page_start,"
            " page_end, text, text_hash, embed_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (book_id, p.ordinal, p.kind, p.figure_number, json.dumps(p.section_path),
             " › ".join(p.section_path), p.page_start, p.page_end, p.text, th, eh))
        rowids.append(cur.lastrowid)
    if rowids:
        matrix = np.frombuffer(b"".join(vectors[:len(rowids)]), dtype=np.float32).reshape(len(rowids), -1)
        add_vectors(conn, book_id, rowids, matrix)


def insert_terms(conn, book_id: str, terms: list[tuple[str, str, float]], vectors: np.ndarray) -> None:
    for (term, source, weight), vec in zip(terms, vectors):
        cur = conn.execute("INSERT INTO terms(book_id, term, source, weight) VALUES (?,?,?,?)",
                           (book_id, term, source, weight))
        conn.execute("INSERT INTO term_vec(rowid, book_id, embedding) VALUES (?,?,?)",
                     (cur.lastrowid, book_id, _f32(vec).tobytes()))


# -- vector index: sign-bit codes per book block + float16 copies for rescoring ------------------

CODED_TABLES = ("passage_vec",)
BLOCK_ROWS = 8192  # rows per vector_codes row
OVERSAMPLE = 10  # candidates rescored exactly per wanted hit ...
MIN_CANDIDATES = 400  # ... and at least this many
PREFILTER = 2000  # rows kept by the hamming pass (at least; 1 in 200 of the rows scanned) for the
                  # float-query-against-bits pass. Recall@10 0.997 at 100k and 1M: docs/benchmarks-perf.md
EXACT_BELOW = 2000  # fewer rows than this: sqlite-vec's exact scan is as fast


def _f32(vector) -> np.ndarray:
    import numpy as np

    return np.ascontiguousarray(vector, dtype=np.float32)


def sign_codes(matrix: np.ndarray) -> np.ndarray:
    """(n, dim) -> (n, dim/8) uint8: bit i set when component i > 0 (vec_quantize_binary's layout)."""
    import numpy as np

    return np.packbits(np.asarray(matrix) > 0, axis=1, bitorder="little")


def add_vectors(conn, book_id: str, rowids: Sequence[int], matrix: np.ndarray,
                table: str = "passage_vec") -> None:
    """Store one book's vectors: the vec0 table, float16 copies, sign-bit code blocks."""
    import numpy as np

    matrix = _f32(matrix)
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
    where, args = _book_filter(book_ids, "book_id")
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
        where, args = _book_filter(book_ids, "book_id")
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

    q = _f32(vector).ravel()
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

    found, blobs = [], []
    ids = [int(r) for r in rowids]
    for start in range(0, len(ids), 900):
        part = ids[start:start + 900]
        for rid, blob in conn.execute(f"SELECT id, vec FROM {table}_half WHERE id IN "
                                      f"({','.join('?' * len(part))})", part):
            found.append(rid)
            blobs.append(blob)
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float16).reshape(len(found), -1).astype(np.float32)
    return found, matrix


# -- retrieval -----------------------------------------------------------------------------------

def _book_filter(book_ids: Optional[Sequence[str]], column: str) -> tuple[str, list]:
    if not book_ids:
        return "", []
    return f" AND {column} IN ({','.join('?' * len(book_ids))})", list(book_ids)


def lexical_search(conn, fts_query: str, k: int, book_ids: Optional[Sequence[str]] = None,
                   kinds: Optional[Sequence[str]] = None) -> list[tuple[int, float]]:
    """FTS5 BM25 (rank is negative; smaller is better). Filters applied after the MATCH (CTE first)."""
    if not fts_query:
        return []
    where, args = _book_filter(book_ids, "p.book_id")
    if kinds:
        where += f" AND p.kind IN ({','.join('?' * len(kinds))})"
        args += list(kinds)
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
    return conn.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH ?",
                        ('text : "' + word.replace('"', '""') + '"',)).fetchone()[0]


def dense_search(conn, vector: np.ndarray, k: int, book_ids: Optional[Sequence[str]] = None,
                 table: str = "passage_vec") -> list[tuple[int, float]]:
    """Nearest neighbours by cosine; returns (rowid, similarity), best first.

    passage_vec: sign-bit codes scanned with numpy (hamming distance), the best
    max(k * OVERSAMPLE, MIN_CANDIDATES) rescored exactly from float16 copies. Other tables (and
    corpora too small to gain from it): sqlite-vec's exact scan."""
    if not has_vectors(conn):
        return []
    if table in CODED_TABLES and _coded_rows(conn, table, book_ids) > EXACT_BELOW:
        return quantised_search(conn, vector, k, book_ids, table)
    return exact_search(conn, vector, k, book_ids, table)


def exact_search(conn, vector: np.ndarray, k: int, book_ids: Optional[Sequence[str]] = None,
                 table: str = "passage_vec") -> list[tuple[int, float]]:
    """sqlite-vec's exact KNN scan over float vectors."""
    where, args = _book_filter(book_ids, "book_id")
    sql = f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ?{where}"
    return [(r[0], 1.0 - r[1]) for r in conn.execute(sql, [_f32(vector).tobytes(), int(k)] + args)]


def fetch_hits(conn, ids: Sequence[int]) -> dict[int, Hit]:
    if not ids:
        return {}
    rows = conn.execute(
        f"SELECT p.id, p.kind, p.book_id, b.title, p.section_path, p.page_start, p.page_end,"
        f" COALESCE(pg.label, CAST(p.page_start AS TEXT)), p.text, p.figure_number, p.text_hash"
        f" FROM passages p JOIN books b ON b.id = p.book_id"
        f" LEFT JOIN pages pg ON pg.book_id = p.book_id AND pg.number = p.page_start"
        f" WHERE p.id IN ({','.join('?' * len(ids))})", list(ids)).fetchall()
    return {
        r[0]: Hit(passage_id=r[0], kind=r[1], book_id=r[2], book_title=r[3], section_path=json.loads(r[4]),
                  page_start=r[5], page_end=r[6], page_label=r[7], text=r[8], figure_number=r[9],
                  text_hash=r[10])
        for r in rows
    }


def terms_by_ids(conn, ids: Sequence[int]) -> dict[int, tuple[str, str, float, str]]:
    if not ids:
        return {}
    rows = conn.execute(f"SELECT id, term, source, weight, book_id FROM terms WHERE id IN "
                        f"({','.join('?' * len(ids))})", list(ids)).fetchall()
    return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}


def page_labels(conn, book_id: str) -> dict[int, str]:
    return dict(conn.execute("SELECT number, label FROM pages WHERE book_id = ?", (book_id,)).fetchall())


def counts(conn) -> dict[str, int]:
    out = {}
    for table in ("books", "pages", "sections", "figures", "passages", "terms"):
        out[table] = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    return out


def term_in_corpus(conn, word: str) -> bool:
    """Does this word (as FTS5 tokenises and stems it) occur anywhere in the corpus?"""
    row = conn.execute("SELECT 1 FROM passages_fts WHERE passages_fts MATCH ? LIMIT 1",
                       ('"' + word.replace('"', '""') + '"',)).fetchone()
    return row is not None


def book_ids_present(conn, ids: Optional[Sequence[str]] = None) -> bool:
    """Cheap existence check (no passage counts): any book at all, or every one of `ids`."""
    if not ids:
        return conn.execute("SELECT 1 FROM books LIMIT 1").fetchone() is not None
    found = conn.execute(f"SELECT COUNT(*) FROM books WHERE id IN ({','.join('?' * len(ids))})",
                         list(ids)).fetchone()[0]
    return found == len(set(ids))
