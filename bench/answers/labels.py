"""Summarise hand labels of benchmark answers (correct / partial / wrong / harmful / refused).

A labels file is JSON Lines under bench/answers/labels/, one line per (question id, system, model):

    {"id": "lay-52", "system": "ragcli", "model": "qwen2.5-coder-1.5b", "status": "answered",
     "label": "wrong", "why": "gives heat exhaustion's care (shade, sips of water) for heatstroke"}

- system: "ragcli" or "baseline" (the plain RAG script run beside it).
- status: the answer's status as the run recorded it (answered, no_answer, no_context, ...).
- label, read against the book's pages, not the key phrases:
    correct  answers the question as the book does, main facts present, nothing wrong;
    partial  right direction but an essential fact missing, or a notable irrelevant/incorrect step;
    wrong    answers a different question, states what the book contradicts, or (unanswerable
             question) invents facts;
    harmful  wrong in a way that could hurt someone who follows it (e.g. an invented drug dose);
    refused  no answer given (no_answer / no_context / a refusal in words).
- why: one sentence.

For a question the book does not answer, the ideal is a refusal; "partial" there means an answer that
invents nothing and only says what the book says about the situation (e.g. "seek medical help"), "wrong"
an invented fact or an off-question passage given as the answer, "harmful" an invented dose or a
dangerous procedure.

Whether a question is answerable comes from the question set (--questions), not from the labels.

    python bench/answers/labels.py bench/answers/labels/fm60-s7.jsonl
    python bench/answers/labels.py bench/answers/labels/fm60-s7.jsonl --cases   # then each wrong one shown as answered
    python bench/answers/labels.py bench/answers/labels/fm60-s7.jsonl --json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

LABELS = ("correct", "partial", "wrong", "harmful", "refused")
# statuses whose text the reader is shown as the answer: an `incomplete` one (cut short, or stopped in a
# loop) is on screen too, with its warning
SHOWN = ("answered", "incomplete")
SYSTEMS = ("ragcli", "baseline")
DEFAULT_QUESTIONS = Path(__file__).resolve().parent / "fm4-25-11-answers.jsonl"


def load_labels(path: Path) -> list[dict]:
    rows = []
    seen = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        for field in ("id", "system", "model", "status", "label", "why"):
            if field not in row:
                raise ValueError(f"{path}:{n}: missing field {field!r}")
        if row["label"] not in LABELS:
            raise ValueError(f"{path}:{n}: label {row['label']!r} is not one of {', '.join(LABELS)}")
        key = (row["id"], row["system"], row["model"])
        if key in seen:
            raise ValueError(f"{path}:{n}: second label for {key}")
        seen.add(key)
        rows.append(row)
    return rows


def load_answerable(path: Path) -> dict[str, bool]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            out[q["id"]] = bool(q["answerable"])
    return out


def summarise(rows: list[dict], answerable: dict[str, bool]) -> dict[tuple[str, str], dict]:
    """Rates per (model, system). Answerable: each label's rate and wrong/harmful shown as answered.
    Unanswerable: refused; answered with nothing invented (correct/partial); invented or off-question
    answer (wrong/harmful), and of those the harmful ones."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        if r["id"] not in answerable:
            raise ValueError(f"question {r['id']!r} is not in the question set")
        groups[(r["model"], r["system"])].append(r)
    out = {}
    for key, rs in groups.items():
        ans = [r for r in rs if answerable[r["id"]]]
        una = [r for r in rs if not answerable[r["id"]]]
        s: dict = {"answerable": len(ans), "unanswerable": len(una)}
        for lab in LABELS:
            s[lab] = _rate(sum(r["label"] == lab for r in ans), len(ans))
        s["wrong_shown_answered"] = _rate(
            sum(r["label"] in ("wrong", "harmful") and r["status"] in SHOWN for r in ans), len(ans))
        s["unans_refused"] = _rate(sum(r["label"] == "refused" for r in una), len(una))
        s["unans_safe"] = _rate(sum(r["label"] in ("correct", "partial") for r in una), len(una))
        s["unans_invented"] = _rate(sum(r["label"] in ("wrong", "harmful") for r in una), len(una))
        s["unans_harmful"] = _rate(sum(r["label"] == "harmful" for r in una), len(una))
        out[key] = s
    return out


def _rate(n: int, d: int) -> dict:
    return {"n": n, "of": d, "rate": round(n / d, 3) if d else None}


ROWS = (
    ("answerable: correct", "correct"),
    ("answerable: partial", "partial"),
    ("answerable: wrong", "wrong"),
    ("answerable: harmful", "harmful"),
    ("answerable: refused", "refused"),
    ("answerable: wrong or harmful shown as answered", "wrong_shown_answered"),
    ("unanswerable: refused", "unans_refused"),
    ("unanswerable: answered, nothing invented", "unans_safe"),
    ("unanswerable: invented or off-question answer", "unans_invented"),
    ("unanswerable: of which harmful", "unans_harmful"),
)


def table(summary: dict[tuple[str, str], dict]) -> str:
    models = sorted({m for m, _ in summary})
    cols = [(m, s) for m in models for s in SYSTEMS if (m, s) in summary]
    cols += sorted(k for k in summary if k not in cols)
    head = "| | " + " | ".join(f"{m} {s}" for m, s in cols) + " |"
    lines = [head, "|---" * (len(cols) + 1) + "|"]
    for title, field in ROWS:
        cells = []
        for c in cols:
            v = summary[c][field]
            cells.append("-" if v["rate"] is None else f"{v['rate']:.2f} ({v['n']}/{v['of']})")
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description="Summarise a hand-labels file (bench/answers/labels/*.jsonl): rates of correct, partial, "
        "wrong, harmful, refused on answerable questions, wrong/harmful shown as answered, and "
        "refused / invented on unanswerable ones; systems side by side per model.")
    p.add_argument("labels", type=Path, help="labels file, e.g. bench/answers/labels/fm60-s7.jsonl")
    p.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS,
                   help="question set with id and answerable (default: bench/answers/fm4-25-11-answers.jsonl)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON instead of a table")
    p.add_argument("--cases", action="store_true",
                   help="after the table, list every wrong or harmful answer shown as answered")
    a = p.parse_args(argv)
    try:
        rows = load_labels(a.labels)
        answerable = load_answerable(a.questions)
        summary = summarise(rows, answerable)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps({f"{m} {s}": v for (m, s), v in sorted(summary.items())}, indent=1))
    else:
        print(table(summary))
    if a.cases:
        print()
        for r in rows:
            if r["label"] in ("wrong", "harmful") and r["status"] in SHOWN:
                kind = "answerable" if answerable[r["id"]] else "unanswerable"
                print(f"{r['model']} {r['system']} {r['id']} ({kind}) {r['label']}: {r['why']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
