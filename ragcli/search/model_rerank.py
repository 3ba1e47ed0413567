"""A re-ranker model's relevance scores, fused with the search's own order.

The model re-scores the first max(k, N) hits (`--rerank-depth` N, default 20), in the order the
search gave them (after the cosine mix of the expanding modes). Its order is not taken as is: each
hit gets 1/(k + its search rank) + 1/(k + its model rank), reciprocal-rank fusion of the two orders
with a small k. A re-ranker that ignores an exact term can then move the page that has it down only
a few places: at k = 5 and depth 20, the search's first hit that the model ranks last ends 5th when
the model otherwise agrees with the search, and 8th in the worst order (docs/decisions.md
"Re-ranking"); ties keep the search's order.
"""
from __future__ import annotations

from typing import Sequence

RRF_K = 5
DEPTH = 20


def fused_with_order(model_scores: Sequence[float], k: int = RRF_K) -> list[float]:
    """Scores for hits given in fused order: RRF of that order and the model's (ties keep the fused order)."""
    n = len(model_scores)
    by_model = sorted(range(n), key=lambda i: (-model_scores[i], i))
    model_rank = [0] * n
    for rank, i in enumerate(by_model, 1):
        model_rank[i] = rank
    return [1.0 / (k + i + 1) + 1.0 / (k + model_rank[i]) for i in range(n)]


class ModelRerank:
    """search's Reranker protocol over a models.rerank.RerankModel."""

    def __init__(self, model, k: int = RRF_K):
        self.model, self.k = model, k

    def scores(self, question: str, hits: Sequence, terms: Sequence[str] = ()) -> list[float]:
        return fused_with_order(self.model.scores(question, [h.text for h in hits]), self.k)
