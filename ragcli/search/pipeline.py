"""The one search pipeline: `ragcli search`, `ask`, `summary new` and `eval` all call `search`.

    scope check -> (language check) -> expansion (book terms; the model rewrite when a chat model is
    given) -> feedback first pass (feedback mode) -> legs (FTS5, sqlite-vec) -> fusion (RRF with a
    window; the question's own best hits pinned) -> feedback pins -> re-rank of the head (the
    cosine mix, expanding modes) -> a re-ranker model's pass over the first max(k, rerank_depth)

Which steps run is the mode's choice (search/options.py); the result carries the expansion that
was used, so callers show it without a second call.
"""
from __future__ import annotations

import time
from typing import Callable, Optional, Sequence

from ragcli import language
from ragcli.errors import NotFoundError, UsageError
from ragcli.search import expansion, feedback, legs
from ragcli.search.options import MODES, SKIP_READ, SearchOptions, check_mode, mode_for  # noqa: F401 (the API)
from ragcli.search.rerank import CosineMix, Reranker, rerank
from ragcli.search.rewrite import needed as rewrite_needed
from ragcli.search.rewrite import rewrite as model_rewrite
from ragcli.store import corpus as store
from ragcli.types import Expansion, Hit, SearchResult

# bench/answers/no_context_floor.py on FM 4-25.11: the best passage cosine of all 114 questions of the book's
# question set was >= 0.324 (median 0.581); of 20 off-topic questions, 18 stayed below 0.30 (max 0.382).
# A false "no context" hides an answer the book has, so the floor sits under every on-topic question;
# the model is still told to say when the passages do not answer.
DENSE_FLOOR = 0.30


def search(conn, embedder, query: str, opts: Optional[SearchOptions] = None, *, model=None,
           reranker: Optional[Reranker] = None,
           on_expanded: Optional[Callable[[Expansion], None]] = None,
           on_phase: Optional[Callable[[str], None]] = None) -> SearchResult:
    """Search the corpus. `model`: a chat model for the rewrite (expanding modes only);
    `reranker` (a re-ranker model, search/model_rerank.py): re-orders the first max(k, rerank_depth)
    hits after the mode's own re-rank (expanding modes: the cosine mix), in any mode; the first k are
    returned. `on_expanded` receives the expansion before the legs run; `on_phase(name)` each step as
    it starts: "expand" (the book's terms), "rewrite" (the model rewrites the question), "search" (the
    legs, fusion, re-rank). `embedder` may be None in lexical mode."""
    opts = opts or SearchOptions()
    phase = on_phase or (lambda name: None)
    check_scope(conn, opts.book_ids)
    if opts.check_language and not getattr(embedder, "multilingual", False):  # a multilingual
        # embedder matches a question to passages across languages: nothing to warn about
        other = language.other_language(query, lambda w: store.term_in_corpus(conn, w))
        if other:
            return SearchResult(query, opts.mode, [], language=other)
    if not query.strip():
        raise UsageError("the query is empty")
    if opts.expands:
        phase("expand")
    exp, extra = _expand(conn, embedder, query, opts, model, phase)
    phase("search")
    if on_expanded:
        on_expanded(exp)
    t = time.perf_counter()
    first = feedback.first_pass(conn, embedder, query, opts) if opts.feeds_back else feedback.Feedback()
    if first.words:
        extra.append(legs.Query(" ".join(first.words), opts.lexical_feedback_weight, ("lexical",)))
    queries = [legs.Query(query, vector=first.vector)] + extra
    deep = max(opts.k, opts.rerank_depth) if reranker is not None and opts.rerank_depth > 1 else 0
    k = opts.k * SKIP_READ if opts.skip_kinds else opts.k
    hits = legs.fused_hits(conn, embedder, queries, opts.legs, k=k, depth=opts.depth,
                           book_ids=opts.book_ids, rrf_k=opts.rrf_k, window=opts.fusion_window, keep=deep)
    if first.pinned:
        hits = _pinned(hits, first.pinned, k)
    kept = False
    if opts.skip_kinds:
        hits, kept = skip_kinds(hits, opts.skip_kinds, max(opts.k, deep))
    if opts.expands and opts.rerank_top > 1:
        hits = rerank(hits, CosineMix(conn, embedder, opts.rerank_dense, opts.rerank_terms), query, exp.terms,
                      opts.rerank_top)
    timings = {"expansion": exp.seconds, "retrieval": time.perf_counter() - t}
    if deep:
        t = time.perf_counter()
        hits = rerank(hits, reranker, query, exp.terms, deep)[:opts.k]
        timings["rerank"] = time.perf_counter() - t
    return SearchResult(query, opts.mode, hits, exp, timings, skipped_kinds_kept=kept)


def skip_kinds(hits: list[Hit], kinds: Sequence[str], n: int) -> tuple[list[Hit], bool]:
    """The first n hits whose text kind is not one of `kinds`, ranks renumbered; when every hit is of
    those kinds, the first n as they are and True (the caller says that only such text was found)."""
    kept = [h for h in hits if h.text_kind not in kinds]
    if not kept:
        return hits[:n], bool(hits)
    kept = kept[:n]
    for rank, hit in enumerate(kept, 1):
        hit.rank = rank
    return kept, False


def _expand(conn, embedder, query: str, opts: SearchOptions, model,
            phase: Callable[[str], None]) -> tuple[Expansion, list[legs.Query]]:
    """The book's terms as an extra lexical query and, with a model, its rewrite as one more query
    (both legs) unless the question already is a book term or uses no word the books lack
    (rewrite.needed)."""
    if not opts.expands:
        return Expansion(), []
    t0 = time.perf_counter()
    cands, terms, extra = expansion.expand(conn, embedder, query, opts)
    text = None
    if (model is not None and not expansion.in_book_words(cands)
            and rewrite_needed(query, lambda w: store.term_in_corpus(conn, w))):
        phase("rewrite")
        text = model_rewrite(conn, embedder, model, query, terms, opts.book_ids, opts.rewrite_prefix)
    if text:
        extra.append(legs.Query(text, weight=opts.rewrite_weight))
    return Expansion(text, terms, cands, time.perf_counter() - t0), extra


def _pinned(hits: list[Hit], pinned: list[Hit], k: int) -> list[Hit]:
    """`legs.pin` over hits: a pinned hit missing from the results comes in as the first pass found it,
    in place of the lowest-ranked unpinned one; the list keeps its length (k hits stay k)."""
    ids = legs.pin([h.passage_id for h in hits], [h.passage_id for h in pinned], k)[:len(hits)]
    if len(ids) == len(hits) and all(i == h.passage_id for i, h in zip(ids, hits)):
        return hits
    by_id = {h.passage_id: h for h in pinned}
    by_id.update({h.passage_id: h for h in hits})
    out = [by_id[i] for i in ids]
    for rank, hit in enumerate(out, 1):
        hit.rank = rank
    return out


def check_scope(conn, book_ids: Optional[Sequence[str]]) -> None:
    if not store.book_ids_present(conn):
        raise NotFoundError("the corpus is empty: add a book with `ragcli ingest BOOK.pdf`")
    for book_id in book_ids or []:
        if not store.book_ids_present(conn, [book_id]):
            raise NotFoundError(f"no book with id '{book_id}' (see `ragcli books`)")


def no_context(result: SearchResult, floor: float = DENSE_FLOOR) -> bool:
    """Below the calibrated floor (the embedding model's: store/calibration.py): nothing retrieved is
    about the question."""
    if not result.hits:
        return True
    best_dense = max((h.dense_score for h in result.hits if h.dense_score is not None), default=None)
    return best_dense is None or best_dense < floor


def other_language_notice(lang: str, what: str, verb: str) -> str:
    """The notice for a query in another language than the books (SearchResult.language)."""
    return (f"the {what} looks {language.NAMES.get(lang, lang)}, but the books and the embedding "
            f"model are English; {verb} in English")
