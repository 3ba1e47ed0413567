"""In-process ingest: parsing in worker processes vs today's one-file-after-another, in one run.

    git archive BEFORE ragcli | tar -x -C /tmp/today     # the code before the change
    nice -n 10 python bench/performance/bench_ingest_workers.py --pdfs ../shared/data/pdfs --today /tmp/today \
        [--rounds 2] [--workers 0,2]

Each mode is `python -m ragcli ingest FOLDER` into a new corpus with the bundled embedding model
(MiniLM, onnx int8), timed over the whole process:
  today     the code at --today (before this change: files parsed, embedded and written one after
            another);
  wN        this tree with --workers N (files parsed in N processes while the previous book embeds);
  w0        this tree with --workers 0 (parsing in process: the new stage commits, no workers).
Rounds are interleaved so machine noise hits every mode alike. The corpora are checked to hold the
same passages (by text hash). Prints markdown.
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(tree: Path, folder: Path, db: Path, workers) -> float:
    env = {**os.environ, "RAGCLI_DB": str(db), "PYTHONPATH": str(tree)}
    cmd = [sys.executable, "-m", "ragcli", "ingest", str(folder), "--json"]
    if workers is not None:
        cmd += ["--workers", str(workers)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=str(tree))
    took = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(f"{cmd}: {done.stderr[-2000:]}")
    return took


def passages(db: Path) -> set:
    conn = sqlite3.connect(db)
    try:
        return set(conn.execute("SELECT book_id, text_hash FROM passages").fetchall())
    finally:
        conn.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pdfs", type=Path, required=True)
    ap.add_argument("--today", type=Path, default=Path(__file__).resolve().parents[2])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workers", default="0,2")
    ap.add_argument("--no-warm", action="store_true", help="the model cache is warm already")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-workers-"))
    folder = work / "pdfs"
    folder.mkdir()
    for pdf in sorted(args.pdfs.glob("*.pdf")):
        (folder / pdf.name).symlink_to(pdf.resolve())
    modes = [("today", args.today, None)] + [(f"w{n}", ROOT, int(n)) for n in args.workers.split(",")]
    if not args.no_warm:  # the ONNX export cache and the page cache, once
        run(ROOT, folder, work / "warm.db", 0)
    times: dict[str, list[float]] = {m: [] for m, _, _ in modes}
    for r in range(args.rounds):
        for mode, tree, workers in modes:
            db = work / f"{mode}-{r}.db"
            times[mode].append(run(tree, folder, db, workers))
            print(f"round {r + 1} {mode}: {times[mode][-1]:.1f} s", file=sys.stderr, flush=True)
    reference = passages(work / "today-0.db")
    same = {mode: passages(work / f"{mode}-0.db") == reference for mode, _, _ in modes}
    n = len(reference)
    base = statistics.median(times["today"])
    print(f"\n{len(list(folder.glob('*.pdf')))} PDFs, {n} passages, median of {args.rounds} rounds, "
          f"{os.cpu_count()} cores (shared)\n")
    print("| mode | seconds | passages/s | vs today | same passages |")
    print("|---|---:|---:|---:|---|")
    for mode, _, _ in modes:
        t = statistics.median(times[mode])
        print(f"| {mode} | {t:.1f} | {n / t:.0f} | {t / base:.2f}x | {'yes' if same[mode] else 'NO'} |")


if __name__ == "__main__":
    main()
