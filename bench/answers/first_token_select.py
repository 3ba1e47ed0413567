"""What cutting each passage to the sentences nearest the question (answer/context.select, decision D151)
saves and costs, without generating. Per setting, over the answerable questions of an answer set: the
median tokens of the answer prompt's user message (the part the model evaluates: the system prompt and
worked example come from the saved prefix state) against the plain prompt's (bench_answers.py's
baseline), the key phrases the prompt holds (of those the whole passages hold), the questions that lose
one, and the selection's time (the sentences' vectors, which the claim check re-uses after the answer).

Settings: `off` (every passage whole); `wWtTaA` (the best W blocks whole, in the others the T sentences
nearest the question with A either side); `wWtTaAbB` (instead of T: each cut passage's nearest sentence,
then the nearest of all with A either side while the cut passages' text stays within B estimated
tokens); `short:` before a setting adds prompt.SHORT_HEADERS (no page in the header, running heads out).

    python bench/answers/first_token_select.py --db fm.db --answers bench/answers/fm4-25-11-answers.jsonl \
        --model qwen2.5-coder-1.5b-instruct-q4_k_m.gguf [--settings off,short:w2t1a1] [--every 1 --offset 0]

The model file is read for its tokenizer only (no weights are evaluated).
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "answers"))


def parse(setting: str):
    if setting == "off":
        return None
    m = re.fullmatch(r"w(\d+)t(\d+)a(\d+)(?:b(\d+))?(e)?", setting)
    if not m:
        raise SystemExit(f"bad setting {setting!r}: off or wWtTaA[bB][e]")
    w, t, a, b, e = m.groups()
    return int(w), int(t), int(a), (int(b) if b else None), bool(e)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--answers", required=True)
    ap.add_argument("--model", required=True, help="a GGUF file: its tokenizer counts the tokens")
    ap.add_argument("--settings", default="off,w1t2a1,w1t1a1,w0t2a1,w2t1a1,w1t3a1,w1t2a0")
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--show", default="", help="a question id: print its prompt per setting")
    args = ap.parse_args()

    from common import ask_and_plain_hits, baseline_messages, phrase_hits, token_counter
    from ragcli import ask
    from ragcli.answer import context, prompt
    from ragcli.models import embed
    from ragcli.store import db

    count = token_counter(args.model)

    conn = db.connect(Path(args.db), create=False)
    embedder = embed.MemoEmbedder(embed.get_embedder())
    rows = [json.loads(line) for line in open(args.answers, encoding="utf-8") if line.strip()]
    rows = [r for r in rows if r["answerable"]][args.offset::args.every]
    settings = args.settings.split(",")
    stats = {s: {"tokens": [], "phrases": 0, "lost": [], "seconds": []} for s in settings}
    plain, whole_phrases = [], 0
    for r in rows:
        q = r["question"]
        asked, shown = ask_and_plain_hits(conn, embedder, q)
        plain.append(count(baseline_messages(q, shown)[0]["content"]))
        blocks, _ = context.build(asked.hits, lambda h: ask._adjacent(conn, h))
        full = None
        for s in settings:
            prompt.SHORT_HEADERS = s.startswith("short:")
            limits = parse(s.removeprefix("short:"))
            t = time.perf_counter()
            chosen = blocks if limits is None else context.select(blocks, q, embed.MemoEmbedder(embedder.inner),
                                                                 *limits)
            seconds = time.perf_counter() - t
            laid = prompt.build(q, chosen, count, 10 ** 6)
            user = laid.messages[-1]["content"]
            got = set(phrase_hits(user, r.get("key_phrases", []), q))
            if full is None:
                full = got if limits is None else set(phrase_hits(
                    prompt.build(q, blocks, count, 10 ** 6).messages[-1]["content"], r.get("key_phrases", []), q))
                whole_phrases += len(full)
            st = stats[s]
            st["tokens"].append(count(user))
            st["phrases"] += len(got & full)
            st["seconds"].append(seconds)
            if full - got:
                st["lost"].append(f"{r['id']}:{'/'.join(sorted(full - got))}")
            if r["id"] == args.show:
                print(f"--- {s}\n{user}\n")
    print(f"{Path(args.db).name}: {len(rows)} answerable questions; the plain prompt's user message median "
          f"{statistics.median(plain)} tokens; key phrases in the whole passages: {whole_phrases}\n")
    print("| setting | median user-message tokens | / plain | key phrases kept | questions losing one | "
          "selection median s |")
    print("|---|---|---|---|---|---|")
    for s, st in stats.items():
        med = statistics.median(st["tokens"])
        print(f"| {s} | {med} | {med / statistics.median(plain):.2f} | {st['phrases']}/{whole_phrases} | "
              f"{len(st['lost'])} {' '.join(st['lost'])} | {statistics.median(st['seconds']):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
