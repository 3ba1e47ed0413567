"""Re-embed the whole corpus with another embedding model.

Every passage is embedded first, each batch committed to the embedding stage, a file beside the
corpus (store/stage.py; so an interrupted run
resumes without embedding again what it had), then the vector tables are swapped and the new model
(and where it runs) recorded in one transaction: until then the corpus answers with the old model.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from ragcli.ingest.pipeline import _source, embed_staged
from ragcli.store import calibration, corpus as store
from ragcli.store import vectors as vector_index
from ragcli.store.sql import transaction
from ragcli.store.stage import EmbeddingStage
from ragcli.text import sha256

Progress = Callable[[str, int, int], None]


def calibration_notice(conn, model_name: str) -> Optional[str]:
    """What is off in this corpus under `model_name` because no calibration of its cosine thresholds
    is known (shipped or stored in the corpus), or None when there is one."""
    if calibration.for_model(conn, model_name) is not None:
        return None
    return calibration.UNCALIBRATED_NOTICE.format(model=model_name)


def reembed(conn, embedder, progress: Optional[Progress] = None) -> dict:
    passages = store.embedded_texts(conn)
    terms = store.all_terms(conn)
    texts = [t for _, _, t in passages]
    hashes = [sha256(embedder.name + "\n" + t) for t in texts]
    stage = EmbeddingStage(conn)
    blobs, reused = embed_staged(conn, embedder, texts, hashes, progress, stage=stage)
    dim = embedder.dim
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dim) if blobs \
        else np.zeros((0, dim), dtype=np.float32)
    term_vecs = embedder.embed([t for _, _, t in terms]) if terms else []
    with transaction(conn):
        store.drop_vectors(conn)
        store.ensure_vector_tables(conn, embedder.name, dim, _source(embedder))
        by_book: dict[str, list[int]] = {}
        for i, (_, book_id, _) in enumerate(passages):
            by_book.setdefault(book_id, []).append(i)
        for book_id, idx in by_book.items():
            vector_index.add_vectors(conn, book_id, [passages[i][0] for i in idx], matrix[idx])
        store.set_embed_hashes(conn, [(h, pid) for h, (pid, _, _) in zip(hashes, passages)])
        vector_index.add_term_vectors(conn, [(tid, book_id, v) for (tid, book_id, _), v in zip(terms, term_vecs)])
    stage.clear()  # the vectors are in the corpus now
    stage.close()
    return {"model": embedder.name, "dim": dim, "passages": len(passages), "terms": len(terms),
            "reused": reused, "source": _source(embedder),
            "calibration": calibration_notice(conn, embedder.name)}
