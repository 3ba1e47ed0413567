"""The answer's context without a model: how often the blocks of answer/context.py hold a page of the
answer, against today's 6 single passages, and how many tokens each takes (issue 34).

    python bench/retrieval/bench_context.py --db CERT.db --questions bench/answers/cert-answers.jsonl [--every 2]
    python bench/retrieval/bench_context.py --db FM.db --questions bench/retrieval/fm4-25-11-questions.jsonl --every 2
        [--configs 700/5/260/1,800/5/260/1]

For every answerable question with pages: ask's search (expanded, k=10, no model rewrite), then the
blocks under each configuration TOKENS/BLOCKS/BLOCK_TOKENS/NEIGHBOURS, and "top 6": the 6 passages
the answer prompt took before blocks. A question counts when any passage of the prompt lies on one
of its listed pages. Tokens are context.estimate_tokens (1.35 a word), the same for both.
With --tokenizer F.gguf (the vocabulary alone is loaded): the median tokens of ask's whole answer
prompt (prompt.build: system prompt, worked example, passages, question) with the 6 passages and with
the default blocks, counted by that model's tokenizer.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ragcli import ask  # noqa: E402
from ragcli.answer import context  # noqa: E402
from ragcli.models import embed  # noqa: E402
from ragcli.search.pipeline import SearchOptions, search  # noqa: E402
from ragcli.store import db  # noqa: E402


def on_pages(hits, pages: set[int]) -> bool:
    return any(set(range(h.page_start, h.page_end + 1)) & pages for h in hits)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--configs", default="700/5/260/1,700/4/260/2,700/5/360/1,800/5/260/1")
    ap.add_argument("--tokenizer", help="a GGUF model whose tokenizer counts the answer prompt's tokens")
    args = ap.parse_args()
    conn = db.connect(Path(args.db), create=False)
    embedder = embed.get_embedder()
    rows = [json.loads(line) for line in open(args.questions, encoding="utf-8") if line.strip()]
    rows = [r for r in rows if r.get("answerable", True) and r.get("pages")][:: args.every]
    found = {r["id"]: search(conn, embedder, r["question"], SearchOptions(mode="expanded", k=10)).hits for r in rows}
    top = [found[r["id"]][:6] for r in rows]
    print(f"{len(rows)} questions; top 6 passages: answer page in the prompt {sum(on_pages(t, set(r['pages'])) for t, r in zip(top, rows))}, "
          f"median tokens {statistics.median(sum(context.estimate_tokens(h.text) for h in t) for t in top)}")
    if args.tokenizer:
        import llama_cpp

        from ragcli.answer import prompt

        llm = llama_cpp.Llama(args.tokenizer, vocab_only=True, verbose=False)

        def count(text: str) -> int:
            return len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

        sizes: dict[str, list[int]] = {"6 passages": [], "blocks": []}
        for r in rows:
            hits, task = found[r["id"]], prompt.instruction_for(r["question"])
            blocks, _ = context.build(hits, lambda h: ask._adjacent(conn, h))
            for name, sources in (("6 passages", prompt.label_sources(hits)), ("blocks", blocks)):
                sizes[name].append(prompt.build(r["question"], sources, count, 10 ** 6, instruction=task).prompt_tokens)
        print("answer prompt tokens (median): " + ", ".join(f"{k} {statistics.median(v)}" for k, v in sizes.items()))
    for cfg in args.configs.split(","):
        tokens, blocks, per, joined = (int(x) for x in cfg.split("/"))
        got, sizes, counts, multi = 0, [], [], 0
        for r in rows:
            made, _ = context.build(found[r["id"]], lambda h: ask._adjacent(conn, h), None, budget=tokens,
                                    max_blocks=blocks, block_tokens=per, max_neighbours=joined)
            got += on_pages([p for b in made for p in context.passages_of(b)], set(r["pages"]))
            sizes.append(sum(context.estimate_tokens(b.hit.text) for b in made))
            counts.append(len(made))
            multi += sum(len(b.passages) > 1 for b in made)
        print(f"blocks {cfg}: answer page in the prompt {got}, median tokens {statistics.median(sizes)}, "
              f"median blocks {statistics.median(counts)}, blocks of 2+ passages {multi}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
