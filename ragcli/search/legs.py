"""Query -> lexical (FTS5 BM25) and dense (sqlite-vec) legs -> reciprocal rank fusion -> hits."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from ragcli.store import corpus as store
from ragcli.store import vectors as vector_index
from ragcli.errors import NotFoundError, UsageError
from ragcli.text import STOPWORDS, WORD
from ragcli.types import Hit

RRF_K = 60
# Fusion window: only the first WINDOW ranks of each list count in the fusion (the rest follow, for
# recall). A deep fusion lets passages that are mediocre in both legs overtake one that a single leg
# ranks near the top, which is the usual shape of a lay question's answer (dense finds it, the words
# do not match): FM 4-25.11 lay hit@5 0.851 (no window) -> 0.920 (20); NFCorpus, where many documents
# are relevant, prefers deep fusion (dev nDCG@10 0.3287 -> 0.3200), which `feedback` mode keeps.
WINDOW = 20
MODES = ("hybrid", "dense", "lexical")


@dataclass
class Query:
    text: str
    weight: float = 1.0
    legs: tuple[str, ...] = ("lexical", "dense")
    vector: Optional[Any] = None  # a precomputed dense vector (the text is then not embedded)


@dataclass
class SearchResult:
    query: str
    mode: str
    hits: list[Hit]
    timings: dict = field(default_factory=dict)
    expansions: list[str] = field(default_factory=list)


def fts_query(text: str) -> str:
    """User text -> a safe FTS5 query: every word quoted (no operator can leak), ORed, stopwords out."""
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


def check_scope(conn, book_ids: Optional[Sequence[str]]) -> None:
    if not store.book_ids_present(conn):
        raise NotFoundError("the corpus is empty: add a book with `ragcli ingest BOOK.pdf`")
    for book_id in book_ids or []:
        if not store.book_ids_present(conn, [book_id]):
            raise NotFoundError(f"no book with id '{book_id}' (see `ragcli books`)")


def normalised(ranked: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """Min-max scores of one ranked list into [0, 1] (the best is 1)."""
    if not ranked:
        return []
    hi, lo = max(s for _, s in ranked), min(s for _, s in ranked)
    span = hi - lo
    return [(pid, (s - lo) / span if span > 0 else 1.0) for pid, s in ranked]


def score_fusion(rankings: Sequence[tuple[list[tuple[int, float]], float]]) -> dict[int, float]:
    """Weighted sum of min-max normalised scores (an id missing from a list adds 0 for it)."""
    scores: dict[int, float] = {}
    for ranked, weight in rankings:
        for pid, s in normalised(ranked):
            scores[pid] = scores.get(pid, 0.0) + weight * s
    return scores


def fuse(lex: list, dense: list, fusion: str, rrf_k: int, leg_weights: dict[str, float],
         window: Optional[int] = None) -> dict[int, float]:
    """`lex`/`dense`: [(ranked [(id, score)], weight)] per query. fusion = rrf | score."""
    wl, wd = leg_weights.get("lexical", 1.0), leg_weights.get("dense", 1.0)
    lists = [(r, w * wl) for r, w in lex] + [(r, w * wd) for r, w in dense]
    if fusion == "score":
        return score_fusion(lists)
    if fusion != "rrf":
        raise UsageError(f"unknown fusion '{fusion}' (rrf | score)")
    return rrf([([pid for pid, _ in r], w) for r, w in lists], rrf_k, window)


def search(conn, embedder, query: str, *, k: int = 10, mode: str = "hybrid",
           book_ids: Optional[Sequence[str]] = None, extra: Sequence[Query] = (),
           depth: int = 50, fusion: str = "rrf", rrf_k: int = RRF_K, window: Optional[int] = WINDOW,
           leg_weights: Optional[dict[str, float]] = None, group_by: Optional[str] = None,
           query_vector: Optional[Any] = None) -> SearchResult:
    """Hybrid by default. `extra` queries (expansions) join the fusion with their own weights;
    `leg_weights` ({"lexical": w, "dense": w}) weight whole legs; `fusion` is rrf (ranks, with
    constant `rrf_k`) or score (min-max normalised scores, weighted sum). `group_by` (page |
    section) collapses each ranked list to its best passage per page/section before fusion
    ("MaxP"): the unit ranked is then the page/section, one hit each. `query_vector` replaces the
    question's embedding in the dense leg (e.g. a relevance-feedback vector, expand.py)."""
    if mode not in MODES:
        raise UsageError(f"unknown mode '{mode}' (choose from {', '.join(MODES)})")
    if not query.strip():
        raise UsageError("the query is empty")
    check_scope(conn, book_ids)
    timings: dict[str, float] = {}
    depth = max(depth, k)
    queries = [Query(query, vector=query_vector)] + list(extra)
    lex_lists, lex_scores = _lexical_leg(conn, queries, depth, book_ids, timings) \
        if mode in ("hybrid", "lexical") else ([], {})
    dense_lists, dense_scores = _dense_leg(conn, embedder, queries, depth, book_ids, timings) \
        if mode in ("hybrid", "dense") else ([], {})
    if group_by:
        lex_lists, dense_lists = collapse_lists(conn, lex_lists, dense_lists, group_by)
        lex_scores, dense_scores = {}, {}
        for lists, target in ((lex_lists, lex_scores), (dense_lists, dense_scores)):
            if lists and lists[0][1] == queries[0].weight:
                _keep_first(target, lists[0][0])
    fused = fuse(lex_lists, dense_lists, fusion, rrf_k, leg_weights or {}, window)
    top = sorted(fused, key=lambda pid: -fused[pid])[:k]
    if extra:
        top = keep_original(top, fused, lex_lists[:1] + dense_lists[:1], k, rrf_k, window)
    hits_by_id = store.fetch_hits(conn, top)
    hits = []
    for rank, pid in enumerate(top, 1):
        hit = hits_by_id[pid]
        hit.rank, hit.score = rank, fused[pid]
        hit.lexical_score, hit.lexical_rank = lex_scores.get(pid, (None, None))
        hit.dense_score, hit.dense_rank = dense_scores.get(pid, (None, None))
        hits.append(hit)
    return SearchResult(query, mode, hits, timings, [q.text for q in extra])


def _lexical_leg(conn, queries: list[Query], depth: int, book_ids, timings: dict) -> tuple[list, dict]:
    t = time.perf_counter()
    lists, first = [], {}
    for q in queries:
        if "lexical" in q.legs:
            ranked = store.lexical_search(conn, fts_query(q.text), depth, book_ids)
            lists.append((ranked, q.weight))
            if q is queries[0]:
                _keep_first(first, ranked)
    timings["lexical"] = time.perf_counter() - t
    return lists, first


def _dense_leg(conn, embedder, queries: list[Query], depth: int, book_ids, timings: dict) -> tuple[list, dict]:
    t = time.perf_counter()
    store.check_embedding(conn, embedder.name)
    dense_queries = [q for q in queries if "dense" in q.legs]
    texts = [q.text for q in dense_queries if q.vector is None]
    embedded = iter(embedder.embed(texts) if texts else [])
    vecs = [q.vector if q.vector is not None else next(embedded) for q in dense_queries]
    timings["embed_query"] = time.perf_counter() - t
    t = time.perf_counter()
    lists, first = [], {}
    for q, vec in zip(dense_queries, vecs):
        ranked = vector_index.dense_search(conn, vec, depth, book_ids)
        lists.append((ranked, q.weight))
        if q is queries[0]:
            _keep_first(first, ranked)
    timings["dense"] = time.perf_counter() - t
    return lists, first


def _keep_first(target: dict, ranked: list[tuple[int, float]]) -> None:
    for rank, (pid, score) in enumerate(ranked, 1):
        target.setdefault(pid, (score, rank))


def keep_original(top: list[int], fused: dict[int, float], original: list, k: int, rrf_k: int,
                  window: Optional[int] = None) -> list[int]:
    """Expansion may add and reorder, never push out: the best (k+1)//2 hits of the question's own
    lists stay in the final top k (the lowest-ranked added hits make room)."""
    own = rrf([([pid for pid, _ in ranked], 1.0) for ranked, _ in original], rrf_k, window)
    pinned = sorted(own, key=lambda pid: -own[pid])[: (k + 1) // 2]
    missing = [pid for pid in pinned if pid not in top]
    if not missing:
        return top
    removable = [pid for pid in reversed(top) if pid not in pinned][: len(missing)]
    kept = [pid for pid in top if pid not in removable] + missing
    return sorted(kept, key=lambda pid: -fused.get(pid, 0.0))


GROUPS = {"page": "p.book_id, p.page_start", "section": "p.book_id, p.section_path"}


def group_keys(conn, ids: Sequence[int], group_by: str) -> dict[int, tuple]:
    """Passage id -> its page (book, first page) or section (book, section path)."""
    if group_by not in GROUPS:
        raise UsageError(f"unknown group_by '{group_by}' ({' | '.join(GROUPS)})")
    out: dict[int, tuple] = {}
    ids = list(ids)
    for start in range(0, len(ids), 900):
        chunk = ids[start:start + 900]
        rows = conn.execute(f"SELECT p.id, {GROUPS[group_by]} FROM passages p WHERE p.id IN "
                            f"({','.join('?' * len(chunk))})", chunk).fetchall()
        out.update((r[0], tuple(r[1:])) for r in rows)
    return out


def collapse_lists(conn, lex: list, dense: list, group_by: str) -> tuple[list, list]:
    """Each ranked list keeps its best passage per group (MaxP), named by one representative per
    group across all lists (the passage with the best rank in any list; ties: the earlier list)."""
    lists = lex + dense
    keys = group_keys(conn, {pid for ranked, _ in lists for pid, _ in ranked}, group_by)
    best: dict[tuple, tuple[int, int]] = {}
    for ranked, _ in lists:
        for rank, (pid, _) in enumerate(ranked):
            key = keys.get(pid, (pid,))
            if key not in best or rank < best[key][0]:
                best[key] = (rank, pid)

    def one(ranked):
        seen, out = set(), []
        for pid, score in ranked:
            key = keys.get(pid, (pid,))
            if key not in seen:
                seen.add(key)
                out.append((best[key][1], score))
        return out

    return [(one(r), w) for r, w in lex], [(one(r), w) for r, w in dense]
