"""What the answer prompt's context cap costs and saves, without generating: for each cap on the blocks'
text (answer/context.py's CONTEXT_TOKENS, estimated tokens), over the answerable questions of an answer
set that lists the answer's pages, the median number of passages in the prompt, the median tokens of
the answer prompt's user message (the part the model evaluates: the system prompt and worked example
come from the saved prefix state), and for how many questions a passage of the answer's pages is in
the prompt at all, and is its best passage. Also the plain prompt's user message (bench_answers.py's
baseline, its own retrieval) for the ratio.

    python bench/first_token_context.py --db cert.db --answers bench/answers/cert-answers.jsonl \
        --model qwen2.5-coder-1.5b-instruct-q4_k_m.gguf [--caps none,700,600,500] [--every 1 --offset 0]

The model file is read for its tokenizer only (no weights are evaluated).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "answers"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--answers", required=True)
    ap.add_argument("--model", required=True, help="a GGUF file: its tokenizer counts the tokens")
    ap.add_argument("--caps", default="none,700,600,500,450")
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--offset", type=int, default=0)
    args = ap.parse_args()

    from common import ask_and_plain_hits, baseline_messages, token_counter
    from ragcli import ask
    from ragcli.answer import context, prompt
    from ragcli.models import embed
    from ragcli.store import db

    count = token_counter(args.model)

    conn = db.connect(Path(args.db), create=False)
    embedder = embed.MemoEmbedder(embed.get_embedder())
    rows = [json.loads(line) for line in open(args.answers, encoding="utf-8") if line.strip()]
    rows = [r for r in rows if r["answerable"] and r.get("pages")][args.offset::args.every]
    caps = [None if c == "none" else int(c) for c in args.caps.split(",")]
    stats = {c: {"passages": [], "tokens": [], "in_prompt": 0, "best": 0} for c in caps}
    plain = []
    for r in rows:
        q = r["question"]
        asked, shown = ask_and_plain_hits(conn, embedder, q)
        plain.append(count(baseline_messages(q, shown)[0]["content"]))
        for cap in caps:
            blocks, _ = context.build(asked.hits, lambda h: ask._adjacent(conn, h), budget=cap if cap else 10 ** 9)
            laid = prompt.build(q, blocks, count, 10 ** 6)
            on = [any(h.page_start <= p <= h.page_end for p in r["pages"] for h in context.passages_of(s))
                  for s in laid.sources]
            st = stats[cap]
            st["passages"].append(len(laid.sources))
            st["tokens"].append(count(laid.messages[-1]["content"]))
            st["in_prompt"] += any(on)
            st["best"] += bool(on and on[0])
    print(f"{Path(args.db).name}: {len(rows)} answerable questions with pages; the plain prompt's user message "
          f"median {statistics.median(plain)} tokens\n")
    print("| cap (estimated tokens) | median passages | median user-message tokens | / plain | answer's page in the prompt | as its best passage |")
    print("|---|---|---|---|---|---|")
    for cap, st in stats.items():
        med = statistics.median(st["tokens"])
        print(f"| {cap or 'none'} | {statistics.median(st['passages'])} | {med} | "
              f"{med / statistics.median(plain):.2f} | {st['in_prompt']} | {st['best']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
