"""Retrieval evaluation: metrics, query/qrels loaders, and the core of `ragcli eval retrieval`.

Two kinds of test set:

- BEIR: `queries.jsonl` ({"_id", "text"}) + a qrels TSV (`query-id corpus-id score`, header line).
  A BEIR corpus ingested by ragcli keeps each document `_id` as the page label of its passages
  (see textdocs.py), so a hit maps back to a document id. Several passages of one document are
  deduplicated (first occurrence counts) before any metric is computed. Graded relevance, linear
  gains (as trec_eval / pytrec_eval, which BEIR uses); score <= 0 is not relevant.
- Page sets: JSONL of {question, book, pages[, id, type]} (physical pages, 1-based). A retrieved
  passage is a hit when its page range touches one of the pages of the question's book. Passages
  are not deduplicated (the top 5 passages are what a reader gets); nDCG and recall count each
  gold page once: a passage earns gain 1 when it covers a gold page no earlier passage covered.
  Also reports hit@1 and hit@5, overall and per question `type`.
"""
from __future__ import annotations

import csv
import json
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional, Sequence

from ragcli.errors import InputError, NotFoundError, UsageError
from ragcli.search.pipeline import MODES, SearchOptions, search
from ragcli.store import corpus as store
from ragcli.types import Hit

BEIR_METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")
PAGE_METRICS = BEIR_METRICS + ("hit@1", "hit@5")
SearchFn = Callable[[str, Optional[list[str]]], list[Hit]]  # (question, book scope) -> ranked hits


# -- metrics -------------------------------------------------------------------------------------

def dcg(gains: Sequence[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(ranked: Sequence[str], qrels: dict[str, float], k: int = 10) -> float:
    """nDCG@k with linear gains (trec_eval); ideal = the judged grades sorted, best first."""
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
    if not ideal:
        return 0.0
    gains = [max(qrels.get(doc, 0.0), 0.0) for doc in ranked[:k]]
    return dcg(gains) / dcg(ideal)


def recall_at_k(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    if not relevant:
        return 0.0
    return len(set(ranked[:k]) & relevant) / len(relevant)


def mrr_at_k(ranked: Sequence[str], relevant: set[str], k: int = 10) -> float:
    for i, doc in enumerate(ranked[:k]):
        if doc in relevant:
            return 1.0 / (i + 1)
    return 0.0


def hit_at_k(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    return 1.0 if any(doc in relevant for doc in ranked[:k]) else 0.0


def dedupe(ids: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    return [i for i in ids if not (i in seen or seen.add(i))]


def beir_metrics(ranked: Sequence[str], qrels: dict[str, float]) -> dict[str, float]:
    ranked = dedupe(ranked)
    relevant = {d for d, g in qrels.items() if g > 0}
    return {"ndcg@10": ndcg_at_k(ranked, qrels, 10), "recall@10": recall_at_k(ranked, relevant, 10),
            "recall@100": recall_at_k(ranked, relevant, 100), "mrr@10": mrr_at_k(ranked, relevant, 10)}


def page_metrics(covered: Sequence[set[int]], gold: set[int]) -> dict[str, float]:
    """`covered[i]`: the gold pages the i-th retrieved passage touches (empty set: a miss)."""
    seen: set[int] = set()
    gains, union_at = [], []
    for pages in covered:
        new = pages - seen
        gains.append(1.0 if new else 0.0)
        seen |= pages
        union_at.append(len(seen))
    first = next((i for i, pages in enumerate(covered) if pages), None)
    n = len(gold)

    def recall(k: int) -> float:
        return (union_at[min(k, len(union_at)) - 1] / n) if union_at and n else 0.0

    return {"ndcg@10": dcg(gains[:10]) / dcg([1.0] * min(n, 10)) if n else 0.0,
            "recall@10": recall(10), "recall@100": recall(100),
            "mrr@10": 1.0 / (first + 1) if first is not None and first < 10 else 0.0,
            "hit@1": 1.0 if first == 0 else 0.0,
            "hit@5": 1.0 if first is not None and first < 5 else 0.0}


def mean(rows: Sequence[dict[str, float]], keys: Sequence[str]) -> dict[str, float]:
    return {key: (sum(r[key] for r in rows) / len(rows)) if rows else 0.0 for key in keys}


# -- test sets -----------------------------------------------------------------------------------

@dataclass
class EvalQuery:
    id: str
    text: str
    qrels: dict[str, float] = field(default_factory=dict)  # BEIR: doc id -> grade
    book: Optional[str] = None  # page sets: the book id
    pages: list[int] = field(default_factory=list)  # page sets: physical pages
    type: str = ""


def _jsonl(path: Path) -> list[dict]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from exc
    out = []
    for n, line in enumerate(lines, 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError as exc:
                raise InputError(f"{path}:{n}: not JSON ({exc})") from exc
    return out


def load_qrels(path: Path) -> dict[str, dict[str, float]]:
    """BEIR qrels TSV (query-id, corpus-id, score; header optional)."""
    out: dict[str, dict[str, float]] = {}
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            for n, row in enumerate(csv.reader(fh, delimiter="\t"), 1):
                if not row or (n == 1 and row[0].strip().lower() in ("query-id", "query_id", "qid")):
                    continue
                if len(row) < 3:
                    raise InputError(f"{path}:{n}: expected query-id, corpus-id, score")
                out.setdefault(row[0].strip(), {})[row[1].strip()] = float(row[2])
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from exc
    except ValueError as exc:
        raise InputError(f"{path}: bad score ({exc})") from exc
    return out


def load_queries(path: Path, qrels_path: Optional[Path] = None) -> list[EvalQuery]:
    """BEIR queries (with qrels; only judged queries are kept) or page-set questions (no qrels)."""
    records = _jsonl(path)
    if qrels_path is not None:
        qrels = load_qrels(qrels_path)
        texts = {str(r.get("_id")): r.get("text", "") for r in records}
        if not any(q in texts for q in qrels):
            raise InputError(f"{qrels_path}: none of its query ids is in {path}")
        return [EvalQuery(q, texts[q], qrels[q]) for q in qrels if q in texts]
    out = []
    for n, r in enumerate(records, 1):
        if "question" not in r or "pages" not in r:
            raise UsageError(f"{path}:{n}: a page-set question needs \"question\" and \"pages\" "
                             f"(BEIR queries need --qrels)")
        out.append(EvalQuery(str(r.get("id", n)), r["question"], book=r.get("book"),
                             pages=[int(p) for p in r["pages"]], type=str(r.get("type", ""))))
    return out


# -- running -------------------------------------------------------------------------------------

@dataclass
class ModeResult:
    mode: str
    metrics: dict[str, float]
    by_type: dict[str, dict[str, float]] = field(default_factory=dict)
    per_query: list[dict] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class EvalReport:
    kind: str  # beir | pages
    queries: int
    metrics: list[str]
    modes: list[ModeResult]
    notes: list[str] = field(default_factory=list)


def resolve_book(book: Optional[str], known: Sequence[str]) -> Optional[str]:
    """A question's book id as in the corpus: exact, else the one id that starts with it."""
    if book is None or book in known:
        return book
    starts = [b for b in known if b.startswith(book)]
    if len(starts) == 1:
        return starts[0]
    raise NotFoundError(f"no book with id '{book}' in the corpus (ids: {', '.join(known)})")


def score_query(q: EvalQuery, hits: list[Hit]) -> dict[str, float]:
    if q.pages:
        gold = set(q.pages)
        covered = [gold & set(range(h.page_start, h.page_end + 1)) if h.book_id == q.book else set()
                   for h in hits]
        return page_metrics(covered, gold)
    return beir_metrics([h.page_label for h in hits], q.qrels)


def run_mode(mode: str, fn: SearchFn, queries: list[EvalQuery], scope: Optional[list[str]],
             keep_ranked: int = 0) -> ModeResult:
    kind_keys = PAGE_METRICS if queries and queries[0].pages else BEIR_METRICS
    rows, t0 = [], time.perf_counter()
    for q in queries:
        hits = fn(q.text, scope)  # the whole corpus unless scoped: other books compete
        row = {"id": q.id, "type": q.type, **score_query(q, hits)}
        if keep_ranked:
            row["ranked"] = [h.page_label if not q.pages else f"{h.book_id}:{h.page_start}-{h.page_end}"
                             for h in hits[:keep_ranked]]
        rows.append(row)
    by_type = {}
    for t in sorted({r["type"] for r in rows if r["type"]}):
        by_type[t] = mean([r for r in rows if r["type"] == t], kind_keys)
    return ModeResult(mode, mean(rows, kind_keys), by_type, rows, time.perf_counter() - t0)


def evaluate(searchers: dict[str, SearchFn], queries: list[EvalQuery],
             book_ids: Optional[list[str]] = None, keep_ranked: int = 0) -> EvalReport:
    """Run every searcher over the queries; metrics averaged over queries."""
    if not queries:
        raise UsageError("no queries to evaluate")
    kind = "pages" if queries[0].pages else "beir"
    results = [run_mode(m, fn, queries, book_ids, keep_ranked) for m, fn in searchers.items()]
    return EvalReport(kind, len(queries), list(PAGE_METRICS if kind == "pages" else BEIR_METRICS), results)


def searcher(conn, embedder, opts, reranker=None) -> SearchFn:
    """The search function of one set of SearchOptions (its book scope comes from each call), with a
    re-ranker model when one is given. Page-set questions only look at the first 10 passages, so
    they need no deep ranking; BEIR needs about 3 passages per document for Recall@100."""
    def run(text: str, scope: Optional[list[str]]) -> list[Hit]:
        return search(conn, embedder, text, replace(opts, book_ids=scope), reranker=reranker).hits

    return run


def run_eval(conn, embedder, queries: list[EvalQuery], modes: Optional[Sequence[str]] = None,
             book_ids: Optional[list[str]] = None, depth: Optional[int] = None,
             keep_ranked: int = 0, reranker=None, rerank_depth: int = 20) -> EvalReport:
    """The core of `ragcli eval retrieval`: every mode (default: all) at `depth` hits per query; with
    a `reranker` (a re-ranker model) each mode's first max(depth, rerank_depth) hits re-scored by it,
    the mode named `MODE+rerank`."""
    options = [SearchOptions(mode=m) for m in (modes or MODES)]  # an unknown mode fails here
    known = [b.id for b in store.list_books(conn)]
    if not known:
        raise NotFoundError("the corpus is empty: ingest the collection first")
    for q in queries:
        q.book = resolve_book(q.book, known)
    depth = depth or (300 if not queries or not queries[0].pages else 20)
    suffix = "+rerank" if reranker is not None else ""
    searchers = {o.mode + suffix: searcher(conn, embedder, replace(o, k=depth, depth=depth, rerank_depth=rerank_depth),
                                           reranker) for o in options}
    return evaluate(searchers, queries, book_ids, keep_ranked)
