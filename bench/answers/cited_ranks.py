"""Which of the answer prompt's passages the correct answers cite, and what a gate on the question's cosine
to each passage would drop (issue 49: can the prompt lose passages without losing answers?).

For each answerable question of an answer set: ask's blocks as ask lays them out (the question as the books
write it, ask's search, context.build), each block's rank, its best passage's cosine to the question, whether
it is on the answer set's pages, and whether a correct answer of the labelled run cites it (the run's
sources name passage ids). Then, per gate (the best K blocks always kept, the others kept when their
cosine is within D of the best): the share of the passages' text kept (median over questions), the correct
answers that lose a cited passage, and the questions that lose every passage on their answer pages.

    python bench/answers/cited_ranks.py --set fm.db:fm4-25-11-answers.jsonl:fm44-s14 \
        --set cert.db:cert-answers.jsonl:cert-s14 [--keep 2,3] [--within 0.03,0.05,0.07,0.1,0.15]

A set is DB:ANSWERS:LABELS; ANSWERS is under bench/answers/, LABELS names bench/answers/labels/LABELS.jsonl
and its LABELS*-run.jsonl runs.
"""
from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
HERE = ROOT / "bench" / "answers"


def cited_ids(labels: str) -> tuple[dict, dict]:
    """({question id: its label}, {question id: passage ids its answer cites}) of a labelled run."""
    grades, cited = {}, {}
    for line in open(HERE / "labels" / f"{labels}.jsonl", encoding="utf-8"):
        r = json.loads(line)
        if r.get("system", "ragcli") == "ragcli":
            grades[r["id"]] = r["label"]
    for run in sorted((HERE / "labels").glob(f"{labels}*-run.jsonl")):
        if run.name != f"{labels}-run.jsonl" and not run.name.startswith(f"{labels}-o"):
            continue  # another configuration's run (steps, floor, ...)
        for line in open(run, encoding="utf-8"):
            r = json.loads(line)
            rc = r.get("ragcli") or {}
            ids = {s.split()[0]: int(s.rsplit("#", 1)[1]) for s in rc.get("sources", []) if "#" in s}
            cited[r["id"]] = [ids[c] for c in rc.get("citations", []) if c in ids]
    return grades, cited


def blocks_of(conn, embedder, question: str, pages: list[int], cited: list[int]) -> list[dict]:
    from ragcli import ask
    from ragcli.answer import book_words, context
    from ragcli.ingest.kinds import NOT_EXPOSITION
    from ragcli.search.pipeline import SearchOptions, mode_for, search
    from ragcli.store import vectors

    asked = ask.as_books_write(conn, embedder, question)
    opts = SearchOptions(mode=mode_for(True, False), k=10, check_language=True, rerank_depth=20,
                         skip_kinds=NOT_EXPOSITION)
    blocks, _ = context.build(search(conn, embedder, asked, opts).hits, lambda h: ask._adjacent(conn, h))
    q = book_words.unit(embedder.embed([asked])[0])
    held = [b.passages or [b.hit] for b in blocks]
    vecs = vectors.stored_vectors(conn, "passage_vec", [p.passage_id for ps in held for p in ps])
    out = []
    for rank, (b, ps) in enumerate(zip(blocks, held), 1):
        cos = [float(vecs[p.passage_id] @ q) for p in ps if p.passage_id in vecs]
        on = set()
        for p in ps:
            on |= set(range(p.page_start, p.page_end + 1))
        out.append({"rank": rank, "cos": max(cos) if cos else 0.0, "tokens": context.estimate_tokens(b.hit.text),
                    "page": bool(on & set(pages)), "cited": bool({p.passage_id for p in ps} & set(cited))})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", action="append", required=True, help="DB:ANSWERS:LABELS")
    ap.add_argument("--keep", default="2,3", help="the best K blocks always kept")
    ap.add_argument("--within", default="0.03,0.05,0.07,0.1,0.15", help="cosine distance from the best kept")
    args = ap.parse_args()

    from ragcli.models import embed
    from ragcli.store import db

    embedder = embed.MemoEmbedder(embed.get_embedder())
    books = {}
    for spec in args.set:
        path, answers, labels = spec.split(":")
        conn = db.connect(Path(path), create=False)
        grades, cited = cited_ids(labels)
        rows = []
        for line in open(HERE / answers, encoding="utf-8"):
            q = json.loads(line) if line.strip() else None
            if q and q["answerable"]:
                rows.append({"label": grades.get(q["id"]),
                             "blocks": blocks_of(conn, embedder, q["question"], q.get("pages") or [],
                                                 cited.get(q["id"], []))})
        conn.close()
        books[labels] = rows
        ranks = collections.Counter(b["rank"] for r in rows if r["label"] == "correct" for b in r["blocks"] if b["cited"])
        correct = sum(r["label"] == "correct" for r in rows)
        late = sum(any(b["cited"] and b["rank"] >= 4 for b in r["blocks"]) for r in rows if r["label"] == "correct")
        print(f"{labels}: {len(rows)} answerable, {correct} correct; cited ranks {sorted(ranks.items())}; "
              f"correct answers citing rank 4-6: {late}")
    print("\n| keep | within | " + " | ".join(f"{n}: text kept / correct losing a cited passage / "
                                              f"answer pages all dropped" for n in books) + " |")
    print("|---|---|" + "---|" * len(books))
    for keep in (int(k) for k in args.keep.split(",")):
        for within in (float(w) for w in args.within.split(",")):
            cells = []
            for rows in books.values():
                kept_share, lost, pages = [], 0, 0
                for r in rows:
                    top = max(b["cos"] for b in r["blocks"])
                    kept = [b["rank"] <= keep or b["cos"] >= top - within for b in r["blocks"]]
                    kept_share.append(sum(b["tokens"] for b, k in zip(r["blocks"], kept) if k)
                                      / sum(b["tokens"] for b in r["blocks"]))
                    lost += r["label"] == "correct" and any(b["cited"] and not k for b, k in zip(r["blocks"], kept))
                    pages += (any(b["page"] for b in r["blocks"])
                              and not any(b["page"] and k for b, k in zip(r["blocks"], kept)))
                cells.append(f"{statistics.median(kept_share):.2f} / {lost} / {pages}")
            print(f"| {keep} | {within} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
