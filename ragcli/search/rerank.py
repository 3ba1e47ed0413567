"""Re-ranking the head of the fused list.

A `Reranker` scores the first hits of a search (higher is better); the pipeline re-orders those
hits by the scores and leaves the rest, so the same hits stay in the top k (the pins still hold).
`CosineMix` is the measured default of `expanded` and `feedback` modes; the engines issue adds
model re-rankers behind the same protocol.
"""
from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np

from ragcli.store import vectors as vector_index
from ragcli.types import Hit


class Reranker(Protocol):
    def scores(self, question: str, hits: Sequence[Hit], terms: Sequence[str] = ()) -> list[float]:
        """One score per hit, higher is better. `terms`: the book terms the expansion chose."""
        ...


def _minmax(values: list[float]) -> list[float]:
    lo, hi = min(values), max(values)
    return [(v - lo) / (hi - lo) if hi > lo else 1.0 for v in values]


class CosineMix:
    """(1 - a - t) x fused score + a x question cosine + t x terms cosine, each min-max normalised
    over the hits scored. Hits without a stored vector count as the lowest cosine of the others."""

    def __init__(self, conn, embedder, dense: float = 0.5, terms: float = 0.1):
        self.conn, self.embedder, self.dense, self.terms = conn, embedder, dense, terms

    def scores(self, question: str, hits: Sequence[Hit], terms: Sequence[str] = ()) -> list[float]:
        a, t = self.dense, self.terms if terms else 0.0
        vecs = self.embedder.embed([question] + ([" ; ".join(terms)] if t else []))
        cos = {pid: vecs @ v for pid, v in
               vector_index.stored_vectors(self.conn, "passage_vec", [h.passage_id for h in hits]).items()}
        lowest = np.min(np.stack(list(cos.values())), axis=0) if cos else np.zeros(len(vecs))
        sims = [cos.get(h.passage_id, lowest) for h in hits]
        parts = [(1.0 - a - t, _minmax([h.score for h in hits])), (a, _minmax([float(s[0]) for s in sims]))]
        if t:
            parts.append((t, _minmax([float(s[1]) for s in sims])))
        return [sum(w * col[i] for w, col in parts) for i in range(len(hits))]


def rerank(hits: list[Hit], reranker: Reranker, question: str, terms: Sequence[str], top: int) -> list[Hit]:
    """The first `top` hits re-ordered by the reranker's scores (ties keep their order), ranks renumbered."""
    head, tail = hits[:top], hits[top:]
    if len(head) < 2:
        return hits
    scores = reranker.scores(question, head, terms)
    order = sorted(range(len(head)), key=lambda i: -scores[i])
    out = [head[i] for i in order] + tail
    for rank, hit in enumerate(out, 1):
        hit.rank = rank
    return out
