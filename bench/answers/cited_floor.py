"""The cited-passage floor (store/calibration.py's `cited_floor`): for every answer a labelled run showed,
the best cosine of the passages its factual sentences cite to the question, and what each floor would
withhold, by the answers' hand labels.

    python bench/answers/cited_floor.py --set fm.db:RUN.jsonl:LABELS.jsonl [--set ...] [--floors 0.35,0.40,...]

RUN is a bench_answers.py record file (ragcli's answers, their claims and sources with passage ids);
LABELS the hand labels of its answers (bench/answers/labels/, system ragcli). An answer the run did not show
(no_answer, no_context) is not counted. The floor is chosen on the tuning books' sets (FM 4-25.11,
ATP 6-22.5) and reported on the held-out one (CERT): docs/benchmarks.md.
"""
import argparse
import collections
import json
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ragcli.answer import book_words  # noqa: E402

SHOWN = ("answered", "incomplete", "unsupported")
BAD = ("wrong", "harmful")


def rows_of(db: str, run: str, labels: str, embedder) -> list[dict]:
    conn = sqlite3.connect(db)
    lab = {}
    for line in open(labels, encoding="utf-8"):
        if line.strip():
            r = json.loads(line)
            if r.get("system", "ragcli") == "ragcli":
                lab[r["id"]] = r["label"]
    out = []
    for line in open(run, encoding="utf-8"):
        if not line.strip():
            continue
        r = json.loads(line)
        x = r["ragcli"]
        if x["status"] not in SHOWN or r["id"] not in lab:
            continue
        ids = {s.split()[0]: int(s.rsplit("#", 1)[1]) for s in x["sources"]}
        cited = {c for d in x.get("claim_detail", []) if d.get("support") != "not_factual"
                 for c in d.get("citations", []) if c in ids}
        got = [conn.execute("SELECT text, section_path FROM passages WHERE id = ?", (ids[c],)).fetchone()
               for c in sorted(cited)]
        texts = [t for t, _ in got]
        if not texts:
            continue
        # the subject pass reads a passage after its innermost heading, as ask does (book_words.headed)
        headed = [f"{json.loads(p)[-1]}\n{t}" if p and json.loads(p) else t for t, p in got]
        out.append({"set": Path(run).stem, "id": r["id"], "answerable": r.get("answerable", True),
                    "label": lab[r["id"]], "cosine": float(book_words.cosines_to(r["question"], texts, embedder).max()),
                    "names_subject": book_words.names_subject(r["question"], headed, embedder),
                    "question": r["question"]})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", action="append", required=True, help="DB:RUN:LABELS")
    ap.add_argument("--floors", default="0.35,0.38,0.40,0.42,0.44,0.45,0.46,0.48,0.50")
    ap.add_argument("--list", action="store_true", help="every answer, lowest cosine first")
    args = ap.parse_args()
    from ragcli.models import embed

    embedder = embed.get_embedder()
    rows = [row for spec in args.set for row in rows_of(*spec.split(":"), embedder)]
    if args.list:
        for r in sorted(rows, key=lambda r: r["cosine"]):
            print(f"{r['cosine']:.3f} {r['label']:8} {r['id']} ({r['set']})"
                  f"{' names the subject' if r['names_subject'] else ''}: {r['question']}")
    shown = collections.Counter(r["label"] for r in rows)
    print(f"\n{len(rows)} answers shown: " + ", ".join(f"{k} {v}" for k, v in sorted(shown.items())))
    print("\n| floor | correct withheld | partial withheld | wrong or harmful withheld (unanswerable) |")
    print("|---|---|---|---|")
    for f in (float(x) for x in args.floors.split(",")):
        below = [r for r in rows if r["cosine"] < f]
        n = collections.Counter(r["label"] for r in below)
        bad = [r for r in below if r["label"] in BAD]
        print(f"| {f:.2f} | {n['correct']} | {n['partial']} | {len(bad)} "
              f"({sum(not r['answerable'] for r in bad)}) |")
    # the floor passed by a cited passage that names the question's subject (book_words.names_subject)
    print("\n| floor, unless a cited passage names the subject | correct withheld | partial withheld | wrong or harmful "
          "withheld (unanswerable) |")
    print("|---|---|---|---|")
    for f in (float(x) for x in args.floors.split(",")):
        below = [r for r in rows if r["cosine"] < f and not r["names_subject"]]
        n = collections.Counter(r["label"] for r in below)
        bad = [r for r in below if r["label"] in BAD]
        print(f"| {f:.2f} | {n['correct']} | {n['partial']} | {len(bad)} "
              f"({sum(not r['answerable'] for r in bad)}) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
