"""Model-free query expansion from the book's own vocabulary.

At ingest every book stores its vocabulary (headings, glossary entries, figure captions, frequent
phrases; vocabulary.py) with embeddings in the vec0 table `term_vec`. At query time:

- nearest terms: the terms whose vectors are closest to the question (KNN scoped to the books),
  plus terms that share a content word with the question (lexical matches), best first;
- they join the search as extra queries weighted below the user's own words: a lexical query of
  the chosen terms (the user's vocabulary -> the book's vocabulary), and optionally a dense one;
- optional pseudo-relevance feedback (the text of the first-pass top passages as a dense query)
  and a heading-only lexical query (section-title match);
- a re-rank of the first `rerank_top` fused hits by their cosine to the question and to the
  chosen terms (on by default), and optional Rocchio feedback (`feedback`: the question's vector
  moved towards its first-pass top passages replaces it in the dense leg) with RM3-style words of
  those passages as a lexical query (`lexical_feedback`); FEEDBACK is that profile (`--mode
  feedback`, `ask --feedback`).

What the numbers supported is recorded in docs/benchmarks-retrieval.md; DEFAULTS holds the kept
settings. `nearest_terms` also feeds the LLM rewrite prompt.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional, Sequence

import numpy as np

from ragcli.search import legs as retrieve
from ragcli.store import corpus as store
from ragcli.store import vectors as vector_index
from ragcli.errors import UsageError
from ragcli.search.legs import Query, SearchResult
from ragcli.text import content_words, stem



@dataclass
class ExpansionOptions:
    n_terms: int = 8  # terms joined into the expansion queries
    min_similarity: float = 0.35  # terms less similar to the question are left out
    relative: float = 0.8  # ... and so are terms below this share of the best term's similarity
    term_weight: float = 0.1  # weight of the lexical terms query (the user's own words weigh 1.0);
    # RRF scores are flat near the top, so even 0.3 reorders exact-term hits (see the benchmarks)
    term_dense_weight: float = 0.0  # weight of the terms as a dense query (0: not used)
    lexical_terms: bool = True  # add terms sharing a content word with the question
    prf_passages: int = 0  # pseudo-relevance feedback: first-pass top passages as a dense query
    prf_weight: float = 0.3
    heading_weight: float = 0.0  # question words matched against section headings only (0: off)
    feedback: int = 0  # relevance feedback (Rocchio): the question's vector + feedback_beta x the
    feedback_beta: float = 1.0  # mean vector of the first pass's top N passages replaces it (0: off)
    lexical_feedback: int = 0  # RM3-style: the N first-pass top passages' most telling words (tf x
    lexical_feedback_terms: int = 10  # idf, the question's own words left out) join as a lexical
    lexical_feedback_weight: float = 0.3  # query of their own, at this weight (0 passages: off)
    window: Optional[int] = retrieve.WINDOW  # fusion window (retrieve.WINDOW; None: deep fusion)
    rerank_top: int = 10  # re-order the first N fused hits by a convex combination (0: off) of
    rerank_dense: float = 0.5  # ... the question's cosine to each passage,
    rerank_terms: float = 0.1  # ... the chosen terms' cosine to it, and the fused score (the rest)


DEFAULTS = ExpansionOptions()
# Pseudo-relevance feedback (`--mode feedback`, `ask --feedback`): tuned on NFCorpus dev. It helps
# topical search over many documents (NFCorpus test nDCG@10 0.3579 -> 0.3689) and hurts finding one
# page of a book (FM 4-25.11 lay hit@5 0.943 -> 0.874), so it is not the default.
FEEDBACK = replace(DEFAULTS, feedback=3, lexical_feedback=5, lexical_feedback_weight=0.6, window=None)


@dataclass
class Expansion:
    extra: list[Query]
    terms: list[str]
    candidates: list[tuple[str, str, float]] = field(default_factory=list)  # (term, source, similarity)


def _knn_terms(conn, qvec: np.ndarray, book_ids, n: int) -> list[tuple[str, str, float]]:
    ranked = vector_index.dense_search(conn, qvec, n, book_ids, table="term_vec")
    if not ranked:
        return []
    by_id = store.terms_by_ids(conn, [tid for tid, _ in ranked])
    return [(by_id[tid][0], by_id[tid][1], sim) for tid, sim in ranked if tid in by_id]


def _lexical_terms(conn, question: str, book_ids, qvec: np.ndarray, n: int) -> list[tuple[str, str, float]]:
    """Terms sharing a (stemmed) content word with the question, scored by cosine to it (stored
    vectors). Read-only SQL kept here beside its only use."""
    stems = {stem(w) for w in content_words(question)}
    if not stems:
        return []
    where, args = ("", []) if not book_ids else (
        f" WHERE book_id IN ({','.join('?' * len(book_ids))})", list(book_ids))
    rows = conn.execute(f"SELECT id, term, source FROM terms{where}", args).fetchall()
    found = [(i, t, s) for i, t, s in rows if stems & {stem(w) for w in content_words(t)}][:500]
    if not found:
        return []
    vecs = {}
    for start in range(0, len(found), 250):
        ids = [i for i, _, _ in found[start:start + 250]]
        vecs.update(conn.execute(f"SELECT rowid, embedding FROM term_vec WHERE rowid IN "
                                 f"({','.join('?' * len(ids))})", ids).fetchall())
    q = np.asarray(qvec, dtype=np.float32)
    scored = [(t, s, float(np.frombuffer(vecs[i], dtype=np.float32) @ q)) for i, t, s in found if i in vecs]
    return sorted(scored, key=lambda c: -c[2])[:n]


def candidates(conn, embedder, question: str, book_ids: Optional[Sequence[str]], n: int = 12,
               lexical: bool = True, qvec: Optional[np.ndarray] = None) -> list[tuple[str, str, float]]:
    """(term, source, similarity), best first, unique by lower-cased term."""
    if not vector_index.has_vectors(conn):
        return []
    qvec = embedder.embed([question])[0] if qvec is None else qvec
    pool = _knn_terms(conn, qvec, book_ids, n * 3)
    if lexical:
        pool += _lexical_terms(conn, question, book_ids, qvec, n)
    seen, out = set(), []
    for term, source, sim in sorted(pool, key=lambda c: -c[2]):
        key = term.lower()
        if key not in seen:
            seen.add(key)
            out.append((term, source, sim))
    return out[:n]


def choose(cands: list[tuple[str, str, float]], question: str, options: ExpansionOptions) -> list[str]:
    """Terms close enough to the question, relative to the best one: a question that *is* a book
    term (similarity near 1) keeps only its near-equals, so exact-term questions are left alone."""
    if not cands:
        return []
    floor = max(options.min_similarity, cands[0][2] * options.relative)
    same = question.strip().lower()
    return [t for t, _, sim in cands if sim >= floor and t.lower() != same][: options.n_terms]


def nearest_terms(conn, embedder, question: str, book_ids: Optional[Sequence[str]] = None,
                  n: int = 12) -> list[str]:
    """The book's own terms closest to the question (for the LLM rewrite prompt)."""
    return [t for t, _, _ in candidates(conn, embedder, question, book_ids, n)]


def expansions(conn, embedder, question: str, book_ids: Optional[Sequence[str]] = None,
               options: ExpansionOptions = DEFAULTS) -> Expansion:
    """Extra queries (below the user's words) for retrieve.search, and the terms chosen."""
    qvec = embedder.embed([question])[0]
    cands = candidates(conn, embedder, question, book_ids, max(options.n_terms, 1),
                       options.lexical_terms, qvec)
    terms = choose(cands, question, options)
    extra: list[Query] = []
    if terms and options.term_weight > 0:
        extra.append(Query(" ; ".join(terms), options.term_weight, ("lexical",)))
    if terms and options.term_dense_weight > 0:
        extra.append(Query(" ; ".join(terms), options.term_dense_weight, ("dense",)))
    return Expansion(extra, terms, cands)


def expansion_queries(conn, embedder, question: str, book_ids: Optional[Sequence[str]] = None,
                      options: ExpansionOptions = DEFAULTS) -> tuple[list[Query], list[str]]:
    """(extra queries for retrieve.search, terms chosen): the interface ask.py uses."""
    exp = expansions(conn, embedder, question, book_ids, options)
    return exp.extra, exp.terms


def heading_query(question: str) -> str:
    """An FTS5 query over the heading column only (section-title match)."""
    words = content_words(question)
    return "heading : (" + " OR ".join('"' + w + '"' for w in dict.fromkeys(words)) + ")" if words else ""


def search(conn, embedder, question: str, *, k: int = 10, book_ids: Optional[Sequence[str]] = None,
           depth: int = 50, options: ExpansionOptions = DEFAULTS, exp: Optional[Expansion] = None,
           more: Sequence[Query] = (), **search_options) -> SearchResult:
    """Hybrid search with model-free expansion (and optional feedback); `expansions` lists the
    terms. `exp`: expansions already computed (ask shows them first); `more`: other extra queries
    (ask's LLM rewrite)."""
    exp = exp if exp is not None else expansions(conn, embedder, question, book_ids, options)
    extra = list(exp.extra) + list(more)
    search_options = {"window": options.window, **search_options}
    if options.prf_passages > 0:
        first = retrieve.search(conn, embedder, question, k=options.prf_passages, book_ids=book_ids,
                                depth=depth, extra=extra, **search_options)
        text = " ".join(h.text for h in first.hits)
        if text:
            extra.append(Query(text, options.prf_weight, ("dense",)))
    vector, pinned = None, []
    if options.feedback > 0 or options.lexical_feedback > 0:
        vector, pinned, words = _feedback(conn, embedder, question, k, book_ids, depth, options,
                                          search_options)
        if words:
            extra.append(Query(" ".join(words), options.lexical_feedback_weight, ("lexical",)))
    result = retrieve.search(conn, embedder, question, k=k, mode="hybrid", book_ids=book_ids,
                             depth=depth, extra=extra, query_vector=vector, **search_options)
    if pinned:
        result.hits = keep_pinned(result.hits, pinned, k)
    if options.heading_weight > 0:
        result = _with_headings(conn, result, question, book_ids, depth, options.heading_weight)
    if options.rerank_top > 1:
        result = rerank(conn, embedder, result, question, exp.terms, options)
    result.expansions = exp.terms
    return result


MODES = retrieve.MODES + ("expanded", "feedback")


def search_mode(conn, embedder, text: str, mode: str, *, k: int = 10,
                book_ids: Optional[Sequence[str]] = None, depth: int = 50) -> SearchResult:
    """Any search mode by name: retrieve's hybrid | dense | lexical, or `expanded` (the default
    expansion + re-rank of ask), or `feedback` (expanded + pseudo-relevance feedback)."""
    if mode not in MODES:
        raise UsageError(f"unknown mode '{mode}' (choose from {', '.join(MODES)})")
    if mode in ("expanded", "feedback"):
        return search(conn, embedder, text, k=k, book_ids=book_ids, depth=depth,
                      options=FEEDBACK if mode == "feedback" else DEFAULTS)
    return retrieve.search(conn, embedder, text, k=k, mode=mode, book_ids=book_ids, depth=depth)


def _feedback(conn, embedder, question: str, k: int, book_ids, depth: int, options: ExpansionOptions,
              search_options: dict) -> tuple[Optional[np.ndarray], list, list[str]]:
    """A plain hybrid first pass -> (the Rocchio vector or None, the hits the question's own lists
    rank first: they must stay in the final top k, as retrieve.keep_original promises, and the
    feedback words for the lexical leg)."""
    n = max(options.feedback, options.lexical_feedback)
    first = retrieve.search(conn, embedder, question, k=max(n, (k + 1) // 2),
                            mode="hybrid", book_ids=book_ids, depth=depth, **search_options)
    pinned = first.hits[: (k + 1) // 2]
    words = feedback_words(conn, question, [h.text for h in first.hits[: options.lexical_feedback]],
                           options.lexical_feedback_terms) if options.lexical_feedback > 0 else []
    if options.feedback <= 0:
        return None, pinned, words
    vecs = passage_vectors(conn, [h.passage_id for h in first.hits[: options.feedback]])
    if not vecs:
        return None, pinned, words
    qvec = embedder.embed([question])[0]
    v = qvec + options.feedback_beta * np.mean(np.stack(list(vecs.values())), axis=0)
    return (v / np.linalg.norm(v)).astype(np.float32), pinned, words


def feedback_words(conn, question: str, texts: list[str], n: int) -> list[str]:
    """RM3-style expansion words: sum over the feedback passages of the word's share of the
    passage, times its idf in the corpus (FTS5 document counts); the question's words left out."""
    if not texts or n <= 0:
        return []
    own = {stem(w) for w in content_words(question)}
    weight: dict[str, float] = {}
    seen_in: dict[str, int] = {}
    for text in texts:
        words = [w for w in content_words(text) if not w[0].isdigit()]
        for w in words:
            if stem(w) not in own:
                weight[w] = weight.get(w, 0.0) + 1.0 / len(words)
        for w in set(words):
            seen_in[w] = seen_in.get(w, 0) + 1
    need = 2 if len(texts) >= 3 else 1  # a word of one passage only is more often noise
    pool = sorted((w for w in weight if seen_in[w] >= need), key=lambda w: -weight[w])[: n * 4]
    total = store.passage_count(conn)
    scored = []
    for w in pool:
        df = store.document_frequency(conn, w)
        if 0 < df < total:
            scored.append((weight[w] * np.log((total - df + 0.5) / (df + 0.5)), w))
    return [w for s, w in sorted(scored, reverse=True)[:n] if s > 0]


def keep_pinned(hits: list, pinned: list, k: int) -> list:
    """Pinned hits missing from the top k replace its lowest-ranked other hits (in pinned order);
    those move down to just below the top k."""
    top, ids = hits[:k], {h.passage_id for h in hits[:k]}
    missing = [h for h in pinned if h.passage_id not in ids]
    if not missing:
        return hits
    keep_ids = {h.passage_id for h in pinned}
    removable = [h.passage_id for h in reversed(top) if h.passage_id not in keep_ids][: len(missing)]
    moved = [h for h in top if h.passage_id in removable]
    added = {h.passage_id for h in missing[: len(removable)]}
    out = [h for h in top if h.passage_id not in removable] + missing[: len(removable)] + moved \
        + [h for h in hits[k:] if h.passage_id not in added]
    for rank, hit in enumerate(out, 1):
        hit.rank = rank
    return out


def passage_vectors(conn, ids: Sequence[int]) -> dict[int, np.ndarray]:
    """Passage id -> its stored (L2-normalised) vector."""
    if not ids:
        return {}
    rows = conn.execute(f"SELECT rowid, embedding FROM passage_vec WHERE rowid IN "
                        f"({','.join('?' * len(ids))})", list(ids)).fetchall()
    return {pid: np.frombuffer(blob, dtype=np.float32) for pid, blob in rows}


def passage_cosines(conn, ids: Sequence[int], vectors: np.ndarray) -> dict[int, np.ndarray]:
    """Passage id -> its cosine to each of `vectors` (stored vectors are L2-normalised)."""
    return {pid: vectors @ v for pid, v in passage_vectors(conn, ids).items()}


def _minmax(values: list[float]) -> list[float]:
    lo, hi = min(values), max(values)
    return [(v - lo) / (hi - lo) if hi > lo else 1.0 for v in values]


def rerank(conn, embedder, result: SearchResult, question: str, terms: list[str],
           options: ExpansionOptions) -> SearchResult:
    """Re-order the first `rerank_top` hits (the same hits, so keep_original still holds) by
    (1 - a - t) x fused score + a x question cosine + t x terms cosine, each min-max normalised
    over those hits. Hits without a stored vector keep their fused score only."""
    head, tail = result.hits[: options.rerank_top], result.hits[options.rerank_top:]
    if len(head) < 2:
        return result
    a, t = options.rerank_dense, options.rerank_terms if terms else 0.0
    vecs = embedder.embed([question] + ([" ; ".join(terms)] if t else []))
    cos = passage_cosines(conn, [h.passage_id for h in head], vecs)
    lowest = np.min(np.stack(list(cos.values())), axis=0) if cos else np.zeros(len(vecs))
    sims = [cos.get(h.passage_id, lowest) for h in head]
    parts = [(1.0 - a - t, _minmax([h.score for h in head])), (a, _minmax([float(s[0]) for s in sims]))]
    if t:
        parts.append((t, _minmax([float(s[1]) for s in sims])))
    combined = [sum(w * col[i] for w, col in parts) for i in range(len(head))]
    order = sorted(range(len(head)), key=lambda i: -combined[i])
    result.hits = [head[i] for i in order] + tail
    for rank, hit in enumerate(result.hits, 1):
        hit.rank = rank
    return result


def _with_headings(conn, result: SearchResult, question: str, book_ids, depth: int,
                   weight: float) -> SearchResult:
    """Re-rank: add an RRF share for passages whose section heading matches question words."""
    ranked = store.lexical_search(conn, heading_query(question), depth, book_ids)
    bonus = retrieve.rrf([([pid for pid, _ in ranked], weight)])
    hits = sorted(result.hits, key=lambda h: -(h.score + bonus.get(h.passage_id, 0.0)))
    for rank, hit in enumerate(hits, 1):
        hit.score, hit.rank = hit.score + bonus.get(hit.passage_id, 0.0), rank
    result.hits = hits
    return result
