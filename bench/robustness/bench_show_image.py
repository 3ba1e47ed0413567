"""`ragcli show --image`: how much of a passage (and of a one-sentence quote) is found and highlighted
on its rendered page, and how long a render takes.

  nice -n 10 python bench/robustness/bench_show_image.py PDF... [--passages 150]
  e.g. corpus/cerebrovascular-neurosurgery-primer.pdf ../shared/data/pdfs/{malawi-quality-improvement-article,
       heart-failure-programmes-article,ace-inhibitors-article,fm4-25-11-first-aid}.pdf

Per book: passages sampled (seeded), share of their sentences found on the page (whole or by runs of
6 words), share of passages with every sentence found, share of quotes (one sentence of the passage)
found, median and 90th percentile seconds per render.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pdfs", nargs="+", type=Path)
    ap.add_argument("--passages", type=int, default=150, help="sampled per book")
    args = ap.parse_args()
    from ragcli.ingest import page_image, pipeline
    from ragcli.models import embed
    from ragcli.store import db, files
    from ragcli.text import sentences

    rng = random.Random(27)
    with tempfile.TemporaryDirectory(prefix="bench-image-") as tmp:
        conn = db.connect(Path(tmp) / "c.db")
        embedder = embed.get_embedder(bulk=True)
        report = {}
        for pdf in args.pdfs:
            result = pipeline.ingest_file(conn, pdf.resolve(), embedder)
            ids = [i for i in files.passage_ids(conn, result.book_id)]
            sample = rng.sample(ids, min(args.passages, len(ids)))
            found = wanted = complete = quotes = quotes_found = 0
            seconds = []
            for pid in sample:
                hit = files.passage(conn, pid)
                t0 = time.perf_counter()
                img = page_image.render(hit.path, hit.page_start, hit.page_end, hit.text, Path(tmp) / "p.png")
                seconds.append(time.perf_counter() - t0)
                found, wanted = found + img.found, wanted + img.sentences
                complete += img.found == img.sentences
                candidates = [s for s in sentences(" ".join(hit.text.split())) if len(s.split()) >= 5]
                if candidates:
                    quotes += 1
                    q = page_image.render(hit.path, hit.page_start, hit.page_end, hit.text, Path(tmp) / "q.png",
                                          quote=rng.choice(candidates))
                    quotes_found += q.found
            seconds.sort()
            report[pdf.name] = {
                "passages": len(sample), "sentences": wanted,
                "sentences_found": round(found / max(1, wanted), 3),
                "passages_every_sentence_found": round(complete / max(1, len(sample)), 3),
                "quotes": quotes, "quotes_found": round(quotes_found / max(1, quotes), 3),
                "render_seconds_median": round(statistics.median(seconds), 3),
                "render_seconds_p90": round(seconds[int(len(seconds) * 0.9) - 1], 3),
            }
            print(json.dumps({pdf.name: report[pdf.name]}), flush=True)
        conn.close()


if __name__ == "__main__":
    main()
