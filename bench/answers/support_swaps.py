"""Ticks on the labelled answer runs: does a sentence shown `supported` say what its quote says?

    python bench/answers/support_swaps.py --set fm.db:bench/answers/labels/fm44-s14-run.jsonl [--set ...] --dump NEW.jsonl
    python bench/answers/support_swaps.py --set ... --labels bench/answers/labels/support-ticks.jsonl

Each answer a run showed (answered, incomplete, extractive) is graded again by today's code
(`grounding.score`, the real embedding model) against the passages its sources name (`#id` in the run
record, read from the corpus the run was made on; a context block is taken as its first passage). Every
sentence graded `supported` is a tick: the pair (sentence, quote) the reader sees as
`✓ supported` / `↳ "quote"`.

`--dump` writes the ticks no labels file holds yet, one JSON line each, for reading and labelling:
`label` "same" (the quote says what the sentence says) or "differs" (a noun, subject, object, drug,
number or predicate swapped against the quote, or a claim the quote does not make), with `why`. A
sentence whose words are the quote's, in order (a verbatim copy or a cut of it), is labelled "same"
by the script (`why` says so); every other pair is read.

`--labels` scores: of the labelled ticks, how many "differs" pairs today's code still ticks (wrong
sentences shown ✓) and how many "same" pairs it no longer ticks (right sentences demoted), per set and
in all, counting each distinct pair once. Run it before and after a change to the scorer; the labels are
made on the ticks of the code before the change, so a pair the new code ticks that no label holds is
counted apart (`unlabelled ticks`).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sqlite3
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ragcli.answer import grounding  # noqa: E402
from ragcli.types import Hit, Source  # noqa: E402

SHOWN = ("answered", "incomplete", "extractive")


def key(claim: str, quote: str) -> str:
    return hashlib.sha1(f"{claim}\n{quote}".encode("utf-8")).hexdigest()[:12]


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def verbatim(claim: str, quote: str) -> bool:
    """The sentence's words are the quote's, in order (a copy or a cut of it)."""
    c = _words(claim)
    return bool(c) and f" {c} " in f" {_words(quote)} "


def sources_of(conn: sqlite3.Connection, row: dict) -> list[Source]:
    out = []
    for s in row["sources"]:
        if "#" not in s:
            continue
        label, pid = s.split()[0], int(s.rsplit("#", 1)[1])
        r = conn.execute("SELECT kind, book_id, section_path, page_start, page_end, text FROM passages "
                         "WHERE id = ?", (pid,)).fetchone()
        if r is None:
            continue
        page = s.split()[1][2:] if s.split()[1].startswith("p.") else str(r[3])
        hit = Hit(passage_id=pid, kind=r[0], book_id=r[1], book_title="", section_path=json.loads(r[2]),
                  page_start=r[3], page_end=r[4], page_label=page, text=r[5])
        out.append(Source(label=label, hit=hit))
    return out


def ticks(spec: str, embedder) -> list[dict]:
    """The (sentence, quote) pairs today's code ticks in one run's shown answers."""
    db, run = spec.split(":")
    conn = sqlite3.connect(db)
    out = []
    for line in open(run, encoding="utf-8"):
        if not line.strip():
            continue
        r = json.loads(line)
        x = r.get("ragcli") or {}
        if x.get("status") not in SHOWN or not x.get("answer"):
            continue
        sources = sources_of(conn, x)
        for c in grounding.score(x["answer"], sources, embedder):
            if c.support == "supported" and c.evidence is not None:
                out.append({"key": key(c.text, c.evidence.quote), "set": Path(run).stem, "id": r["id"],
                            "claim": c.text, "quote": c.evidence.quote, "score": c.score})
    return out


def load_labels(path: Path) -> dict[str, dict]:
    if not path.exists():
        return {}
    return {r["key"]: r for r in (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                                  if line.strip())}


def score(found: list[dict], labels: dict[str, dict], sets: list[str]) -> None:
    ticked = {t["key"] for t in found}
    print("| set | labelled ticks (distinct) | differs | differs still ticked | same | same demoted | unlabelled ticks |")
    print("|---|---|---|---|---|---|---|")
    by_set: dict[str, set] = {}
    for lab in labels.values():
        for s in lab.get("sets", []):
            by_set.setdefault(s, set()).add(lab["key"])
    rows = [(s, by_set.get(s, set()), {t["key"] for t in found if t["set"] == s}) for s in sets]
    scored = set().union(*(by_set.get(s, set()) for s in sets))  # the labels of the runs scored here
    rows.append(("all", scored, ticked))
    labels = {k: v for k, v in labels.items() if k in scored}
    for name, keys, now in rows:
        n = Counter(labels[k]["label"] for k in keys)
        wrong_kept = sum(1 for k in keys if labels[k]["label"] == "differs" and k in now)
        right_lost = sum(1 for k in keys if labels[k]["label"] == "same" and k not in now)
        unl = len(now - set(labels))
        print(f"| {name} | {len(keys)} | {n['differs']} | {wrong_kept} | {n['same']} | {right_lost} | {unl} |")
    for k, lab in sorted(labels.items(), key=lambda kv: kv[1]["label"]):
        if lab["label"] == "differs" and k not in ticked:
            print(f"caught:  {lab['claim'][:90]!r}")
        if lab["label"] == "same" and k not in ticked:
            print(f"demoted: {lab['claim'][:90]!r} / {lab['quote'][:80]!r}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", action="append", required=True, help="DB:RUN.jsonl")
    ap.add_argument("--labels", type=Path, default=ROOT / "bench" / "answers" / "labels" / "support-ticks.jsonl")
    ap.add_argument("--dump", type=Path, help="write the ticks no label holds yet (verbatim ones labelled)")
    args = ap.parse_args()
    from ragcli.models import embed

    embedder = embed.get_embedder()
    found = [t for spec in args.set for t in ticks(spec, embedder)]
    labels = load_labels(args.labels)
    if args.dump:
        new: dict[str, dict] = {}
        for t in found:
            if t["key"] in labels:
                continue
            row = new.setdefault(t["key"], {"key": t["key"], "claim": t["claim"], "quote": t["quote"],
                                            "sets": [], "label": None, "why": None})
            if t["set"] not in row["sets"]:
                row["sets"].append(t["set"])
            if verbatim(t["claim"], t["quote"]):
                row["label"], row["why"] = "same", "verbatim: the sentence's words are the quote's, in order"
        with open(args.dump, "w", encoding="utf-8") as fh:
            for row in new.values():
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        todo = sum(1 for r in new.values() if r["label"] is None)
        print(f"{len(found)} ticks, {len(new)} distinct new pairs, {todo} to read; wrote {args.dump}")
        return 0
    score(found, labels, [Path(s.split(':')[1]).stem for s in args.set])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
