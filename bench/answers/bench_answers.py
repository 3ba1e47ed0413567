"""Answer quality of `ask` on FM 4-25.11: does it answer what the book answers, with the book's key
facts, cite validly, and refuse what the book does not say? With a plain-RAG baseline beside it.

    python bench/answers/bench_answers.py --db FM.db [--model F.gguf] [--baseline] [--limit N] [--ids a,b]
        [--set answerable|unanswerable] [--variant NAME] [--out records.jsonl] [--threads 2]
        [--cache replies.jsonl [--replay]] [--repeat-penalty 1.05]

Without --model, `ask` answers extractively (no baseline then). With --baseline, the same model also
answers from the plain-RAG prompt of issue 16 (the top 6 passages of ragcli's own retrieval, then the
question, then "answer in 2-4 sentences, end each sentence with its label"), in the same run, question
by question, so load and model are the same for both.

With --cache, every model reply is recorded (bench/answers/gen_cache.py) and replayed on the next run: a change
to what happens after generation (claim scoring, the unbacked check) is re-measured on the same replies.

Per answer: answered or refused (ragcli: its status; baseline: ragcli.answer.refusal), the key phrases
present (normalised: case, punctuation, number words, plural/-ed/-ing), every claim's support level
(ragcli.answer.grounding, the same scorer for both), invalid citations (bench/answers/ask_grounding.py's check),
prompt tokens (all, and those the model evaluated: the rest came from its cache), the seconds of the
whole question and to the first answer token on screen (both from the question's start: retrieval,
ragcli's rewrite and prompt processing included). Prints the summary table, the medians and the
ratio of ragcli's median time to the baseline's, and per question the ratio's median.

The baseline retrieves with ragcli's search without the model rewrite (issue 34: the plain script
makes one model call), so its time has no rewrite in it.
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
sys.path.insert(0, str(ROOT / "bench" / "answers"))

from common import BASELINE_PASSAGES, baseline_messages, normalise, phrase_hits  # noqa: E402,F401

ANSWERS = ROOT / "bench" / "answers" / "fm4-25-11-answers.jsonl"
REFUSED = ("no_answer", "no_context")


# ------------------------------------------------------------------------------------- ragcli and baseline runs
def retrieved(conn, embedder, model, question: str, opts) -> list:
    """ragcli's own retrieval for the question, as ask runs it but without the model rewrite when
    `model` is None (the plain script's one call is its answer)."""
    from ragcli.answer import prompt
    from ragcli.search.pipeline import SearchOptions, mode_for, search

    result = search(conn, embedder, question, SearchOptions(mode=mode_for(opts.expand, opts.feedback), k=opts.k,
                                                            check_language=True, rerank_depth=opts.rerank_depth),
                    model=model)
    return prompt.label_sources(result.hits)


def run_baseline(model, embedder, question: str, retrieved_sources, max_tokens: int) -> dict:
    from ragcli.answer import citations, grounding, prompt, refusal
    from ragcli.types import Answer

    passages = [s for s in retrieved_sources if s.hit.kind == "passage"][:BASELINE_PASSAGES]
    sources = prompt.label_sources([s.hit for s in passages])
    messages = baseline_messages(question, sources)
    t = time.perf_counter()
    pieces, first = [], None
    for piece in model.chat(messages, max_tokens=max_tokens, stream=True):
        if piece and first is None:
            first = time.perf_counter()
        pieces.append(piece)
    text = "".join(pieces)
    seconds = time.perf_counter() - t
    checked = citations.validate(text, {s.label for s in sources}, *prompt.reference_maps(sources))
    status = "no_answer" if refusal.is_refusal(checked.text) else "answered"
    base = Answer(question, None, checked.text, status, checked.citations, checked.removed, sources)
    base.claims = grounding.score(checked.text, sources, embedder) if status == "answered" else []
    rec = _record(base, seconds, dict(model.stats))
    rec["first_at"] = first  # perf_counter of the first piece: the caller makes it relative
    return rec


# ------------------------------------------------------------------------------------- ragcli
def run_ragcli(conn, embedder, model, question: str, opts) -> tuple[object, dict]:
    from ragcli import ask
    from ragcli.answer import grounding

    first: list[float] = []

    def on_text(piece: str) -> None:  # as the terminal shows it: the first validated piece
        if piece.strip() and not first:
            first.append(time.perf_counter())

    t = time.perf_counter()
    answer = ask.ask(conn, embedder, question, model, opts, on_text=on_text)
    if answer.answer and not answer.claims and answer.status in ("answered", "extractive"):
        grounding.assess(answer, embedder)
    seconds = time.perf_counter() - t
    rec = _record(answer, seconds, answer.timings)
    rec["first_answer_token"] = round(first[0] - t, 2) if first else None
    rec["blocks"] = [[p.passage_id for p in (s.passages or [s.hit])] for s in answer.sources if s.passages]
    return answer, rec


def _record(answer, seconds: float, stats: dict) -> dict:
    from ask_grounding import invalid_marks
    from ragcli.answer import refusal

    labels = {s.label for s in answer.sources}
    bad = invalid_marks(answer.answer, labels) + [c for c in answer.citations if c not in labels]
    return {
        "status": answer.status, "answer": answer.answer, "citations": list(answer.citations),
        "invalid": bad, "removed": len(answer.removed_citations),
        "claims": [c.support for c in answer.claims or []],
        "refusal_text": bool(answer.answer) and refusal.is_refusal(answer.answer),
        "attempts": getattr(answer, "attempts", None),
        "reason": getattr(answer, "notice", None),
        "warnings": [w.code for w in getattr(answer, "warnings", None) or []],
        "sources": [f"{s.label} p.{s.hit.page_label} {(s.hit.section_path or [''])[-1][:40]} #{s.hit.passage_id}"
                    for s in answer.sources],
        "cited_as": [c.cited_as for c in answer.claims or [] if getattr(c, "cited_as", None)],
        "claim_detail": [{"text": c.text, "support": c.support, "citations": list(c.citations),
                          "cited_as": list(getattr(c, "cited_as", None) or []), "score": c.score}
                         for c in answer.claims or []],
        "rewrite": answer.expanded_query,
        "why": getattr(answer, "reason", None),
        "relevance": [None if getattr(s, "relevance", None) is None else round(s.relevance, 3) for s in answer.sources],
        "judge_seconds": (stats.get("judge") if isinstance(stats, dict) else None),
        "dense": [round(s.hit.dense_score, 3) if s.hit.dense_score is not None else None
                  for s in answer.sources],
        "prompt_tokens": stats.get("prompt_tokens"), "prompt_evaluated": stats.get("prompt_evaluated"),
        "first_token": stats.get("first_token"),
        "generated_tokens": stats.get("generated_tokens"), "seconds": round(seconds, 2),
    }


# ------------------------------------------------------------------------------------- summary
def summarise(records: list[dict], system: str) -> dict:
    rows = [r for r in records if system in r]
    ans = [r for r in rows if r["answerable"]]
    una = [r for r in rows if not r["answerable"]]

    def answered(r):
        return r[system]["status"] in ("answered", "extractive")

    claims = [lv for r in ans if answered(r) for lv in r[system]["claims"] if lv != "not_factual"]
    tokens = [r[system]["prompt_tokens"] for r in rows if r[system].get("prompt_tokens")]
    return {
        "answerable": len(ans),
        "answered": _rate(sum(answered(r) for r in ans), len(ans)),
        "key_phrase": _rate(sum(bool(r[system]["key_hits"]) for r in ans), len(ans)),
        "key_phrases_found": _rate(sum(len(r[system]["key_hits"]) for r in ans),
                                   sum(len(r["key_phrases"]) for r in ans)),
        "claims": len(claims),
        "claims_supported": _rate(claims.count("supported"), len(claims)),
        "claims_weak": _rate(claims.count("weak"), len(claims)),
        "unanswerable": len(una),
        "refused": _rate(sum(r[system]["status"] in REFUSED for r in una), len(una)),
        "no_answer_on_answerable": sum(r[system]["status"] in REFUSED for r in ans),
        "invalid_citations": sum(len(r[system]["invalid"]) for r in rows),
        "refusal_shown_as_answer": sum(r[system]["refusal_text"] and answered(r) for r in rows),
        "median_prompt_tokens": statistics.median(tokens) if tokens else None,
        "median_prompt_evaluated": _median([r[system].get("prompt_evaluated") for r in rows]),
        "median_seconds": statistics.median(r[system]["seconds"] for r in rows) if rows else None,
        "median_first_answer_token": _median([r[system].get("first_answer_token") for r in rows]),
        "second_chances": sum((r[system].get("attempts") or 1) > 1 for r in rows),
        "median_judge_seconds": (statistics.median(j) if (j := [r[system]["judge_seconds"] for r in rows
                                 if r[system].get("judge_seconds")]) else None),
    }


def _median(values) -> float | None:
    got = [v for v in values if v is not None]
    return round(statistics.median(got), 2) if got else None


def time_ratios(records: list[dict]) -> dict:
    """ragcli's time over the baseline's: of the medians, and the median of the per-question ratios."""
    both = [r for r in records if "ragcli" in r and "baseline" in r and r["baseline"]["seconds"]]
    if not both:
        return {}
    med = statistics.median(r["ragcli"]["seconds"] for r in both) / statistics.median(
        r["baseline"]["seconds"] for r in both)
    per = statistics.median(r["ragcli"]["seconds"] / r["baseline"]["seconds"] for r in both)
    return {"questions": len(both), "ratio_of_medians": round(med, 3), "median_ratio": round(per, 3)}


def _rate(n: int, d: int) -> float:
    return round(n / d, 3) if d else 0.0


def print_table(summaries: dict[str, dict], label: str) -> None:
    keys = list(next(iter(summaries.values())).keys())
    print(f"\n{label}\n")
    print("| figure | " + " | ".join(summaries) + " |")
    print("|---|" + "---|" * len(summaries))
    for k in keys:
        print(f"| {k} | " + " | ".join(str(s[k]) for s in summaries.values()) + " |")


# ------------------------------------------------------------------------------------- main
def _switch_off(rules: set) -> None:
    """Turn status rules off for an ablation run (replayed from the generation cache, a run with a rule
    off costs no model call that the run with it on did not make, unless the rule led to a second try)."""
    import functools

    from ragcli import ask
    from ragcli.answer import refusal
    from ragcli.answer import book_words

    if "missing_subject" in rules:
        book_words.missing_subject = lambda *a, **k: None
    if "off_question" in rules:
        refusal.off_question = lambda *a, **k: False
    if "no_context" in rules:
        ask.no_context = lambda *a, **k: False
    skip = tuple(r for r in rules if r in refusal.UNBACKED_RULES)
    if skip:
        refusal.unbacked_reason = functools.partial(refusal.unbacked_reason, skip=skip)


def _set_cited_floor(floor) -> None:
    """The shipped calibrations with another cited-passage floor (None: the rule off)."""
    import dataclasses

    from ragcli.store import calibration

    for name, cal in list(calibration.SHIPPED.items()):
        calibration.SHIPPED[name] = dataclasses.replace(cal, cited_floor=floor)


def install_oracle() -> dict:
    """--oracle: the ceiling of the model, not of ragcli. Retrieval is replaced, question by question, by
    the passages on the pages the answer set lists (the retrieved ones in rank order, then the rest of
    those pages in book order), at most the answer prompt's count: what the model writes when it is given
    only passages that answer. The rules decided before any answer (no_context, missing_subject) are off.
    Returns the holder whose "pages" the run loop sets per question."""
    from ragcli import ask
    from ragcli.answer import prompt
    from ragcli.store import corpus

    current: dict = {"pages": []}
    original = ask.search

    def search(conn, embedder, question, opts, **kw):
        result = original(conn, embedder, question, opts, **kw)
        pages = current["pages"]
        on_pages = [r[0] for p in pages for r in conn.execute(
            "SELECT id FROM passages WHERE kind = 'passage' AND page_start <= ? AND page_end >= ?"
            " ORDER BY book_id, ordinal", (p, p))]
        wanted = set(on_pages)
        gold = [h for h in result.hits if h.passage_id in wanted]
        seen = {h.passage_id for h in gold}
        rest = [i for i in dict.fromkeys(on_pages) if i not in seen]
        found = corpus.fetch_hits(conn, rest)
        result.hits = (gold + [found[i] for i in rest if i in found])[:prompt.ANSWER_SOURCES]
        return result

    ask.search = search
    _switch_off({"no_context", "missing_subject"})
    return current


def load_questions(args) -> list[dict]:
    rows = [json.loads(line) for line in open(args.answers, encoding="utf-8") if line.strip()]
    if args.set:
        rows = [r for r in rows if r["answerable"] == (args.set == "answerable")]
    if args.ids:
        wanted = set(args.ids.split(","))
        rows = [r for r in rows if r["id"] in wanted]
    if args.every > 1:
        rows = rows[args.offset:: args.every]
    return rows[: args.limit] if args.limit else rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--answers", default=str(ANSWERS))
    ap.add_argument("--model")
    ap.add_argument("--baseline", action="store_true", help="also the plain-RAG prompt, same model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--temperature", type=float, default=0.2, help="ragcli's default")
    ap.add_argument("--max-tokens", type=int, default=200)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--every", type=int, default=1, help="every n-th question (a spread-out subset)")
    ap.add_argument("--offset", type=int, default=0, help="with --every: start at this row")
    ap.add_argument("--ids")
    ap.add_argument("--set", choices=("answerable", "unanswerable"))
    ap.add_argument("--alternate", action="store_true", help="with --baseline: the plain prompt first on every "
                    "other question (by default ragcli's ask runs first on each)")
    ap.add_argument("--variant", help="prompt variant (bench/answers/answer_variants.py) instead of ragcli's own")
    ap.add_argument("--no-expand", action="store_true")
    ap.add_argument("--rewrite", action="store_true", help="ask with the model rewrite of the question (ask --rewrite)")
    ap.add_argument("--out", help="write one JSON record per question here")
    ap.add_argument("--label", default="")
    ap.add_argument("--repeat-penalty", type=float, default=None, help="llama.cpp's; ragcli's default if unset")
    ap.add_argument("--cache", help="generation cache (bench/answers/gen_cache.py): replies recorded here are "
                    "replayed, others generated and recorded")
    ap.add_argument("--replay", action="store_true", help="with --cache: a call not recorded is an error")
    ap.add_argument("--oracle", action="store_true", help="the answer prompt gets only the passages on the "
                    "question's listed pages (the model's ceiling: install_oracle)")
    ap.add_argument("--judge", action="store_true", help="ask with the relevance judge (ask --judge)")
    ap.add_argument("--show", action="store_true", help="print every answer as it comes (stderr)")
    ap.add_argument("--without", default="", help="status rules switched off (ablation), comma-separated: "
                    "missing_subject, off_question, no_context, and refusal.UNBACKED_RULES (amount, amount_of, "
                    "which, lacks, none_backed, mostly_contradicted)")
    ap.add_argument("--cited-floor", help="the calibrated floor of the cited passages' cosine to the question "
                    "(store/calibration.py's cited_floor) set to this figure, or 'off'")
    args = ap.parse_args()

    from ragcli import ask
    from ragcli.models import embed
    from ragcli.models.factory import load_model
    from ragcli.store import db

    conn = db.connect(Path(args.db), create=False)
    embedder = embed.get_embedder()
    model = None
    if args.model:
        model = load_model(args.model, n_ctx=args.ctx, threads=args.threads, seed=0,
                           temperature=args.temperature, repeat_penalty=args.repeat_penalty)
        if args.cache:
            from gen_cache import CachedModel

            model = CachedModel(model, args.cache, replay_only=args.replay)
    if args.variant:
        import answer_variants

        answer_variants.apply(args.variant)
    without = {w for w in args.without.split(",") if w}
    _switch_off(without)
    if args.cited_floor:
        _set_cited_floor(None if args.cited_floor == "off" else float(args.cited_floor))
    oracle = install_oracle() if args.oracle else None
    opts = ask.AskOptions(max_tokens=args.max_tokens, expand=not args.no_expand, judge=args.judge,
                          rewrite=args.rewrite)
    out = open(args.out, "w", encoding="utf-8") if args.out else None
    records = []
    for n, q in enumerate(load_questions(args)):
        if oracle is not None:
            oracle["pages"] = q.get("pages") or []
        row = {"id": q["id"], "question": q["question"], "answerable": q["answerable"],
               "key_phrases": q.get("key_phrases", [])}

        def ragcli_run() -> None:
            answer, rec = run_ragcli(conn, embed.MemoEmbedder(embedder), model, q["question"], opts)
            rec["key_hits"] = (phrase_hits(rec["answer"], row["key_phrases"], q["question"])
                               if rec["status"] not in REFUSED else [])
            row["ragcli"] = rec

        def baseline_run() -> None:
            memo = embed.MemoEmbedder(embedder)  # each system embeds its own question and sentences
            t0 = time.perf_counter()
            found = retrieved(conn, memo, None, q["question"], opts)
            b = run_baseline(model, memo, q["question"], found, args.max_tokens)
            b["seconds"] = round(time.perf_counter() - t0, 2)  # its retrieval and claim scoring too, as ragcli's
            at = b.pop("first_at")
            b["first_answer_token"] = round(at - t0, 2) if at is not None else None
            b["key_hits"] = (phrase_hits(b["answer"], row["key_phrases"], q["question"])
                             if b["status"] not in REFUSED else [])
            row["baseline"] = b

        runs = [ragcli_run] + ([baseline_run] if args.baseline and model is not None else [])
        if args.alternate and n % 2:
            runs.reverse()  # the plain prompt first on every other question: what runs second is not favoured
        for go in runs:
            go()
        records.append(row)
        if out:
            out.write(json.dumps(row) + "\n")
            out.flush()
        brief = " | ".join(f"{s}: {row[s]['status']} {len(row[s]['key_hits'])}/{len(row['key_phrases'])} "
                           f"{row[s]['prompt_tokens']}t ({row[s].get('prompt_evaluated')} new) "
                           f"first {row[s].get('first_answer_token')}s, {row[s]['seconds']}s"
                           for s in ("ragcli", "baseline") if s in row)
        print(f"{q['id']}: {brief}", file=sys.stderr, flush=True)
        if args.show:
            for s in ("ragcli", "baseline"):
                if s in row:
                    print(f"  {s} [{row[s]['status']}]: {row[s]['answer']}", file=sys.stderr, flush=True)
    systems = {s: summarise(records, s) for s in ("ragcli", "baseline") if any(s in r for r in records)}
    what = Path(args.model).name if args.model else "extractive (no model)"
    print_table(systems, f"{args.label or what}, {len(records)} questions, variant {args.variant or 'ragcli'}")
    ratios = time_ratios(records)
    if ratios:
        print(f"\ntime ragcli/baseline over {ratios['questions']} questions: ratio of the medians "
              f"{ratios['ratio_of_medians']}x, median of the per-question ratios {ratios['median_ratio']}x")
    if args.cache and model is not None:
        print(f"\ngeneration cache {args.cache}: {model.hits} replayed, {model.misses} generated")
        if model.unrecorded:
            # a replay that needed an unrecorded call is not the recorded run (a swallowed rewrite
            # miss changes retrieval silently): its figures must not be read as a replay's
            print(f"--replay: {model.unrecorded} call(s) had no recorded reply: this run is not a replay",
                  file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
