"""Every word of a question set that its book does not use, and the book's word `book_words.slip_of`
reads it as, under two settings of `SLIP_MORE_PIECES` (how many word pieces more than the slip the
book's word may have) side by side: what a change to the slip rule changes, over every word it could
touch. No model.

    python bench/answers/slip_words.py --set bench/answers/reader-questions/fm4-25-11-first-aid.jsonl --db fm.db \
        [--set ... --db ...] [--before 0 --after 1] [--all]

Any JSONL with a "question" field (the generated sets, bench/answers/*-answers.jsonl, the FM page set).
Prints the words read differently (with --all, every word read as a slip) and how many words were checked.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from ragcli.answer import book_words
    from ragcli.models.embed import MemoEmbedder, get_embedder
    from ragcli.store import corpus, db

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", required=True)
    ap.add_argument("--db", action="append", required=True)
    ap.add_argument("--before", type=int, default=0, help="SLIP_MORE_PIECES before (default 0)")
    ap.add_argument("--after", type=int, default=book_words.SLIP_MORE_PIECES, help="and after (default: the rule's)")
    ap.add_argument("--all", action="store_true", help="list every word read as a slip, not only the changes")
    args = ap.parse_args()
    if len(args.set) != len(args.db):
        ap.error("give one --db per --set")
    pieces = book_words.word_pieces(MemoEmbedder(get_embedder()))
    checked = changed = 0
    for qs, path in zip(args.set, args.db):
        conn = db.connect(path)
        in_books = lambda w: corpus.term_in_corpus(conn, w)  # noqa: E731
        # as ask reads a slip (book_words.book_form): the book's word as a passage writes it
        written = lambda c: any(corpus.texts_with(conn, f) for f in (c, c.capitalize(), c.upper()))  # noqa: E731
        seen = set()
        for line in open(qs, encoding="utf-8"):
            if not line.strip():
                continue
            for w in re.findall(r"[A-Za-z][A-Za-z'-]*", json.loads(line)["question"]):
                w = w.lower()
                if w in seen or in_books(w):
                    continue
                seen.add(w)
                checked += 1
                reads = []
                for n in (args.before, args.after):
                    book_words.SLIP_MORE_PIECES = n
                    reads.append(book_words.slip_of(w, in_books, pieces, written))
                if reads[0] != reads[1] or (args.all and any(reads)):
                    changed += reads[0] != reads[1]
                    print(f"{Path(qs).name:<44} {w:<20} {reads[0]} -> {reads[1]}")
    print(f"{checked} words the books do not use; {changed} read differently "
          f"(SLIP_MORE_PIECES {args.before} -> {args.after})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
