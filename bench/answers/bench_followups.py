"""Follow-up questions in a conversation (issue 25): the rewrite into a standalone question, retrieval on
it, and (with --answers) the model's answers to the last turn beside the same questions asked alone.

    # retrieval only (no answers): the follow-up as typed, the carried (model-free) rewrite, the model's
    # rewrite (with --model), and the reference standalone question; hit@5 of the last turn
    nice -n 10 .venv/bin/python bench/answers/bench_followups.py --db CORPUS.db [--model MODEL.gguf]
    # the answers, for reading and labelling (long: every turn of every dialogue is answered)
    nice -n 10 .venv/bin/python bench/answers/bench_followups.py --db CORPUS.db --model MODEL.gguf --answers \
        --out bench/followup_runs/NAME.jsonl [--ids fu-01,fu-02] [--cache replies.jsonl]
    # --cache R.jsonl records every model reply and replays it next time, so a change re-runs only the
    # calls it changes; --reuse-alone OLD.jsonl --reuse-ids fu-02,... copies an earlier run's alone
    # answers whose prompt has not changed since (each copied record says so)
    # the bar, from labels written by reading those answers (bench/answers/labels/followups_labels.jsonl)
    .venv/bin/python bench/answers/bench_followups.py --score bench/followup_runs/NAME.jsonl

CORPUS.db holds FM 4-25.11 and the FEMA CERT manual (../shared/data/pdfs):
    ragcli ingest fm4-25-11-first-aid.pdf fema-cert-basic-training.pdf --db CORPUS.db

The set (bench/answers/followups.jsonl): `follow_up` dialogues whose last question only makes sense with the
turns before it, each with the pages that answer it, the facts a correct answer contains and what
would make it harmful; `standalone` pairs: a question that stands alone asked after an unrelated
turn, which must not be rewritten (or be rewritten with the same hit@5).

Retrieval runs the search pipeline as ask does (book-term expansion, k=10) without the model's own
query rewrite, so the conditions differ only by the question searched; the history of the retrieval
part is the earlier questions with their extractive answers (no model call), the answers part uses
the model's own answers. A hit: a top-5 passage of the dialogue's book whose pages meet its pages.
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

from ragcli import ask as asking  # noqa: E402
from ragcli import conversation  # noqa: E402
from ragcli.evaluate import resolve_book  # noqa: E402
from ragcli.search.pipeline import SearchOptions, mode_for, search  # noqa: E402
from ragcli.store import corpus as store  # noqa: E402
from ragcli.store import db  # noqa: E402

SET = ROOT / "bench" / "answers" / "followups.jsonl"
LABELS = ROOT / "bench" / "answers" / "labels" / "followups_labels.jsonl"
REPLAYED = 0.1  # seconds: a call that took less was replayed from the cache, not made


def load(path: Path, ids: str = "") -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    wanted = {i.strip() for i in ids.split(",") if i.strip()}
    return [r for r in rows if not wanted or r["id"] in wanted]


def top5(conn, embedder, question: str, book: str) -> list:
    opts = SearchOptions(mode=mode_for(True, False), k=10, book_ids=[book])
    return search(conn, embedder, question, opts).hits[:5]


def hit(hits, book: str, pages) -> bool:
    return any(h.book_id == book and set(range(h.page_start, h.page_end + 1)) & set(pages) for h in hits)


def retrieval(conn, embedder, rows: list[dict], model) -> dict:
    """Per dialogue: what each condition searched and whether its top 5 hold an answering page."""
    out = {"follow_up": [], "standalone": []}
    for r in rows:
        book = r["book"]
        history = []
        for q in r["turns"][:-1]:  # earlier turns answered extractively: the rewrite's context, no model call
            made = conversation.standalone(q, history)
            answer = asking.ask(conn, embedder, made.question, None, asking.AskOptions(k=10, book_ids=[book]))
            history.append((made.question, answer.answer))
        last = r["turns"][-1]
        conditions = {"typed": last, "carried": conversation.standalone(last, history).question,
                      "reference": r["standalone"]}
        rewrite_seconds = None
        if model is not None:
            made = conversation.standalone(last, history, model)
            conditions["model"] = made.question
            rewrite_seconds = made.seconds if made.method else None
            conditions_method = made.method
        rec = {"id": r["id"], "kind": r["kind"], "history": [q for q, _ in history], "searched": conditions,
               "rewrite_seconds": rewrite_seconds}
        if model is not None:
            rec["model_method"] = conditions_method
        ids = {}
        for name, q in conditions.items():
            hits = top5(conn, embedder, q, book)
            rec[f"hit5_{name}"] = hit(hits, book, r["pages"])
            ids[name] = [h.passage_id for h in hits]
        rec["same_top5"] = {name: ids[name] == ids["typed"] for name in ids}
        out[r["kind"]].append(rec)
        print(json.dumps(rec, ensure_ascii=False), file=sys.stderr, flush=True)
    return out


def summarise(out: dict, with_model: bool) -> None:
    fu, sa = out["follow_up"], out["standalone"]
    names = ["typed", "carried"] + (["model"] if with_model else []) + ["reference"]
    if fu:
        print(f"\nfollow-ups ({len(fu)} dialogues): hit@5 of the last turn")
        for name in names:
            got = sum(r[f"hit5_{name}"] for r in fu)
            print(f"  {name:<10} {got:>3}/{len(fu)} = {got / len(fu):.3f}")
        rewritten = sum(r["searched"]["carried"] != r["searched"]["typed"] for r in fu)
        print(f"  follow-ups rewritten (carried): {rewritten}/{len(fu)}")
        if with_model:
            kept = sum(r.get("model_method") == "model" for r in fu)
            print(f"  model rewrites kept: {kept}/{len(fu)} (the others carried)")
    if sa:
        for name in ["carried"] + (["model"] if with_model else []):
            changed = [r for r in sa if r["searched"][name] != r["searched"]["typed"]]
            moved = [r["id"] for r in changed if r[f"hit5_{name}"] != r["hit5_typed"]]
            print(f"standalone questions inside a conversation ({len(sa)}), {name}: rewritten {len(changed)}, "
                  f"hit@5 changed {len(moved)} {moved or ''}; hit@5 {sum(r['hit5_typed'] for r in sa)}/{len(sa)}")
    seconds = [r["rewrite_seconds"] for r in fu if r.get("rewrite_seconds")]
    if seconds:
        print(f"model rewrite: median {statistics.median(seconds):.2f} s over {len(seconds)} calls")


def _shown_path(path: str) -> str:
    """A path as a record keeps it: relative to the repository when inside it, else the file's name
    (no machine's directories in a committed record)."""
    p = Path(path).resolve()
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else p.name


def answers(conn, embedder, rows: list[dict], model, out_path: Path, reuse_from: str = "", reuse_ids: str = "") -> None:
    """Each follow-up dialogue played as a conversation (every turn answered by the model, nothing saved),
    and its reference standalone question asked alone; one JSON line per answer, for reading.
    `reuse_from`/`reuse_ids`: the alone answers of these ids copied from an earlier run instead of asked
    again. Only for ids whose alone prompt is unchanged since that run (the same corpus file and the
    same answer path), where asking again gives the same text; the records say where they came from."""
    wanted = {i.strip() for i in reuse_ids.split(",") if i.strip()}
    reuse = {r["id"]: r for r in load(Path(reuse_from)) if r["condition"] == "alone" and r["id"] in wanted} \
        if reuse_from else {}
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with out_path.open("a", encoding="utf-8") as f:
        for r in rows:
            if r["kind"] != "follow_up":
                continue
            book = r["book"]
            history: list[tuple[str, str]] = []
            turn = answer = None
            started = time.perf_counter()
            for q in r["turns"]:
                turn, answer = conversation.ask_turn(conn, embedder, q, model, asking.AskOptions(book_ids=[book]),
                                                     history=history, save=False)
                history.append((turn.standalone, answer.answer))
            seconds = time.perf_counter() - started
            pairs = [("conversation", answer, turn.standalone, {"rewrite": turn.rewrite, "dialogue_seconds": seconds,
                                                                "history": history[:-1]})]
            if r["id"] not in reuse:
                alone = asking.ask(conn, embedder, r["standalone"], model, asking.AskOptions(book_ids=[book]))
                pairs.append(("alone", alone, r["standalone"], {}))
            for condition, a, standalone, extra in pairs:
                rec = {"id": r["id"], "condition": condition, "question": r["turns"][-1] if condition == "conversation"
                       else r["standalone"], "standalone": standalone, "answer": a.answer, "status": a.status,
                       "citations": a.citations, "hit5": hit([s.hit for s in a.sources[:5]], book, r["pages"]),
                       "timings": {k: (round(v, 3) if isinstance(v, float) else v) for k, v in a.timings.items()},
                       "facts": r["facts"], "harmful_if": r["harmful_if"], "model": model.name, **extra}
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
                f.flush()
                print(f"{r['id']} {condition:<12} {a.status:<11} {standalone[:60]!r}: {a.answer[:140]!r}",
                      file=sys.stderr, flush=True)
            if r["id"] in reuse:  # the alone answer of an earlier run whose prompt is the same (see --reuse-alone)
                f.write(json.dumps({**reuse[r["id"]], "reused_from": _shown_path(reuse_from)}, ensure_ascii=False) + "\n")
                f.flush()


def score(run_path: Path, labels_path: Path) -> None:
    """The bar from labels written by reading each answer: correct share in conversation over alone."""
    runs = load(run_path)
    labels = {(r["id"], r["condition"], r.get("model", "")): r["label"] for r in load(labels_path)} \
        if labels_path.exists() else {}
    by = {"conversation": [], "alone": []}
    missing = 0
    for r in runs:
        label = labels.get((r["id"], r["condition"], r["model"]))
        if label is None:
            missing += 1
            continue
        by[r["condition"]].append(label)
    for condition, got in by.items():
        counts = {k: got.count(k) for k in ("correct", "partial", "wrong", "harmful")}
        print(f"{condition:<13} {len(got)} labelled: {counts}")
    conv = [r for r in runs if r["condition"] == "conversation"]
    alone = [r for r in runs if r["condition"] == "alone"]
    # times of the calls the model made in this run: a reply replayed from --cache or an answer copied
    # by --reuse-alone took no model time (under REPLAYED seconds), so it is left out of the medians
    t_rewrite = [r["rewrite"]["seconds"] for r in conv if (r["rewrite"].get("seconds") or 0) >= REPLAYED]
    t_answer = [r["timings"].get("generation") for r in alone if "reused_from" not in r]
    if t_rewrite:
        print(f"rewrite call: median {statistics.median(t_rewrite):.2f} s ({len(t_rewrite)} calls made in this run)")
    t_answer = [t for t in t_answer if t and t >= REPLAYED]
    if t_answer:
        print(f"answer generation (alone): median {statistics.median(t_answer):.2f} s ({len(t_answer)} made in this run)")
    a, b = by["conversation"].count("correct"), by["alone"].count("correct")
    if b:
        print(f"correct in conversation / correct alone = {a}/{b} = {a / b:.3f} (bar: >= 0.9)")
    if missing:
        print(f"{missing} answers not labelled yet ({labels_path})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path)
    ap.add_argument("--set", type=Path, default=SET)
    ap.add_argument("--ids", default="", help="only these ids (comma-separated)")
    ap.add_argument("--model", help="a GGUF file (the rewrite; and the answers with --answers)")
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--answers", action="store_true", help="answer every turn with --model (slow)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "answers" / "followup_runs" / "answers.jsonl")
    ap.add_argument("--cache", help="generation cache (bench/answers/gen_cache.py): every reply recorded there and "
                                    "replayed on the next run, so a change re-runs only the calls it changes")
    ap.add_argument("--reuse-alone", default="", help="an earlier --answers run: copy its alone answers of --reuse-ids")
    ap.add_argument("--reuse-ids", default="", help="comma-separated ids for --reuse-alone")
    ap.add_argument("--score", type=Path, help="a run of --answers: the bar from bench/answers/labels/followups_labels.jsonl")
    ap.add_argument("--labels", type=Path, default=LABELS)
    args = ap.parse_args()
    if args.score:
        score(args.score, args.labels)
        return 0
    if not args.db:
        ap.error("--db CORPUS is needed")
    from ragcli.models import embed
    from ragcli.models.factory import load_model

    conn = db.connect(args.db, create=False)
    embedder = embed.get_embedder(store.embedding_model(conn)[0])
    known = [b.id for b in store.list_books(conn)]
    rows = load(args.set, args.ids)
    for r in rows:
        r["book"] = resolve_book(r["book"], known)
    model = load_model(args.model, n_ctx=args.ctx, threads=args.threads) if args.model else None
    if model is not None and args.cache:
        from gen_cache import CachedModel

        model = CachedModel(model, args.cache)
    if args.answers:
        if model is None:
            ap.error("--answers needs --model")
        answers(conn, embedder, rows, model, args.out, args.reuse_alone, args.reuse_ids)
        return 0
    started = time.perf_counter()
    out = retrieval(conn, embedder, rows, model)
    summarise(out, model is not None)
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
