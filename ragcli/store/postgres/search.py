"""Lexical and dense search on PostgreSQL: full-text search over a GIN index, pgvector HNSW (cosine).

Lexical: the question's words (stopwords out, as for FTS5), each a quoted tsquery term, ORed, against the
stored tsvector of text (weight A) and heading (weight B), ranked by LEXICAL_RANK (chosen by retrieval
quality on the shared question sets: bench/team_library_quality.py, docs/decisions.md D107).

Dense: `ORDER BY embedding::halfvec <=> q LIMIT k` through the HNSW index (over halfvec casts, D154), with `hnsw.iterative_scan =
relaxed_order` (set on connect) so a book filter goes on through the graph until it has k rows, and the
rows re-sorted exactly. A filter that keeps at most EXACT_FILTERED rows is an exact scan instead (no
graph walk can miss what a scan of a few thousand rows finds), and a filtered index scan that comes back
short of k while the filter holds more rows is repeated exactly: a filter never returns fewer hits than
exist.
"""
from __future__ import annotations

from typing import Optional, Sequence

from ragcli.store.postgres.vectors import hnsw_key
from ragcli.text import STOPWORDS, WORD

# ts_rank over the A/B-weighted vector, normalised by 1 + log(length) (flag 1): D107
LEXICAL_RANK = "ts_rank(p.tsv, q.q, 1)"
EXACT_FILTERED = 20_000  # a filter keeping this many vectors or fewer is scanned exactly
CONFIG = "english"  # the text search configuration (Snowball English stemmer, as FTS5's porter)
MAX_TERMS = 64


def _term(word: str) -> str:
    """One word as a quoted tsquery term (no operator can leak)."""
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def query_terms(text: str) -> list[str]:
    """The words searched: stopwords out (all words when nothing else is left), first of each, up to 64."""
    words = [w for w in WORD.findall(text) if w.lower() not in STOPWORDS] or WORD.findall(text)
    seen, out = set(), []
    for w in words:
        if w.lower() not in seen:
            seen.add(w.lower())
            out.append(w)
    return out[:MAX_TERMS]


def tsquery_text(text: str) -> str:
    return " | ".join(_term(w) for w in query_terms(text))


def _filters(book_ids, kinds, column_prefix: str = "p.") -> tuple[str, list]:
    where, args = "", []
    if book_ids:
        where += f" AND {column_prefix}book_id = ANY(?)"
        args.append(list(book_ids))
    if kinds:
        where += f" AND {column_prefix}kind = ANY(?)"
        args.append(list(kinds))
    return where, args


def lexical_search(conn, text: str, k: int, book_ids: Optional[Sequence[str]] = None,
                   kinds: Optional[Sequence[str]] = None) -> list[tuple[int, float]]:
    """(passage id, score) best first; higher is better."""
    query = tsquery_text(text)
    if not query:
        return []
    where, args = _filters(book_ids, kinds)
    sql = (f"SELECT p.id, {LEXICAL_RANK} AS r FROM passages p, (SELECT to_tsquery('{CONFIG}', ?) AS q) q "
           f"WHERE p.tsv @@ q.q{where} ORDER BY r DESC, p.id LIMIT {int(k)}")
    return [(r[0], float(r[1])) for r in conn.execute(sql, [query] + args)]


def document_frequency(conn, word: str) -> int:
    """Passages whose text (not heading: weight A) holds the word, as the stemmer reads it."""
    return conn.execute(f"SELECT count(*) FROM passages WHERE tsv @@ to_tsquery('{CONFIG}', ?)",
                        (_term(word) + ":A",)).fetchone()[0]


def term_in_corpus(conn, word: str) -> bool:
    """Does the word (or phrase) occur anywhere?"""
    return conn.execute(f"SELECT 1 FROM passages WHERE tsv @@ phraseto_tsquery('{CONFIG}', ?) LIMIT 1",
                        (word,)).fetchone() is not None


def dense_search(conn, vector, k: int, book_ids: Optional[Sequence[str]] = None,
                 table: str = "passage_vec") -> list[tuple[int, float]]:
    """(row id, cosine similarity) best first."""
    import numpy as np

    if table not in ("passage_vec", "term_vec"):
        raise ValueError(f"no vector table {table!r}")
    q = np.asarray(vector, dtype=np.float32).ravel()
    where, args = _filters(book_ids, None, "")
    if table == "term_vec":  # no graph over the terms: a library's terms are scanned exactly
        return _exact(conn, table, q, k, where, args)
    if book_ids:
        n = conn.execute(f"SELECT count(*) FROM {table} WHERE true{where}", args).fetchone()[0]
        if n <= EXACT_FILTERED:
            return _exact(conn, table, q, k, where, args)
        found = _indexed(conn, table, q, k, where, args)
        return found if len(found) >= min(k, n) else _exact(conn, table, q, k, where, args)
    return _indexed(conn, table, q, k, where, args)


def _indexed(conn, table, q, k, where, args):
    # the graph walked over the halfvec casts (the index's expression); the candidates scored and
    # ordered by the exact float32 cosine
    key = hnsw_key(q.size)
    sql = (f"WITH c AS MATERIALIZED (SELECT id, embedding <=> ? AS d FROM {table} WHERE true{where} "
           f"ORDER BY {key} <=> ?::halfvec({q.size}) LIMIT {int(k)}) SELECT id, d FROM c ORDER BY d, id")
    return [(r[0], 1.0 - float(r[1])) for r in conn.execute(sql, [q] + args + [q])]


def _exact(conn, table, q, k, where, args):
    # OFFSET 0 fences the subquery: the ORDER BY cannot use the graph, every filtered row is scored
    sql = (f"SELECT id, d FROM (SELECT id, embedding <=> ? AS d FROM {table} WHERE true{where} OFFSET 0) s "
           f"ORDER BY d, id LIMIT {int(k)}")
    return [(r[0], 1.0 - float(r[1])) for r in conn.execute(sql, [q] + args)]
