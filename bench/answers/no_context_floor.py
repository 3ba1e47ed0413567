"""Calibrate ask's no-context floor: best dense cosine of on-topic questions vs off-topic ones.

    python bench/answers/no_context_floor.py --db FM.db [--questions bench/retrieval/fm4-25-11-questions.jsonl]

On-topic: the question set of the book. Off-topic: OFF_TOPIC below (questions no first-aid manual
answers). Prints the distributions and how many of each side a floor would misjudge.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

OFF_TOPIC = [
    "what is the capital of France?", "how do I bake sourdough bread?", "who won the 1998 world cup?",
    "how do I change a car tyre?", "what is the best programming language for beginners?",
    "how does a mortgage work?", "what is the plot of Hamlet?", "how to train a puppy to sit",
    "what is the speed of light?", "how do I invest in index funds?", "when was the Eiffel Tower built?",
    "how do I knit a scarf?", "what is quantum entanglement?", "how to grow tomatoes on a balcony",
    "what are the rules of chess castling?", "how do I write a cover letter?",
    "what is the tallest mountain in Africa?", "how do solar panels make electricity?",
    "how do I make cold brew coffee?", "what does a database index do?",
]


def best_cosine(conn, embedder, question: str) -> float:
    from ragcli.search.pipeline import SearchOptions, search

    hits = search(conn, embedder, question, SearchOptions(mode="dense", k=8)).hits
    return max((h.dense_score for h in hits if h.dense_score is not None), default=0.0)


def main() -> int:
    from ragcli.store import db
    from ragcli.models import embed

    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--questions", default=str(ROOT / "bench" / "retrieval" / "fm4-25-11-questions.jsonl"))
    args = ap.parse_args()
    conn = db.connect(Path(args.db), create=False)
    embedder = embed.get_embedder()
    on = [best_cosine(conn, embedder, json.loads(line)["question"])
          for line in open(args.questions, encoding="utf-8") if line.strip()]
    off = [best_cosine(conn, embedder, q) for q in OFF_TOPIC]
    from ragcli.search.pipeline import DENSE_FLOOR as floor
    print(f"on-topic  n={len(on)}  min {min(on):.3f}  median {sorted(on)[len(on)//2]:.3f}  "
          f"below floor {sum(c < floor for c in on)}")
    print(f"off-topic n={len(off)} max {max(off):.3f}  median {sorted(off)[len(off)//2]:.3f}  "
          f"at or above floor {sum(c >= floor for c in off)}")
    print(f"floor {floor}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
