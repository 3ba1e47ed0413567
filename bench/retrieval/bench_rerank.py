"""Re-ranking measured on a page-set question file (FM 4-25.11 by default): the default search order
beside a re-ranker's order and their reciprocal-rank fusion at several k.

    python bench/retrieval/bench_rerank.py --db fm.db --rerank llm --model qwen2.5-coder-0.5b.gguf [--every 4]
    python bench/retrieval/bench_rerank.py --db fm.db --rerank llm --model http://127.0.0.1:8080/v1 --every 38
    python bench/retrieval/bench_rerank.py --db fm.db --rerank bge-reranker-v2-m3-q8_0.gguf
    python bench/retrieval/bench_rerank.py --db fm.db --rerank http://127.0.0.1:8012/v1

The re-ranker's scores of each question's first --depth hits are kept in --cache (JSON), so the
fusion variants are computed from one scoring run, and an interrupted run resumes.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ragcli import evaluate  # noqa: E402
from ragcli.search.model_rerank import fused_with_order  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--rerank", required=True, help="llm, a reranker GGUF, a server URL or a profile")
    ap.add_argument("--model", help="the chat model for --rerank llm")
    ap.add_argument("--questions", type=Path, default=ROOT / "bench" / "retrieval" / "fm4-25-11-questions.jsonl")
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--every", type=int, default=1, help="every n-th question (a subset on slow machines)")
    ap.add_argument("--batch", type=int, default=1, help="passages per judge call (--rerank llm)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cache", type=Path, help="scores by question id (default: beside --db)")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from ragcli.models import embed
    from ragcli.config import model_settings
    from ragcli.models.factory import from_settings
    from ragcli.models.rerank import load_reranker
    from ragcli.store import db

    conn = db.connect(args.db, create=False)
    embedder = embed.get_embedder()
    queries = evaluate.load_queries(args.questions)[:: args.every]
    known = [r[0] for r in conn.execute("SELECT id FROM books")]
    for q in queries:
        q.book = evaluate.resolve_book(q.book, known)
    chat = from_settings(model_settings(path=args.model, threads=args.threads)) if args.model else None  # GGUF or URL
    reranker = load_reranker(args.rerank, chat, batch=args.batch)
    cache_path = args.cache or args.db.with_suffix(f".rerank-{Path(args.rerank).stem}.json")
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    from ragcli.search.pipeline import SearchOptions

    search = evaluate.searcher(conn, embedder, SearchOptions(mode="expanded", k=args.depth, depth=args.depth))
    variants: dict[str, list[dict]] = {}
    seconds = []
    for n, q in enumerate(queries, 1):
        hits = search(q.text, None)[: args.depth]
        key = f"{q.id}|{','.join(str(h.passage_id) for h in hits)}"
        if key not in cache:
            t = time.perf_counter()
            cache[key] = reranker.scores(q.text, [h.text for h in hits])
            seconds.append(time.perf_counter() - t)
            cache_path.write_text(json.dumps(cache))
            print(f"{n}/{len(queries)} {q.id} {seconds[-1]:.1f} s", file=sys.stderr)
        scores = cache[key]
        orders = {"default": list(range(len(hits))),
                  "re-ranker alone": sorted(range(len(hits)), key=lambda i: (-scores[i], i))}
        for k in (2, 3, 5, 10, 60):
            fused = fused_with_order(scores, k)
            orders[f"fused k={k}"] = sorted(range(len(hits)), key=lambda i: -fused[i])
        for name, order in orders.items():
            row = {"type": q.type, **evaluate.score_query(q, [hits[i] for i in order])}
            variants.setdefault(name, []).append(row)
    types = sorted({q.type for q in queries})
    counts = ", ".join(f"{sum(q.type == t for q in queries)} {t}" for t in types)
    print(f"{len(queries)} questions ({counts}); re-ranker {args.rerank}; depth {args.depth}")
    if seconds:
        print(f"scoring: {sum(seconds) / len(seconds):.1f} s per question ({len(seconds)} scored in this run)")
    print("| order | " + " | ".join(f"{t} hit@1 | {t} hit@5" for t in types) + " | MRR@10 |")
    print("|---" * (1 + 2 * len(types) + 1) + "|")
    for name, rows in variants.items():
        cells = []
        for t in types:
            sub = [r for r in rows if r["type"] == t]
            cells += [f"{evaluate.mean(sub, ['hit@1'])['hit@1']:.3f}", f"{evaluate.mean(sub, ['hit@5'])['hit@5']:.3f}"]
        print(f"| {name} | " + " | ".join(cells) + f" | {evaluate.mean(rows, ['mrr@10'])['mrr@10']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
