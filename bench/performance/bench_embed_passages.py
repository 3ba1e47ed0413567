"""Embedding throughput on a corpus's own passages: sentence-transformers fp32 vs ragcli's ONNX
embedders, interleaved round by round in one run.

    python bench/performance/bench_embed_passages.py --db CORPUS.db [--rounds 3]

Embeds exactly what `ragcli ingest` embeds (book title — section path + passage text) for every
passage in the corpus file, with sentence-transformers (batch 32, the baseline of issue 6, bar 3),
the fp32 ONNX export (queries) and the int8 export (ingest). Prints passages/s and speed-ups.
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


def main() -> int:
    from ragcli.store import db
    from ragcli.models import embed
    from ragcli.types import Passage

    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    conn = db.connect(Path(args.db), create=False)
    rows = conn.execute("SELECT b.title, p.section_path, p.text FROM passages p "
                        "JOIN books b ON b.id = p.book_id").fetchall()
    texts = [Passage(t, json.loads(sp), 1, 1).embed_text(bt) for bt, sp, t in rows]
    embedders = {"sentence-transformers fp32": embed.SentenceTransformerEmbedder(),
                 "onnx fp32 (queries)": embed.get_embedder(),
                 "onnx int8 (ingest)": embed.get_embedder(bulk=True)}
    times: dict[str, list[float]] = {name: [] for name in embedders}
    for _ in range(args.rounds):
        for name, e in embedders.items():
            t = time.perf_counter()
            e.embed(texts)
            times[name].append(time.perf_counter() - t)
    base = statistics.median(times["sentence-transformers fp32"])
    print(f"{len(texts)} passages from {args.db}, {args.rounds} rounds (min / median / max s)\n")
    print("| embedder | seconds | passages/s | vs sentence-transformers |")
    print("|---|---|---|---|")
    for name, v in times.items():
        med = statistics.median(v)
        print(f"| {name} | {min(v):.2f} / {med:.2f} / {max(v):.2f} | {len(texts) / med:.1f} | {base / med:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
