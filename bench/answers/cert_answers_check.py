"""Check bench/answers/cert-answers.jsonl (the held-out answer set) against the FEMA CERT Basic Training PDF.

Usage:
    python bench/answers/cert_answers_check.py PATH/TO/fema-cert-basic-training.pdf

It prints ids and counts only, never the questions (the set is held out: nobody tunes on it).
It verifies, and exits with 1 if any check fails:
  * every record is well formed: id (unique), question, answerable, book "fema-cert-basic-training";
    answerable ones have pages, 2-4 key_phrases, facts, harmful_if and kind; unanswerable ones have
    why_not and checked_absent;
  * pages are 1-based PDF page indexes (pymupdf's doc[p-1]) inside the document, sorted, unique;
  * each key phrase (alternatives split on "|") has an alternative on the question's pages, matched as
    bench/answers/bench_answers.py matches answers (its normalise: case, punctuation, number words, plural and
    -ed/-ing endings), that the question itself does not contain;
  * every listed page holds at least one key-phrase alternative (no page is in the set without text);
  * every term of checked_absent occurs nowhere in the manual: a case-insensitive whole-word search of
    page.get_text() over all pages, whitespace and line breaks collapsed;
  * at least 40 answerable and 15 unanswerable questions.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "answers"))

from common import normalise  # noqa: E402  (the scorer's own matching, so the check agrees with it)

ANSWERS = ROOT / "bench" / "answers" / "cert-answers.jsonl"
BOOK = "fema-cert-basic-training"
KINDS = {"steps", "signs", "amount", "why", "yes_no"}
MIN_ANSWERABLE, MIN_UNANSWERABLE = 40, 15


def page_texts(pdf: Path) -> list[str]:
    import pymupdf

    with pymupdf.open(pdf) as doc:
        return [page.get_text() for page in doc]


def absent_hits(term: str, flat: list[str]) -> list[int]:
    """1-based pages where the term occurs as whole words (case-insensitive)."""
    words = [re.escape(w) for w in term.split()]
    pattern = re.compile(r"(?<![A-Za-z0-9])" + r"\s+".join(words) + r"(?![A-Za-z0-9])", re.IGNORECASE)
    return [i + 1 for i, text in enumerate(flat) if pattern.search(text)]


def check(rows: list[dict], texts: list[str]) -> list[str]:
    problems: list[str] = []
    flat = [" ".join(t.split()) for t in texts]
    norm = [normalise(t) for t in texts]
    seen: set[str] = set()
    for row in rows:
        rid = row.get("id", "?")
        if rid in seen:
            problems.append(f"{rid}: duplicate id")
        seen.add(rid)
        if not isinstance(row.get("question"), str) or not row["question"].strip():
            problems.append(f"{rid}: no question")
        if row.get("book") != BOOK:
            problems.append(f"{rid}: book is {row.get('book')!r}")
        if row.get("answerable") is True:
            problems += check_answerable(row, norm)
        elif row.get("answerable") is False:
            if not row.get("why_not"):
                problems.append(f"{rid}: no why_not")
            terms = row.get("checked_absent") or []
            if len(terms) < 3:
                problems.append(f"{rid}: fewer than 3 checked_absent terms")
            for term in terms:
                hits = absent_hits(term, flat)
                if hits:
                    problems.append(f"{rid}: checked_absent term {term!r} found on pages {hits}")
        else:
            problems.append(f"{rid}: answerable is not true/false")
    answerable = sum(r.get("answerable") is True for r in rows)
    unanswerable = sum(r.get("answerable") is False for r in rows)
    if answerable < MIN_ANSWERABLE:
        problems.append(f"only {answerable} answerable questions (need {MIN_ANSWERABLE})")
    if unanswerable < MIN_UNANSWERABLE:
        problems.append(f"only {unanswerable} unanswerable questions (need {MIN_UNANSWERABLE})")
    return problems


def check_answerable(row: dict, norm: list[str]) -> list[str]:
    rid, problems = row["id"], []
    pages = row.get("pages") or []
    if not pages or pages != sorted(set(pages)) or not all(isinstance(p, int) and 1 <= p <= len(norm) for p in pages):
        return [f"{rid}: pages {pages} are not sorted unique 1-based pages of a {len(norm)}-page PDF"]
    phrases = row.get("key_phrases") or []
    if not 2 <= len(phrases) <= 4 and not (len(phrases) == 1 and row.get("kind") == "amount"):
        problems.append(f"{rid}: {len(phrases)} key phrases (2-4 expected; 1 only for a single amount)")
    if not row.get("facts") or not all(isinstance(f, str) and f.strip() for f in row["facts"]):
        problems.append(f"{rid}: no facts")
    if not isinstance(row.get("harmful_if"), list):
        problems.append(f"{rid}: harmful_if is not a list")
    if row.get("kind") not in KINDS:
        problems.append(f"{rid}: kind {row.get('kind')!r} not in {sorted(KINDS)}")
    asked = normalise(row.get("question", ""))
    on_page = {p: False for p in pages}
    for phrase in phrases:
        usable = [normalise(a) for a in phrase.split("|") if normalise(a) not in asked]
        if not usable:
            problems.append(f"{rid}: every alternative of {phrase!r} is in the question")
            continue
        found = [p for p in pages if any(alt in norm[p - 1] for alt in usable)]
        if not found:
            problems.append(f"{rid}: key phrase {phrase!r} is on none of pages {pages}")
        for p in found:
            on_page[p] = True
    for p, ok in on_page.items():
        if not ok:
            problems.append(f"{rid}: page {p} holds none of the key phrases")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pdf", type=Path)
    ap.add_argument("--answers", type=Path, default=ANSWERS)
    args = ap.parse_args()
    rows = [json.loads(line) for line in args.answers.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = page_texts(args.pdf)
    problems = check(rows, texts)
    kinds = Counter(r.get("kind") for r in rows if r.get("answerable") is True)
    answerable = [r for r in rows if r.get("answerable") is True]
    print(f"{len(answerable)} answerable ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}), "
          f"{len(rows) - len(answerable)} unanswerable; {len(texts)} PDF pages; "
          f"{sum(len(r['pages']) for r in answerable)} answer pages "
          f"({len({p for r in answerable for p in r['pages']})} distinct); "
          f"{sum(len(r.get('checked_absent', [])) for r in rows)} absence terms searched")
    for problem in problems:
        print("PROBLEM", problem)
    print("ok" if not problems else f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
