"""Model-free query expansion from the book's own vocabulary.

At ingest every book stores its vocabulary (headings, glossary entries, figure captions, frequent
phrases; ingest/vocabulary.py) with embeddings in the vec0 table `term_vec`. At query time the
terms whose vectors are closest to the question (KNN scoped to the books), plus terms that share a
content word with the question (lexical matches), best first, are the candidates; those close
enough to the question join the search as one lexical query weighted below the user's own words
(the user's vocabulary -> the book's vocabulary). The candidates also feed the model rewrite.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ragcli.search.legs import Query
from ragcli.search.options import SearchOptions
from ragcli.store import corpus as store
from ragcli.store import vectors as vector_index
from ragcli.text import content_words, light_stem

# FM 4-25.11: the best book term of 12 of the 27 exact-term questions is this close, of none of the
# 87 lay questions.
IN_BOOK_WORDS = 0.8

Candidate = tuple[str, str, float]  # (term, source, similarity)


def _knn_terms(conn, qvec: np.ndarray, book_ids, n: int) -> list[Candidate]:
    ranked = vector_index.dense_search(conn, qvec, n, book_ids, table="term_vec")
    if not ranked:
        return []
    by_id = store.terms_by_ids(conn, [tid for tid, _ in ranked])
    return [(by_id[tid][0], by_id[tid][1], sim) for tid, sim in ranked if tid in by_id]


def _lexical_terms(conn, question: str, book_ids, qvec: np.ndarray, n: int) -> list[Candidate]:
    """Terms sharing a (stemmed) content word with the question, scored by cosine to it (stored
    vectors)."""
    stems = {light_stem(w) for w in content_words(question)}
    if not stems:
        return []
    found = [(i, t, s) for i, t, s in store.book_terms(conn, book_ids)
             if stems & {light_stem(w) for w in content_words(t)}][:500]
    if not found:
        return []
    vecs = vector_index.stored_vectors(conn, "term_vec", [i for i, _, _ in found])
    q = np.asarray(qvec, dtype=np.float32)
    scored = [(t, s, float(vecs[i] @ q)) for i, t, s in found if i in vecs]
    return sorted(scored, key=lambda c: -c[2])[:n]


def candidates(conn, embedder, question: str, book_ids: Optional[Sequence[str]], n: int = 12,
               lexical: bool = True, qvec: Optional[np.ndarray] = None) -> list[Candidate]:
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


def choose(cands: list[Candidate], question: str, n_terms: int, min_similarity: float,
           relative: float) -> list[str]:
    """Terms close enough to the question, relative to the best one: a question that *is* a book
    term (similarity near 1) keeps only its near-equals, so exact-term questions are left alone."""
    if not cands:
        return []
    floor = max(min_similarity, cands[0][2] * relative)
    same = question.strip().lower()
    return [t for t, _, sim in cands if sim >= floor and t.lower() != same][:n_terms]


def expand(conn, embedder, question: str, opts: SearchOptions) -> tuple[list[Candidate], list[str], list[Query]]:
    """(candidates, terms chosen, the extra query for the legs)."""
    qvec = embedder.embed([question])[0]
    cands = candidates(conn, embedder, question, opts.book_ids, max(opts.n_terms, 1), opts.lexical_terms, qvec)
    terms = choose(cands, question, opts.n_terms, opts.min_similarity, opts.relative)
    extra = [Query(" ; ".join(terms), opts.term_weight, ("lexical",))] if terms and opts.term_weight > 0 else []
    return cands, terms, extra


def in_book_words(cands: list[Candidate]) -> bool:
    """The question is (nearly) one of the book's own terms: a rewrite has nothing to bridge and,
    with a small model, only reorders what the question found (bench/retrieval/bench_rewrite.py)."""
    return bool(cands) and cands[0][2] >= IN_BOOK_WORDS
