"""Answer health on real models: run `ask` (optionally --verify) and `summary new` over a question set
with one model, keep every answer with its health (status, warnings) for reading and labelling, and
compare the health checks with the labels when a labels file is given.

    python bench/answers/answer_health.py --db fm.db --model qwen2.5-coder-0.5b-instruct-q4_k_m.gguf \
        --questions bench/retrieval/fm4-25-11-questions.jsonl --every 3 --limit 30 --out run.jsonl \
        [--verify-every 3] [--topics "heat stroke,tourniquet"] [--k 10 --max-tokens 256 --ctx 4096 --no-expand]
        [--tag s5]  (ids "MODEL@s5:QUESTION": a second run of one model kept beside the first)
    python bench/answers/answer_health.py --score run.jsonl --labels bench/answers/labels/answer_health_labels.jsonl [--recheck]
        [--regrade --db fm.db --k 4]

Labels (one JSON object a line): {"id": "...", "model": "...", "label": "looping" | "echo" |
"cut_off" | "off_topic" | "fine", "also": [a second fault, optional], "note": "..."}. The bar (issue 13): every answer labelled
looping, echo or cut_off is flagged (a warning of the matching kind), and at most 1 in 10 of those
labelled fine is flagged at all.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

# which warning codes count as "flagged" for each label
EXPECTED = {"looping": {"repetition"}, "echo": {"echo"}, "cut_off": {"truncated"}}
ANY_FLAG = {"truncated", "repetition", "echo", "weak", "unsupported"}
GENERATION = {"truncated", "repetition", "echo"}


class _Recording:
    """Keeps what each health monitor of a run saw: the model's raw pieces (before the monitor), the echo
    patterns it matched, the model's stats and max_tokens; so the checks can be run again on the same
    replies after a change to answer/health.py (`--score --recheck`), without running the model."""

    def __init__(self):
        from ragcli.answer import generate, health

        self.replies: list[dict] = []
        recording = self

        class RecordingMonitor(health.Monitor):
            def __init__(self, sources=(), system_prompt=None, question=""):
                from ragcli.answer.prompt import answer_header, source_header

                super().__init__(sources, system_prompt, question)
                self.saved = {"patterns": list(self.echo.patterns), "pieces": [],
                              "headers": [h(s) for s in sources for h in (source_header, answer_header)],
                              "system_prompt": system_prompt, "question": question}
                recording.replies.append(self.saved)

            def feed(self, piece):
                self.saved["pieces"].append(piece)
                return super().feed(piece)

            def warnings(self, stats, max_tokens):
                self.saved.update(stats={k: v for k, v in (stats or {}).items() if isinstance(v, (int, float, str))},
                                  max_tokens=max_tokens, stopped=self.stop)
                return super().warnings(stats, max_tokens)

        generate.health.Monitor = RecordingMonitor  # the generation loop builds its monitor by this name

    def take(self) -> list[dict]:
        out, self.replies = self.replies, []
        return out


def run(args) -> None:
    from ragcli import ask, summary
    from ragcli.models import embed
    from ragcli.models.embed import MemoEmbedder
    from ragcli.models.factory import load_model
    from ragcli.render.data import answer_data, summary_data
    from ragcli.store import db

    conn = db.connect(Path(args.db), create=False)
    embedder = MemoEmbedder(embed.get_embedder())
    model = load_model(args.model, n_ctx=args.ctx, threads=args.threads, seed=0, temperature=0.2)
    questions = [json.loads(line) for line in Path(args.questions).read_text().splitlines() if line.strip()]
    questions = questions[::args.every][:args.limit]
    out = open(args.out, "a", encoding="utf-8")
    done = {json.loads(line)["id"] for line in open(args.out, encoding="utf-8")} if Path(args.out).stat().st_size else set()
    name = Path(args.model).name + (f"@{args.tag}" if args.tag else "")
    recording = _Recording()
    for topic in [t.strip() for t in (args.topics or "").split(",") if t.strip()]:
        key = f"{name}:summary:{topic}"
        if key in done:
            continue
        t = time.perf_counter()
        first = []
        try:
            s = summary.generate(conn, embedder, topic, model,
                                 summary.SummaryOptions(k=args.k, max_tokens=args.max_tokens * 2,
                                                        expand=not args.no_expand),
                                 on_text=lambda text: first or first.append(time.perf_counter() - t))
            data = summary_data(s)
        except Exception as exc:  # a summary cut short is refused (IncompleteReply): keep what was seen
            data = {"error": f"{type(exc).__name__}: {exc}", "warnings": []}
        row = {"id": key, "kind": "summary", "model": name, "question": topic,
               "seconds": round(time.perf_counter() - t, 1),
               "first_text": round(first[0], 2) if first else None, **data}
        _write(out, row, name, recording)
        print(f"{key}: {[w['code'] for w in row['warnings']]} {row['seconds']}s", flush=True)
    for i, q in enumerate(questions):
        verify = bool(args.verify_every) and i % args.verify_every == 0
        key = f"{name}:{q['id']}{':verify' if verify else ''}"
        if key in done:
            continue
        t = time.perf_counter()
        first: list[float] = []
        opts = ask.AskOptions(k=args.k, max_tokens=args.max_tokens, verify=verify, expand=not args.no_expand)
        answer = ask.ask(conn, embedder, q["question"], model, opts,  # claims, --verify, health: in the core
                         on_text=lambda text: first or first.append(time.perf_counter() - t))
        row = {"id": key, "kind": "ask", "model": name, "question": q["question"], "verify": verify,
               "seconds": round(time.perf_counter() - t, 1),
               "first_text": round(first[0], 2) if first else None, **answer_data(answer)}
        _write(out, row, name, recording)
        print(f"{key}: {answer.status} {[w.code for w in answer.warnings]} {row['seconds']}s", flush=True)


def _write(out, row: dict, name: str, recording) -> None:
    """One record: the passages dropped, the model named (answer_data's "model" is the params), the
    model's raw replies kept."""
    row.pop("sources", None)
    row["model_params"], row["model"] = row.get("model"), name
    row["replies"] = recording.take()
    out.write(json.dumps(row, ensure_ascii=False) + "\n")
    out.flush()


def recheck(row: dict) -> set[str]:
    """The warning codes today's answer/health.py gives the saved raw replies (the model is not run
    again): each reply fed piece by piece to a monitor with the echo patterns of its prompt, stopped
    where the monitor stops; the claim-level codes (`weak`, `unsupported`) are the run's own."""
    from ragcli.answer import health

    codes = {w["code"] for w in row["warnings"] if w["code"] in ("weak", "unsupported", "stream_cut")}
    for reply in row.get("replies", []):
        monitor = health.Monitor.__new__(health.Monitor)
        if "headers" in reply:
            patterns = health.patterns_from(reply["headers"], reply["system_prompt"] or "", reply["question"])
        else:  # a run before the headers were kept: the saved patterns (headers cut to 36 characters)
            patterns = reply["patterns"] + health.patterns_from(
                [p for p in reply["patterns"] if p.startswith("[")], "", row["question"])
        monitor.echo, monitor.loop = health.EchoFilter(patterns), health.LoopDetector()
        for piece in reply["pieces"]:
            monitor.feed(piece)
            if monitor.stop:
                break
        monitor.flush()
        codes |= {w.code for w in monitor.warnings(reply.get("stats"), reply.get("max_tokens", 0))}
        if health.repeats_question("".join(reply["pieces"]), reply.get("question") or row["question"]):
            codes.add("echo")  # answer/generate.py adds the same warning
    return codes


class Regrader:
    """The claim-level codes (`weak`, `unsupported`) today's grounding gives a saved answer: its
    passages retrieved again as the run did (`--no-expand`, `k`), its text graded by
    answer/grounding.py (a model-free step: a change there, such as re-pointed labels, is measured
    without running the model again). An answer the run judged `no_answer`/`no_context` gets none."""

    def __init__(self, db_path: str, k: int):
        from ragcli.models import embed
        from ragcli.models.embed import MemoEmbedder
        from ragcli.store import db

        self.conn, self.k = db.connect(Path(db_path), create=False), k
        self.embedder = MemoEmbedder(embed.get_embedder())

    def codes(self, row: dict) -> set[str]:
        from ragcli.answer import grounding, health, prompt
        from ragcli.ask import mode_for
        from ragcli.search.pipeline import SearchOptions, search

        old = {w["code"] for w in row["warnings"]}
        if row.get("kind") != "ask" or row.get("status") in ("no_answer", "no_context") or not row.get("answer"):
            return old & {"weak", "unsupported"}
        result = search(self.conn, self.embedder, row["question"],
                        SearchOptions(mode=mode_for(False, False), k=self.k, check_language=True))
        claims = grounding.score(row["answer"], prompt.label_sources(result.hits), self.embedder)
        status = "unsupported" if "unsupported" in old else "answered"  # re-pointing adds no citation
        return {w.code for w in health.claim_warnings(claims, status)}


def score(args) -> None:
    regrader = Regrader(args.db, args.k) if args.regrade else None
    runs = {}
    for path in args.score:
        for line in open(path, encoding="utf-8"):
            row = json.loads(line)
            runs[row["id"]] = row
    labels = [json.loads(line) for line in open(args.labels, encoding="utf-8") if line.strip()]
    missed, flagged_fine, fine, by_label = [], [], 0, {}
    for lab in labels:
        row = runs.get(lab["id"])
        if row is None:
            continue
        codes = recheck(row) if args.recheck else {w["code"] for w in row["warnings"]}
        if regrader:
            codes = (codes - {"weak", "unsupported"}) | regrader.codes(row)
        by_label.setdefault(lab["label"], []).append(lab["id"])
        for kind in [lab["label"], *lab.get("also", [])]:  # "also": a second fault the answer shows
            want = EXPECTED.get(kind)
            if want and not want & codes:
                missed.append((lab["id"], kind, sorted(codes)))
        if lab["label"] == "fine":
            fine += 1
            if codes & ANY_FLAG:
                flagged_fine.append((lab["id"], sorted(codes)))
    print("labels:", {k: len(v) for k, v in sorted(by_label.items())})
    bad = sum(1 for lab in labels if lab["id"] in runs for kind in [lab["label"], *lab.get("also", [])]
              if kind in EXPECTED)
    print(f"looping/echo/cut_off flagged: {bad - len(missed)} of {bad} (bar: all)")
    for m in missed:
        print("  missed:", *m)
    print(f"fine answers flagged: {len(flagged_fine)} of {fine} (bar: <= 1 in 10)")
    for f in flagged_fine:
        print("  flagged:", *f)
    by_generation = [f for f in flagged_fine if set(f[1]) & GENERATION]
    print(f"  of which by a generation check (truncated, repetition, echo): {len(by_generation)}; "
          f"by the citation checks only (unsupported, weak): {len(flagged_fine) - len(by_generation)}")
    for model in sorted({r["id"].split(":")[0] for r in runs.values()}):
        firsts = sorted(r["first_text"] for r in runs.values()
                        if r["id"].split(":")[0] == model and r.get("first_text"))
        if firsts:
            print(f"{model}: time to the first answer text (s), {len(firsts)} runs: median "
                  f"{firsts[len(firsts) // 2]}, max {firsts[-1]}, min {firsts[0]}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--db")
    p.add_argument("--model")
    p.add_argument("--questions", default=str(ROOT / "bench" / "retrieval" / "fm4-25-11-questions.jsonl"))
    p.add_argument("--every", type=int, default=3)
    p.add_argument("--limit", type=int, default=30)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--ctx", type=int, default=4096)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--verify-every", type=int, default=0)
    p.add_argument("--no-expand", action="store_true", help="no book terms, no model rewrite (saves one model call)")
    p.add_argument("--topics")
    p.add_argument("--out")
    p.add_argument("--tag", help="a run's name after the model's in every id (a second run of the same model)")
    p.add_argument("--score", nargs="*")
    p.add_argument("--labels")
    p.add_argument("--recheck", action="store_true",
                   help="with --score: run today's health checks again on the saved raw replies")
    p.add_argument("--regrade", action="store_true",
                   help="with --score and --db: grade the saved answers' claims with today's grounding "
                   "(passages retrieved again with --k, no expansion, as the runs here were made)")
    args = p.parse_args()
    if args.score:
        score(args)
    else:
        Path(args.out).touch()
        run(args)


if __name__ == "__main__":
    main()
