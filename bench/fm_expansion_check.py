"""Look at model-free expansion question by question on the FM 4-25.11 set.

    .venv/bin/python bench/fm_expansion_check.py --db CORPUS.db [--refresh-terms PDF] [--type lay]

Prints, for every question, the terms expansion chose and the rank of the first hit with and
without expansion (marking wins and losses). --refresh-terms re-extracts the vocabulary of the
book from PDF with the current vocabulary.py and replaces the stored terms (and their vectors)
without re-embedding the passages, so vocabulary changes can be measured in seconds.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ragcli import evaluate
from ragcli.store import db
from ragcli.models import embed
from ragcli.ingest import pdf
from ragcli.search.pipeline import SearchOptions, search
from ragcli.store import corpus as store
from ragcli.ingest import vocabulary  # noqa: E402


def refresh_terms(conn, embedder, book_id: str, pdf_path: Path) -> int:
    parsed = pdf.parse(pdf_path)
    terms = vocabulary.extract_terms(parsed)
    vecs = embedder.embed([t for t, _, _ in terms])
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM term_vec WHERE book_id = ?", (book_id,))
        conn.execute("DELETE FROM terms WHERE book_id = ?", (book_id,))
        store.insert_terms(conn, book_id, terms, vecs)
    return len(terms)


def first_rank(q: evaluate.EvalQuery, hits) -> int:
    for i, h in enumerate(hits, 1):
        if h.book_id == q.book and set(range(h.page_start, h.page_end + 1)) & set(q.pages):
            return i
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--questions", type=Path, default=ROOT / "bench" / "fm4-25-11-questions.jsonl")
    ap.add_argument("--refresh-terms", type=Path, help="the FM PDF: re-extract its vocabulary first")
    ap.add_argument("--type", default="")
    args = ap.parse_args()
    conn = db.connect(args.db, create=False)
    embedder = embed.get_embedder()
    known = [b.id for b in store.list_books(conn)]
    queries = [q for q in evaluate.load_queries(args.questions) if not args.type or q.type == args.type]
    for q in queries:
        q.book = evaluate.resolve_book(q.book, known)
    if args.refresh_terms:
        print(f"refreshed {refresh_terms(conn, embedder, queries[0].book, args.refresh_terms)} terms")
    wins = losses = 0
    for q in queries:
        base = first_rank(q, search(conn, embedder, q.text, SearchOptions(k=10)).hits)
        result = search(conn, embedder, q.text, SearchOptions(mode="expanded", k=10))
        got = first_rank(q, result.hits)
        mark = " "
        if (got or 99) < (base or 99):
            mark, wins = "+", wins + 1
        elif (got or 99) > (base or 99):
            mark, losses = "-", losses + 1
        print(f"{mark} {q.id:<9} {base or '-':>2} -> {got or '-':>2}  {q.text[:60]:<60} | {'; '.join(result.expansion.terms)[:110]}")
    print(f"{wins} better, {losses} worse, {len(queries) - wins - losses} same (rank of the first hit in the top 10)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
