"""Grounding check of `ask` over a question set: every citation in every answer must map to a listed
source (zero exceptions), with no model (extractive) and with a real llama.cpp model.

    python bench/answers/ask_grounding.py --db CORPUS.db --questions bench/retrieval/fm4-25-11-questions.jsonl \
        [--model F.gguf | --model http://127.0.0.1:8080/v1 | --tiny] [--limit N | --spread N]

--tiny writes the random-weight test model (tests/tinymodel.py) and constrains its answers with a
grammar that mixes words with citation-like marks, valid and invalid ([S1]..[S19], [F3], (p. 45), [7],
[Source 2]): a random model then cites at random, which is the adversarial case for the validator.
Prints counts, statuses, and the median time split of one ask.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

CITEY = r'''root ::= sentence sentence sentence
sentence ::= word " " cite (" " (word | cite)){2,6} "." " "
word ::= [a-z]{2,6}
cite ::= "[S" [1-9] "]" | "[S1" [0-9] "]" | "[F" [1-5] "]" | "(p. " [1-9] [0-9]? ")" | "[" [1-9] "]" | "[Source " [1-9] "]" | "[S" [1-9] ", S" [1-9] [0-9]? "]"
'''
MARK = re.compile(r"\[[^\]]*\]|\([^)]*\)|【[^】]*】")


def invalid_marks(answer: str, labels: set[str]) -> list[str]:
    """Every bracketed mark left in the answer that is not exactly a given label."""
    bad = []
    for m in MARK.findall(answer):
        inner = m.strip("[]()【】")
        if re.fullmatch(r"[SF]\d+", inner) and inner in labels:
            continue
        looks_cited = r"\b(?:[SFsf]\s*\d+|p\.|pp\.|page|source|ref)\b"
        if m[0] == "(":  # "(2)" list numbers and "(Figure 2-35)" in quoted book text are not citations
            looks_cited = r"\b(?:[SFsf]\s*\d+|p\.|pp\.|source)\b"
        elif m[0] == "[":
            looks_cited += r"|^\s*\d+\s*$"
        if re.search(looks_cited, inner, re.I):
            bad.append(m)
    return bad


def run(args) -> dict:
    from ragcli import ask
    from ragcli.store import db
    from ragcli.models import embed
    from ragcli.models.chat import Grammar
    from ragcli.config import model_settings
    from ragcli.models.factory import from_settings, load_model

    conn = db.connect(Path(args.db), create=False)
    embedder = embed.get_embedder()
    questions = [json.loads(line) for line in open(args.questions, encoding="utf-8") if line.strip()]
    questions = questions[: args.limit] if args.limit else questions
    if args.spread and args.spread < len(questions):  # N questions spread evenly over the file
        questions = [questions[i * len(questions) // args.spread] for i in range(args.spread)]
    model, grammar = None, None
    if args.tiny:
        sys.path.insert(0, str(ROOT / "tests"))
        from tinymodel import write_tiny_gguf

        path = write_tiny_gguf(Path(tempfile.mkdtemp()) / "tiny.gguf")
        model, grammar = load_model(path), Grammar(CITEY)
    elif args.model:  # a GGUF run in process, or a server URL (as `ragcli ask --model` takes them)
        model = from_settings(model_settings(path=args.model, n_ctx=args.ctx or None, threads=args.threads))
    stats = {"questions": 0, "status": {}, "citations": 0, "removed": 0, "invalid_in_output": 0,
             "uncited_labels_listed": 0, "timings": {}}
    for q in questions:
        t0 = time.perf_counter()
        opts = ask.AskOptions(book_ids=[args.book] if args.book else None, grammar=grammar,
                              max_tokens=200, evidence=True)  # every answer's claims assessed
        answer = ask.ask(conn, embedder, q["question"], model, opts)  # as `ragcli ask` does
        elapsed = time.perf_counter() - t0
        print(f"{q.get('id')}: {answer.status}, {elapsed:.1f} s, prompt {answer.timings.get('prompt_tokens')} tokens "
              f"({answer.timings.get('prompt_cached', 'cache not reported')} cached), "
              f"first token {answer.timings.get('first_token')}", file=sys.stderr, flush=True)
        if args.answers:  # every answer, to read
            with open(args.answers, "a", encoding="utf-8") as f:
                f.write(json.dumps({"id": q.get("id"), "question": q["question"], "status": answer.status,
                                    "rewrite": answer.expanded_query, "answer": answer.answer,
                                    "citations": answer.citations, "seconds": round(elapsed, 1),
                                    "timings": answer.timings}) + "\n")
        labels = {s.label for s in answer.sources}
        stats["questions"] += 1
        stats["status"][answer.status] = stats["status"].get(answer.status, 0) + 1
        stats["citations"] += len(answer.citations)
        stats["removed"] += len(answer.removed_citations)
        bad = invalid_marks(answer.answer, labels)
        bad += [c for c in answer.citations if c not in labels]
        if bad:
            print(f"INVALID in {q.get('id')}: {bad}: {answer.answer[:200]}", file=sys.stderr)
        stats["invalid_in_output"] += len(bad)
        claims = answer.timings.get("claims", 0.0)
        split = dict(answer.timings, total=elapsed - claims, claims=claims)  # total: without claims
        for key, value in split.items():
            if isinstance(value, (int, float)):
                stats["timings"].setdefault(key, []).append(value)
        if args.out:  # the figures so far, so that a run stopped at a deadline still reports
            Path(args.out).write_text(json.dumps(_medians(stats), indent=2))
    return _medians(stats)


def _medians(stats: dict) -> dict:
    return dict(stats, timings={k: round(statistics.median(v), 4) for k, v in stats["timings"].items()})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--questions", default=str(ROOT / "bench" / "retrieval" / "fm4-25-11-questions.jsonl"))
    ap.add_argument("--model")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--ctx", type=int, default=0)
    ap.add_argument("--book")
    ap.add_argument("--limit", type=int, default=0, help="the first N questions")
    ap.add_argument("--spread", type=int, default=0, help="N questions spread evenly over the file")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (a GGUF in process)")
    ap.add_argument("--out", help="write the figures so far here after every question")
    ap.add_argument("--answers", help="append every answer (JSON lines) here")
    args = ap.parse_args()
    stats = run(args)
    print(json.dumps(stats, indent=2))
    return 1 if stats["invalid_in_output"] else 0


if __name__ == "__main__":
    sys.exit(main())
