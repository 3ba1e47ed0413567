"""How well the chat model judges which passages answer a question: judge variants side by side.

    python bench/answers/bench_judge.py --db FM.db --answers bench/answers/fm4-25-11-answers.jsonl --model F.gguf
        [--every 3] [--variants shared,pick,isolated] [--out judge.jsonl]

For each question: ragcli's retrieval (book-term expansion, no model rewrite, so the passages do not
depend on the judge's model), the answer prompt `ask` would build, then each variant's score per
passage of the prompt:
- shared:   the answer prompt up to the question, then "Does passage [S3] answer ...? yes or no"; P(yes)
            normalised over yes+no, one call per label (the passages come from the KV cache);
- pick:     the same prefix, then "Which passage answers ...? Reply with its number, 0 if none"; the
            next-token probability of each number (one call for all passages); 0 is "none";
- isolated: the question and one passage alone (models/judge.py's re-ranker prompt); P(yes).
Gold passages: those on a page the answer set lists for the question. Reported per variant: the AUC of
gold vs other passages of answerable questions; at the variant's decision rule, the share of answerable
questions with a gold passage kept, of prompt passages kept, of unanswerable questions with nothing
kept; and the judge's own time (the prefix evaluation, which the answer call re-uses, excluded).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

# The per-passage yes/no form this script compares with the pick judge; ask no longer uses it (D73), so its
# line and threshold live here, as they were when it was measured.
JUDGE_LINE = ("Does passage [{label}] answer the question above (not just mention its topic)? "
              "Reply with one word: yes or no.")
RELEVANT = 0.5

PICK_LINE = ("Which passage answers the question above (not just mentions its topic)? Reply with the "
             "passage's number only, for example 3 for [S3], or 0 if none of them answers it.")


def auc(pos: list[float], neg: list[float]) -> float | None:
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return round(wins / (len(pos) * len(neg)), 3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--answers", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--ids")
    ap.add_argument("--variants", default="shared,pick,isolated")
    ap.add_argument("--out")
    args = ap.parse_args()

    from ragcli.answer import prompt, relevance
    from ragcli.answer.generate import ANSWER_TOKENS_RESERVE
    from ragcli.models import embed
    from ragcli.models.chat import YES_NO, p_yes
    from ragcli.models.factory import load_model
    from ragcli.models.judge import yes_no_messages
    from ragcli.search.pipeline import SearchOptions, mode_for, search
    from ragcli.store import db

    rows = [json.loads(x) for x in open(args.answers, encoding="utf-8") if x.strip()]
    if args.ids:  # in the order given
        order = args.ids.split(",")
        rows = sorted((r for r in rows if r["id"] in order), key=lambda r: order.index(r["id"]))
    rows = rows[:: args.every]
    conn = db.connect(Path(args.db), create=False)
    embedder = embed.MemoEmbedder(embed.get_embedder())
    model = load_model(args.model, n_ctx=4096, threads=args.threads, seed=0)
    variants = args.variants.split(",")
    out = open(args.out, "w", encoding="utf-8") if args.out else None
    records = []
    for r in rows:
        q = r["question"]
        result = search(conn, embedder, q, SearchOptions(mode=mode_for(True, False), k=10, check_language=True))
        sources = prompt.label_sources(result.hits)
        first = prompt.instruction_for(q)
        laid = prompt.build(q, sources, model.count_tokens, 4096 - 512 - ANSWER_TOKENS_RESERVE, instruction=first)
        pages = set(r.get("pages") or [])
        rec = {"id": r["id"], "answerable": r["answerable"], "labels": [s.label for s in laid.sources],
               "gold": [bool(pages & set(range(s.hit.page_start, s.hit.page_end + 1))) for s in laid.sources]}
        t = time.perf_counter()
        model.next_word_probs(relevance.judge_messages(laid.messages, q, "Reply yes or no."), YES_NO)  # the prefix
        rec["prefix_seconds"] = round(time.perf_counter() - t, 2)
        if "shared" in variants:
            t = time.perf_counter()
            rec["shared"] = [p_yes(model.next_word_probs(relevance.judge_messages(
                laid.messages, q, JUDGE_LINE.format(label=s.label)), YES_NO)) for s in laid.sources]
            rec["shared_seconds"] = round(time.perf_counter() - t, 2)
        if "pick" in variants:
            t = time.perf_counter()
            words = {str(i): (str(i),) for i in range(0, len(laid.sources) + 1)}
            probs = model.next_word_probs(relevance.judge_messages(laid.messages, q, PICK_LINE), words)
            total = sum(probs.values()) or 1.0
            rec["pick_none"] = round(probs["0"] / total, 4)
            rec["pick"] = [round(probs[str(i)] / total, 4) for i in range(1, len(laid.sources) + 1)]
            rec["pick_seconds"] = round(time.perf_counter() - t, 2)
        if "pickcal" in variants:  # the same, divided by the answer to a content-free question (calibration)
            t = time.perf_counter()
            words = {str(i): (str(i),) for i in range(0, len(laid.sources) + 1)}
            probs = model.next_word_probs(relevance.judge_messages(laid.messages, q, PICK_LINE), words)
            null_msgs = relevance.judge_messages(laid.messages, q, PICK_LINE)
            null_msgs[-1] = dict(null_msgs[-1], content=null_msgs[-1]["content"].replace(f"Question: {q}", "Question: N/A"))
            null = model.next_word_probs(null_msgs, words)
            ratio = {w: probs[w] / max(null[w], 1e-9) for w in words}
            total = sum(ratio.values()) or 1.0
            rec["pickcal_raw"] = [round(probs[str(i)], 4) for i in range(len(laid.sources) + 1)]
            rec["pickcal_null"] = [round(null[str(i)], 4) for i in range(len(laid.sources) + 1)]
            rec["pickcal_none"] = round(ratio["0"] / total, 4)
            rec["pickcal"] = [round(ratio[str(i)] / total, 4) for i in range(1, len(laid.sources) + 1)]
            rec["pickcal_seconds"] = round(time.perf_counter() - t, 2)
        if "isolated" in variants:
            t = time.perf_counter()
            rec["isolated"] = [p_yes(model.next_word_probs(yes_no_messages(q, s.hit.text), YES_NO))
                               for s in laid.sources]
            rec["isolated_seconds"] = round(time.perf_counter() - t, 2)
        records.append(rec)
        if out:
            out.write(json.dumps(rec) + "\n")
            out.flush()
        print(json.dumps(rec), file=sys.stderr, flush=True)
    print(f"\n{len(records)} questions ({sum(r['answerable'] for r in records)} answerable), {Path(args.model).name}\n")
    print("| variant | AUC gold vs other | answerable: a gold passage kept | prompt passages kept | "
          "unanswerable: none kept | median judge s |")
    print("|---|---|---|---|---|---|")
    for v in variants:
        ans = [r for r in records if r["answerable"]]
        una = [r for r in records if not r["answerable"]]

        def kept(r):
            scores = [x or 0.0 for x in r[v]]
            if v in ("pick", "pickcal"):  # "none" under half, then the passages at least half the best's
                best = max(scores)
                return [r[f"{v}_none"] < 0.5 and x >= 0.5 * best and x > 0 for x in scores]
            return [x >= RELEVANT for x in scores]

        pos = [x or 0.0 for r in ans for x, g in zip(r[v], r["gold"]) if g]
        neg = [x or 0.0 for r in ans for x, g in zip(r[v], r["gold"]) if not g]
        gold_kept = sum(any(k and g for k, g in zip(kept(r), r["gold"])) for r in ans if any(r["gold"]))
        with_gold = sum(any(r["gold"]) for r in ans)
        share = sum(sum(kept(r)) for r in records) / max(1, sum(len(r[v]) for r in records))
        none = sum(not any(kept(r)) for r in una)
        secs = statistics.median(r[f"{v}_seconds"] for r in records)
        print(f"| {v} | {auc(pos, neg)} | {gold_kept}/{with_gold} | {share:.2f} | {none}/{len(una)} | {secs} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
