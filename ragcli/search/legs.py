"""Queries -> lexical and dense legs (store/: FTS5 and sqlite-vec, or PostgreSQL full-text and pgvector)
-> reciprocal rank fusion -> hits."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from ragcli.search.options import RRF_K
from ragcli.store import corpus as store
from ragcli.store import vectors as vector_index
from ragcli.types import Hit


@dataclass
class Query:
    """One ranked list per leg it runs in; the question is the first query, at weight 1."""

    text: str
    weight: float = 1.0
    legs: tuple[str, ...] = ("lexical", "dense")
    vector: Optional[Any] = None  # a precomputed dense vector (the text is then not embedded)


fts_query = store.fts_query  # the FTS5 syntax lives with the SQLite backend (store/corpus.py)


def rrf(rankings: Sequence[tuple[list[int], float]], k: int = RRF_K,
        window: Optional[int] = None) -> dict[int, float]:
    """Reciprocal rank fusion of several ranked id lists, each with a weight. With a `window`, only
    the first `window` ranks of each list count (Elasticsearch's rank_window_size); ids seen only
    further down follow all the others, in the order a full fusion gives them (so deep lists still
    serve recall)."""
    scores: dict[int, float] = {}
    deep: dict[int, float] = {}
    for ids, weight in rankings:
        for rank, pid in enumerate(ids):
            if window is None or rank < window:
                scores[pid] = scores.get(pid, 0.0) + weight / (k + rank + 1)
            deep[pid] = deep.get(pid, 0.0) + weight / (k + rank + 1)
    if window is None:
        return scores
    floor = min(scores.values(), default=0.0)
    top_deep = max(deep.values(), default=0.0) or 1.0
    for pid, s in deep.items():  # below every windowed id, in full-fusion order
        if pid not in scores:
            scores[pid] = floor * 0.5 * s / top_deep
    return scores


def pin(ranked: list, pinned: Sequence, k: int) -> list:
    """Keep `pinned` ids in the first k of `ranked`: each one missing replaces the lowest-ranked
    unpinned id of the first k (in pinned order); those move to just below the first k. The
    question's own best hits are pinned so that expansions and feedback may add and reorder, never
    push out."""
    top = ranked[:k]
    missing = [pid for pid in pinned if pid not in top]
    if not missing:
        return ranked
    keep = set(pinned)
    removable = [pid for pid in reversed(top) if pid not in keep][: len(missing)]
    added = missing[: len(removable)]
    return ([pid for pid in top if pid not in removable] + added + [pid for pid in top if pid in removable]
            + [pid for pid in ranked[k:] if pid not in added])


def fused_hits(conn, embedder, queries: list[Query], legs: Sequence[str], *, k: int, depth: int,
               book_ids: Optional[Sequence[str]], rrf_k: int, window: Optional[int],
               keep: int = 0) -> list[Hit]:
    """The first k hits (max(k, keep) with `keep`, for a re-ranker to read deeper) of the fusion of
    every query's lists in the given legs (queries[0] is the question). With extra queries, the best
    (k+1)//2 of the question's own lists stay in the top k."""
    depth = max(depth, k, keep)
    lex_lists, lex_scores = _lexical_leg(conn, queries, depth, book_ids) if "lexical" in legs else ([], {})
    dense_lists, dense_scores = _dense_leg(conn, embedder, queries, depth, book_ids) if "dense" in legs else ([], {})
    lists = lex_lists + dense_lists
    fused = rrf([([pid for pid, _ in ranked], w) for ranked, w in lists], rrf_k, window)
    order = sorted(fused, key=lambda pid: -fused[pid])
    if len(queries) > 1:
        own = rrf([([pid for pid, _ in ranked], 1.0) for ranked, _ in lex_lists[:1] + dense_lists[:1]],
                  rrf_k, window)
        best_own = sorted(own, key=lambda pid: -own[pid])[: (k + 1) // 2]
        order = pin(order, sorted(best_own, key=lambda pid: -fused.get(pid, 0.0)), k)
    top = order[:max(k, keep)]
    hits_by_id = store.fetch_hits(conn, top)
    hits = []
    for rank, pid in enumerate(top, 1):
        hit = hits_by_id[pid]
        hit.rank, hit.score = rank, fused[pid]
        hit.lexical_score, hit.lexical_rank = lex_scores.get(pid, (None, None))
        hit.dense_score, hit.dense_rank = dense_scores.get(pid, (None, None))
        hits.append(hit)
    return hits


def _lexical_leg(conn, queries: list[Query], depth: int, book_ids) -> tuple[list, dict]:
    lists, first = [], {}
    for q in queries:
        if "lexical" in q.legs:
            ranked = store.lexical(conn, q.text, depth, book_ids)
            lists.append((ranked, q.weight))
            if q is queries[0]:
                _keep_first(first, ranked)
    return lists, first


def _dense_leg(conn, embedder, queries: list[Query], depth: int, book_ids) -> tuple[list, dict]:
    store.check_embedding(conn, embedder.name)
    dense_queries = [q for q in queries if "dense" in q.legs]
    texts = [q.text for q in dense_queries if q.vector is None]
    embedded = iter(embedder.embed(texts) if texts else [])
    vecs = [q.vector if q.vector is not None else next(embedded) for q in dense_queries]
    lists, first = [], {}
    for q, vec in zip(dense_queries, vecs):
        ranked = vector_index.dense_search(conn, vec, depth, book_ids)
        lists.append((ranked, q.weight))
        if q is queries[0]:
            _keep_first(first, ranked)
    return lists, first


def _keep_first(target: dict, ranked: list[tuple[int, float]]) -> None:
    for rank, (pid, score) in enumerate(ranked, 1):
        target.setdefault(pid, (score, rank))
