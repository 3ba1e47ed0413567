"""ask's search on the question as the reader wrote it and as the books write it (ask.as_books_write: a
slip of the keys mended, a plural acronym as the books write it), side by side, on a page-set question
file: hit@1 / hit@5 per question type, and every question the mending changes. No model.

    python bench/retrieval/bench_mended.py --db fm.db [--questions bench/retrieval/fm4-25-11-questions.jsonl]

The search is ask's own (search/pipeline.py with AskOptions' mode, k, re-rank depth, exposition only).
A question the books already write as the reader does searches the same both ways, so the figures can
only move through the questions listed.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from ragcli import ask as asking
    from ragcli import evaluate
    from ragcli.ingest.kinds import NOT_EXPOSITION
    from ragcli.models.embed import MemoEmbedder, get_embedder
    from ragcli.search.pipeline import SearchOptions, mode_for, search
    from ragcli.store import db

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--questions", type=Path, default=ROOT / "bench" / "retrieval" / "fm4-25-11-questions.jsonl")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    conn = db.connect(args.db, create=False)
    embedder = MemoEmbedder(get_embedder())
    known = [r[0] for r in conn.execute("SELECT id FROM books")]
    opts = asking.AskOptions()
    sopts = SearchOptions(mode=mode_for(opts.expand, opts.feedback), k=opts.k, check_language=True,
                          rerank_depth=opts.rerank_depth, skip_kinds=NOT_EXPOSITION)

    def rank(q, text: str) -> int:
        for i, h in enumerate(search(conn, embedder, text, sopts).hits, 1):
            if h.book_id == q.book and set(range(h.page_start, h.page_end + 1)) & set(q.pages):
                return i
        return 0

    queries = [q for q in evaluate.load_queries(args.questions) if q.pages]
    rows = []
    for q in queries:
        q.book = evaluate.resolve_book(q.book, known)
        mended = asking.as_books_write(conn, embedder, q.text)
        plain = rank(q, q.text)
        after = plain if mended == q.text else rank(q, mended)
        rows.append((q, plain, after))
        if mended != q.text:
            print(f"{q.id:<10} rank {plain} -> {after}: {q.text!r} -> {mended!r}")
    print(f"\n{args.questions.name}: {len(rows)} questions, "
          f"{sum(asking.as_books_write(conn, embedder, q.text) != q.text for q, _, _ in rows)} searched otherwise")
    print(f"{'type':<8}{'n':>4}{'as written hit@1':>18}{'mended hit@1':>14}{'as written hit@5':>18}{'mended hit@5':>14}")
    for t in sorted({q.type for q, _, _ in rows}) + ["all"]:
        sub = [r for r in rows if t == "all" or r[0].type == t]

        def rate(i: int, k: int) -> float:
            return sum(0 < r[i] <= k for r in sub) / len(sub)
        print(f"{t:<8}{len(sub):>4}{rate(1, 1):>18.3f}{rate(2, 1):>14.3f}{rate(1, 5):>18.3f}{rate(2, 5):>14.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
