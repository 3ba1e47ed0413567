"""Which of ragcli's refusal rules refuse answerable questions, and which catch unanswerable ones, on
the generated reader-question sets (bench/reader_questions.py, issue 48). No model: every figure is
computed from retrieval, the embedding model and the books, so a run over all books takes minutes.

    python bench/refusal_report.py --set bench/reader-questions/BOOK.jsonl --db BOOK.db [--set ... --db ...]
        [--out records.jsonl] [--list]

Per question (a follow-up is first made standalone as `ragcli chat` does without a model,
conversation.standalone), ask's own search (exposition only, the calibrated floors of the corpus's
embedding model), then per rule:
- `no_context` and `missing_subject`: ask's own checks before any model call (ask._before_answer; final);
- `far_any`: every passage of the prompt is under the far-passage floor (D103) and none names the
  question's subject (book_words.names_subject), so any answer that cites passages is withheld,
  whatever the model writes (final, once the model answers with labels);
- `far_source`: the answer passage itself is under that floor, so an answer citing it alone is withheld
  (likely: depends on what the model cites);
- `lacks_risk`: the question's words that no prompt passage has and no page of the books uses
  (refusal.missing_terms); the `lacks` rule withholds a first sentence that repeats one and is not
  `supported` (depends on the model's wording).
`refused` (the bar's figure) counts the final rules: no_context, missing_subject, far_any. The answer
passage's place: its rank among the hits and whether it is in the prompt (answer/context.py's blocks).
A row's passage is found by its id, or, after a re-ingest, by book, page and text hash.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

FINAL = ("no_context", "missing_subject", "far_any")
HELD_OUT = ("fema-cert-basic-training", "fm21-18-foot-marches")
# ask searches with the question as the books write it (ask.as_books_write); --as-written measures the
# search on the reader's words, as before that change
MENDED_SEARCH = True


def source_id(conn, row) -> int | None:
    """This corpus's id of the row's passage: by id when its text hash matches, else by book, page
    and hash (a re-ingest gives new ids)."""
    if not row.get("passage"):
        return None
    book, page, digest = row["passage"].rsplit(":", 2)
    got = conn.execute("SELECT id FROM passages WHERE id = ? AND text_hash LIKE ?",
                       (row.get("passage_id"), digest + "%")).fetchone()
    if got:
        return got[0]
    got = conn.execute("SELECT id FROM passages WHERE book_id = ? AND page_start = ? AND text_hash LIKE ?",
                       (book, int(page[1:]), digest + "%")).fetchone()
    return got[0] if got else None


def reused(conn, embedder, row, cal, earlier: dict) -> dict | None:
    """The earlier run's record with the checks before the model re-done, when the question reads the
    same to the cosine rules in both runs (book_words.as_books_write changes nothing): retrieval, the
    prompt and the floors' cosines are the same code on the same words, so only `missing_subject` can
    differ. Valid only for a change to the missing-subject rule or the books' forms: a change to the
    floors (the subject pass of book_words.names_subject) needs a run without --reuse. None when the
    record must be made afresh."""
    from ragcli.answer import book_words
    from ragcli.store import corpus

    if earlier is None or earlier.get("book_question") is not None:
        return None
    question = earlier["asked"]
    in_corpus = lambda w: corpus.term_in_corpus(conn, w)  # noqa: E731
    texts_with = lambda t: corpus.texts_with(conn, t)  # noqa: E731
    if book_words.as_books_write(question, in_corpus, texts_with, book_words.word_pieces(embedder)) != question:
        return None
    rec = dict(earlier)
    rec["missing_subject"] = None if rec["no_context"] else book_words.missing_subject(
        question, in_corpus, embedder, cal.subject, texts_with)
    rec["lacks_risk"] = [w for w in rec["lacks_risk"] if not book_words.named_in_books(w, question, in_corpus)]
    rec["refused"] = [r for r in FINAL if rec[r]]
    return rec


def assess(conn, embedder, row, cal) -> dict:
    from ragcli import ask as asking
    from ragcli import conversation
    from ragcli.answer import book_words, context, refusal
    from ragcli.ingest.kinds import NOT_EXPOSITION
    from ragcli.search.pipeline import SearchOptions, mode_for, search
    from ragcli.store import corpus

    question = row["question"]
    if row.get("after"):
        question = conversation.standalone(question, [(row["after"], "")]).question
    opts = asking.AskOptions()
    searched = asking.as_books_write(conn, embedder, question) if MENDED_SEARCH else question
    result = search(conn, embedder, searched, SearchOptions(mode=mode_for(opts.expand, opts.feedback), k=opts.k,
                                                            check_language=True, rerank_depth=opts.rerank_depth,
                                                            skip_kinds=NOT_EXPOSITION))
    blocks, rest = context.build(result.hits, lambda h: asking._adjacent(conn, h))
    in_corpus = lambda w: corpus.term_in_corpus(conn, w)  # noqa: E731
    # a hand-labelled answers file (bench/answers/*-answers.jsonl) has no shape: "labelled"
    rec = dict(id=row["id"], book=row["book"], shape=row.get("shape", "labelled"), answerable=row["answerable"],
               question=row["question"], asked=question)
    # ask's own checks before the model, as ask runs them (ask._before_answer)
    run = asking.Run(conn, embedder, question, None, opts, result, blocks + rest, cal, blocks)
    run._book_question = None if searched == question else searched
    before = asking._before_answer(run)
    reason = before.reason if before is not None else None
    rec["no_context"] = reason == "no_context"
    rec["missing_subject"] = (before.notice.split('"')[1] if reason == "missing_subject" else None)
    book_q = getattr(run, "book_question", question)  # the question as the books write it, where ask has it
    rec["book_question"] = book_q if book_q != question else None
    prompt_ids = [[h.passage_id for h in (s.passages or [s.hit])] for s in blocks]
    texts = [s.hit.text for s in blocks]

    def best(texts_):
        if not texts_:
            return None
        c = float(book_words.cosines_to(question, texts_, embedder).max())
        return max(c, float(book_words.cosines_to(book_q, texts_, embedder).max())) if book_q != question else c

    top = best(texts)
    rec["best_prompt_cosine"] = None if top is None else round(top, 3)
    # a passage that names the question's subject passes the far-passage floor (book_words.names_subject)
    named = lambda texts_: book_words.names_subject(book_q, texts_, embedder, cal.subject)  # noqa: E731
    headed = [book_words.headed(s.hit) for s in blocks]
    rec["far_any"] = bool(cal.cited_floor is not None and (top is None or top < cal.cited_floor) and not named(headed))
    rec["lacks_risk"] = refusal.missing_terms(question, blocks, run.in_corpus)
    sid = source_id(conn, row) if row["answerable"] else None
    if sid is not None:
        ranks = [i for i, h in enumerate(result.hits) if h.passage_id == sid]
        rec["source_rank"] = ranks[0] + 1 if ranks else None
        rec["source_in_prompt"] = any(sid in ids for ids in prompt_ids)
        text, path = conn.execute("SELECT text, section_path FROM passages WHERE id = ?", (sid,)).fetchone()
        heading = (json.loads(path) if path else None) or []
        c = best([text])
        rec["source_cosine"] = round(c, 3)
        rec["far_source"] = bool(cal.cited_floor is not None and c < cal.cited_floor and not named([f"{heading[-1]}\n{text}" if heading else text]))
    rec["refused"] = [r for r in FINAL if rec[r]]
    return rec


def summarise(recs: list[dict], show: bool) -> None:
    by_book = defaultdict(list)
    for r in recs:
        by_book[r["book"]].append(r)
    order = sorted(by_book, key=lambda b: (b in HELD_OUT, b))
    head = ("book", "ans", "refused", "no_ctx", "subject", "far_any", "far_src", "lacks?", "in_prompt", "rank1",
            "unans", "caught", "no_ctx", "subject", "far_any")
    print(" ".join(f"{h:>9}" if i else f"{h:<34}" for i, h in enumerate(head)))
    total = defaultdict(Counter)
    for book in order + ["ALL (tuning)", "ALL (held out)", "ALL"]:
        if book.startswith("ALL"):
            rows = [r for r in recs if book == "ALL" or (r["book"] in HELD_OUT) == (book == "ALL (held out)")]
        else:
            rows = by_book[book]
        a = [r for r in rows if r["answerable"]]
        u = [r for r in rows if not r["answerable"]]
        cells = [len(a), sum(bool(r["refused"]) for r in a), sum(r["no_context"] for r in a),
                 sum(bool(r["missing_subject"]) for r in a), sum(r["far_any"] for r in a),
                 sum(bool(r.get("far_source")) for r in a), sum(bool(r["lacks_risk"]) for r in a),
                 sum(bool(r.get("source_in_prompt")) for r in a), sum(r.get("source_rank") == 1 for r in a),
                 len(u), sum(bool(r["refused"]) for r in u), sum(r["no_context"] for r in u),
                 sum(bool(r["missing_subject"]) for r in u), sum(r["far_any"] for r in u)]
        print(f"{book:<34}" + " ".join(f"{c:>9}" for c in cells))
        if book == "ALL" or book == "ALL (held out)":
            share = cells[1] / max(1, cells[0])
            print(f"  {book}: answerable refused by the rules {cells[1]}/{cells[0]} = {share:.1%}; "
                  f"unanswerable caught {cells[10]}/{cells[9]}")
    shapes = defaultdict(Counter)
    for r in recs:
        if r["answerable"]:
            shapes[r["shape"]]["n"] += 1
            shapes[r["shape"]]["refused"] += bool(r["refused"])
            shapes[r["shape"]]["in_prompt"] += bool(r.get("source_in_prompt"))
        else:
            shapes["u:" + r["shape"]]["n"] += 1
            shapes["u:" + r["shape"]]["refused"] += bool(r["refused"])
    print("\nby shape: " + "; ".join(f"{s} {c['refused']}/{c['n']} refused"
                                     + (f", in prompt {c['in_prompt']}" if not s.startswith("u:") else "")
                                     for s, c in sorted(shapes.items())))
    if show:
        print("\nanswerable questions refused:")
        for r in recs:
            if r["answerable"] and r["refused"]:
                print(f"  {r['id']:<40} {','.join(r['refused'])}"
                      f"{' (' + r['missing_subject'] + ')' if r['missing_subject'] else ''}"
                      f" best {r['best_prompt_cosine']} src {r.get('source_cosine')}: {r['asked']}")
        print("\nunanswerable questions let through:")
        for r in recs:
            if not r["answerable"] and not r["refused"]:
                print(f"  {r['id']:<40} best {r['best_prompt_cosine']}: {r['asked']}")


def main() -> int:
    from ragcli.models.embed import MemoEmbedder, get_embedder
    from ragcli.store import calibration, db

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", required=True, help="a question file (repeat, one per --db)")
    ap.add_argument("--db", action="append", required=True, help="the corpus of that set's book")
    ap.add_argument("--out", help="one JSON record per question")
    ap.add_argument("--reuse", help="an earlier run's --out: a question whose wording the changed code reads "
                    "the same re-uses its retrieval figures (`reused`), so a change to the checks is re-measured fast")
    ap.add_argument("--list", action="store_true", help="list the answerable questions refused, and the "
                    "unanswerable ones let through")
    ap.add_argument("--as-written", action="store_true", help="search on the reader's words, not the question "
                    "as the books write it (ask before ask.as_books_write)")
    args = ap.parse_args()
    global MENDED_SEARCH
    MENDED_SEARCH = not args.as_written
    if len(args.set) != len(args.db):
        ap.error("give one --db per --set")
    embedder = MemoEmbedder(get_embedder())
    earlier = {}
    if args.reuse:
        earlier = {r["id"]: r for r in map(json.loads, open(args.reuse, encoding="utf-8")) if r}
    recs = []
    for qs, path in zip(args.set, args.db):
        conn = db.connect(path)
        cal = calibration.for_corpus(conn)
        rows = [json.loads(line) for line in open(qs, encoding="utf-8") if line.strip()]
        for row in rows:
            rec = reused(conn, embedder, row, cal, earlier.get(row["id"])) if earlier else None
            recs.append(rec or assess(conn, embedder, row, cal))
        print(f"{Path(qs).name}: {len(rows)} questions", file=sys.stderr)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
    summarise(recs, args.list)
    return 0


if __name__ == "__main__":
    sys.exit(main())
