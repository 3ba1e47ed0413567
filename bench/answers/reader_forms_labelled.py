"""Which hand-labelled questions does the reader-forms code (book_words.book_form, book_words.as_books_write;
issue 48) read differently from the words as written? A question it reads the same is decided by the
rules exactly as before, so only the listed ones need their recorded answers read again.

    python bench/reader_forms_labelled.py --set bench/answers/fm4-25-11-answers.jsonl --db fm.db \
        [--set bench/answers/atp-answers.jsonl --db atp.db ...]

Prints, per set, each question with a word the books do not use as written but name in another form
(a plural acronym, an acronym spelled out, a slip of the keys), and the question as the books write it.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from ragcli.answer import book_words
    from ragcli.models.embed import get_embedder
    from ragcli.store import corpus, db
    from ragcli.text import content_words

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", required=True)
    ap.add_argument("--db", action="append", required=True)
    args = ap.parse_args()
    pieces = book_words.word_pieces(get_embedder())
    for path, corpus_path in zip(args.set, args.db):
        conn = db.connect(corpus_path)
        in_books = lambda w: corpus.term_in_corpus(conn, w)  # noqa: E731
        texts_with = lambda t: corpus.texts_with(conn, t)  # noqa: E731
        rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
        changed = []
        for r in rows:
            q = r["question"]
            as_books = book_words.as_books_write(q, in_books, texts_with, pieces)
            forms = {w: book_words.book_form(w, q, in_books, texts_with, pieces) for w in content_words(q)
                     if not in_books(w) and not any(in_books(f) for f in book_words.spellings(w, q))}
            forms = {w: f for w, f in forms.items() if f}
            if as_books != q or forms:
                changed.append((r["id"], r.get("answerable", True), q, as_books, forms))
        print(f"{path}: {len(rows)} questions, {len(changed)} read differently")
        for c in changed:
            print(f"  {c[0]} answerable={c[1]}: {c[2]}\n    as the books write it: {c[3]}  forms: {c[4]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
