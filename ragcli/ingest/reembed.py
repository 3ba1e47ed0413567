"""Re-embed the whole corpus with another embedding model, in one transaction.

Used when a corpus was built with one model and the user wants another: everything is embedded first
(nothing is written), then the vector tables are swapped and the new model recorded in one transaction.
"""
from __future__ import annotations

import json
from typing import Callable, Optional

from ragcli.store import corpus as store
from ragcli.text import sha256
from ragcli.types import Passage

Progress = Callable[[str, int, int], None]


def _passages(conn) -> list[tuple[int, str, str]]:
    """(passage id, book id, embedded text) for every passage and figure."""
    rows = conn.execute(
        "SELECT p.id, p.book_id, b.title, p.section_path, p.text, p.page_start, p.page_end "
        "FROM passages p JOIN books b ON b.id = p.book_id ORDER BY p.book_id, p.id").fetchall()
    return [(r[0], r[1], Passage(r[4], json.loads(r[3]), r[5], r[6]).embed_text(r[2])) for r in rows]


def reembed(conn, embedder, progress: Optional[Progress] = None, batch: int = 64) -> dict:
    import numpy as np

    passages = _passages(conn)
    terms = conn.execute("SELECT id, book_id, term FROM terms ORDER BY id").fetchall()
    vectors = []
    for start in range(0, len(passages), batch):
        vectors.append(embedder.embed([t for _, _, t in passages[start : start + batch]]))
        if progress:
            progress("embed", min(start + batch, len(passages)), len(passages))
    matrix = np.concatenate(vectors) if vectors else np.zeros((0, embedder.dim), dtype=np.float32)
    term_vecs = embedder.embed([t for _, _, t in terms]) if terms else []
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        _drop_vectors(conn)
        store.ensure_vector_tables(conn, embedder.name, embedder.dim)
        by_book: dict[str, list[int]] = {}
        for i, (_, book_id, _) in enumerate(passages):
            by_book.setdefault(book_id, []).append(i)
        for book_id, idx in by_book.items():
            store.add_vectors(conn, book_id, [passages[i][0] for i in idx], matrix[idx])
        conn.executemany("UPDATE passages SET embed_hash = ? WHERE id = ?",
                         [(sha256(embedder.name + "\n" + text), pid) for pid, _, text in passages])
        conn.executemany("INSERT INTO term_vec(rowid, book_id, embedding) VALUES (?,?,?)",
                         [(tid, book_id, np.asarray(v, dtype=np.float32).tobytes())
                          for (tid, book_id, _), v in zip(terms, term_vecs)])
    return {"model": embedder.name, "dim": embedder.dim, "passages": len(passages), "terms": len(terms)}


def _drop_vectors(conn) -> None:
    conn.execute("DROP TABLE IF EXISTS passage_vec")
    conn.execute("DROP TABLE IF EXISTS term_vec")
    conn.execute("DELETE FROM passage_vec_half")
    conn.execute("DELETE FROM vector_codes")
    conn.execute("DELETE FROM meta WHERE key IN ('embedding_model', 'embedding_dim')")
