"""Re-embed the whole corpus with another embedding model, in one transaction.

Used when a corpus was built with one model and the user wants another: everything is embedded first
(nothing is written), then the vector tables are swapped and the new model recorded in one transaction.
"""
from __future__ import annotations

from typing import Callable, Optional

from ragcli.store import corpus as store
from ragcli.store import vectors as vector_index
from ragcli.store.sql import transaction
from ragcli.text import sha256

Progress = Callable[[str, int, int], None]


def reembed(conn, embedder, progress: Optional[Progress] = None, batch: int = 64) -> dict:
    import numpy as np

    passages = store.embedded_texts(conn)
    terms = store.all_terms(conn)
    vectors = []
    for start in range(0, len(passages), batch):
        vectors.append(embedder.embed([t for _, _, t in passages[start : start + batch]]))
        if progress:
            progress("embed", min(start + batch, len(passages)), len(passages))
    matrix = np.concatenate(vectors) if vectors else np.zeros((0, embedder.dim), dtype=np.float32)
    term_vecs = embedder.embed([t for _, _, t in terms]) if terms else []
    with transaction(conn):
        store.drop_vectors(conn)
        store.ensure_vector_tables(conn, embedder.name, embedder.dim)
        by_book: dict[str, list[int]] = {}
        for i, (_, book_id, _) in enumerate(passages):
            by_book.setdefault(book_id, []).append(i)
        for book_id, idx in by_book.items():
            vector_index.add_vectors(conn, book_id, [passages[i][0] for i in idx], matrix[idx])
        store.set_embed_hashes(conn, [(sha256(embedder.name + "\n" + text), pid) for pid, _, text in passages])
        vector_index.add_term_vectors(conn, [(tid, book_id, v) for (tid, book_id, _), v in zip(terms, term_vecs)])
    return {"model": embedder.name, "dim": embedder.dim, "passages": len(passages), "terms": len(terms)}
