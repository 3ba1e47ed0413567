"""A synthetic library of N passages ingested from JSONL in one run: time, peak memory, disk; and the
vector scan at 10M on synthetic codes.

    nice -n 10 python bench/performance/bench_library_1m.py ingest --out /tmp/lib1m --books 1000 --per-book 1000 [--workers 1]
    nice -n 10 python bench/performance/bench_library_1m.py scan --out /tmp/codes10m.db --rows 10000000 [--queries 5]

ingest: writes --books BEIR-style JSONL files of --per-book records each (60 words a record from a
Zipf vocabulary, one passage a record), then runs `ingest.run.ingest_run` over the folder in a
child process exactly as `ragcli ingest` does (parsing workers, stage commits, one writer), with a
synthetic embedder: 384-d unit vectors drawn from a seeded generator, so the bar measures ragcli and
the store, not a model (a model's cost is per passage and measured by bench_embed_server.py).
Reported: wall time, passages/s at each tenth of the run (is it linear?), peak RSS of the ingest
process and of its largest parsing worker (ru_maxrss, exact), disk per passage by table, and the
search latency on the result (dense, lexical).

scan: a corpus file holding only sign-bit code blocks for --rows synthetic 384-d vectors (8,192 rows
a block, as ragcli writes them), then the first two passes of the dense search over all of them
(hamming over every code, float query against the best PREFILTER rows' bits): the part of a vector
search that grows with the library. The third pass (exact rescoring of 400 candidates from float16
copies) reads a fixed number of rows and is measured at 1M by `ingest`.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

DIM = 384


class SyntheticEmbedder:
    """Unit vectors from a seeded generator: what a model returns, at no model's cost."""

    name, dim, multilingual = "synthetic-384", DIM, False
    source = {"backend": "synthetic"}

    def __init__(self):
        self._rng = np.random.default_rng(7)

    def embed(self, texts: list[str]) -> np.ndarray:
        v = self._rng.standard_normal((len(texts), DIM)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def make_library(folder: Path, books: int, per_book: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}" for i in range(20000)])
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    files = []
    for b in range(books):
        path = folder / f"book-{b:05d}.jsonl"
        files.append(path)
        if path.exists():
            continue
        words = vocab[rng.choice(len(vocab), size=(per_book, 60), p=weights)]
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            for d in range(per_book):
                fh.write(json.dumps({"_id": f"b{b}d{d}", "title": f"Record {d} of book {b}",
                                     "text": " ".join(words[d]) + "."}) + "\n")
        tmp.rename(path)
    return files


class TreeSampler:
    """Peak RSS of this process and of this process plus every descendant (the fork server and its
    parsing workers), sampled every `every` seconds."""

    def __init__(self, every: float = 0.5):
        import threading

        import psutil

        self.proc, self.every, self.peak_self, self.peak_tree, self.peak_worker = psutil.Process(), every, 0, 0, 0
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        import psutil

        while not self.stop:
            try:
                own = self.proc.memory_info().rss
                kids = [c.memory_info().rss for c in self.proc.children(recursive=True)]
            except psutil.Error:
                continue
            self.peak_self = max(self.peak_self, own)
            self.peak_tree = max(self.peak_tree, own + sum(kids))
            self.peak_worker = max([self.peak_worker] + kids)
            time.sleep(self.every)


def child(folder: Path, db_path: Path, workers: int) -> dict:
    from ragcli.ingest.pipeline import FileOptions
    from ragcli.ingest.run import ingest_run
    from ragcli.store import db

    sampler = TreeSampler()
    files = sorted(folder.glob("*.jsonl"))
    conn = db.connect(db_path)
    marks, total, t0 = [], 0, time.perf_counter()
    every = max(1, len(files) // 10)
    failed = 0
    for n, result in enumerate(ingest_run(conn, files, SyntheticEmbedder(), FileOptions(), workers=workers), 1):
        total += result.passages
        failed += result.status == "failed"
        if n % every == 0 or n == len(files):
            marks.append((n, total, time.perf_counter() - t0))
            print(f"  {n}/{len(files)} files, {total:,} passages, {time.perf_counter() - t0:.0f} s, "
                  f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB",
                  file=sys.stderr, flush=True)
    wall = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime
    sampler.stop = True
    peak_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    sizes = dict(conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()) \
        if _has_dbstat(conn) else {}
    return {"files": len(files), "failed": failed, "passages": total, "wall": wall, "cpu": cpu, "marks": marks,
            "load": os.getloadavg()[0],
            "peak_rss_mb": peak_self, "peak_worker_rss_mb": sampler.peak_worker / 2**20,
            "peak_tree_rss_mb": sampler.peak_tree / 2**20, "disk": db_path.stat().st_size,
            "tables": sizes, "search": search_latency(conn)}


def _has_dbstat(conn) -> bool:
    try:
        conn.execute("SELECT 1 FROM dbstat LIMIT 1").fetchall()
        return True
    except Exception:
        return False


def search_latency(conn, queries: int = 10) -> dict:
    from ragcli.store import corpus as store
    from ragcli.store import vectors

    rng = np.random.default_rng(11)
    dense, lexical = [], []
    for i in range(queries):
        q = rng.standard_normal(DIM).astype(np.float32)
        t0 = time.perf_counter()
        vectors.dense_search(conn, q, 10)
        dense.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        store.lexical_search(conn, f"w{3 + i} w{40 + i}", 10)
        lexical.append(time.perf_counter() - t0)
    return {"dense_ms_median": 1000 * statistics.median(dense), "lexical_ms_median": 1000 * statistics.median(lexical)}


def ingest(args) -> None:
    t0 = time.perf_counter()
    folder = args.out / "jsonl"
    make_library(folder, args.books, args.per_book)
    print(f"library: {args.books} JSONL files x {args.per_book} records ({time.perf_counter() - t0:.0f} s to write)",
          file=sys.stderr, flush=True)
    db_path = args.out / "library.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(db_path) + suffix).unlink(missing_ok=True)
    done = subprocess.run([sys.executable, __file__, "child", "--out", str(args.out), "--workers", str(args.workers)],
                          stdout=subprocess.PIPE, text=True)
    if done.returncode:
        raise SystemExit(done.returncode)
    r = json.loads(done.stdout)
    n = r["passages"]
    print(f"\n{r['files']} files ({r['failed']} failed), {n:,} passages, workers {args.workers}, "
          f"load average at the end {r['load']:.1f} (2 cores)\n")
    print("| measure | value |")
    print("|---|---:|")
    print(f"| wall time | {r['wall']:.0f} s ({1000 * r['wall'] / n:.2f} ms/passage, {n / r['wall']:.0f} passages/s) |")
    print(f"| CPU time of the ingest process (parsing workers not counted) | {r['cpu']:.0f} s "
          f"({1000 * r['cpu'] / n:.2f} ms/passage) |")
    print(f"| peak RSS, ingest process (ru_maxrss, exact) | {r['peak_rss_mb']:.0f} MB |")
    print(f"| peak RSS, largest parsing worker (sampled every 0.5 s) | {r['peak_worker_rss_mb']:.0f} MB |")
    print(f"| peak RSS, ingest process + fork server + workers (sampled) | {r['peak_tree_rss_mb']:.0f} MB |")
    print(f"| corpus file | {r['disk'] / 2**30:.2f} GiB ({r['disk'] / n:.0f} bytes/passage) |")
    print(f"| dense search (median of 10) | {r['search']['dense_ms_median']:.0f} ms |")
    print(f"| lexical search (median of 10) | {r['search']['lexical_ms_median']:.0f} ms |")
    print("\nthroughput by tenth of the run (files, passages, seconds, passages/s in that tenth):")
    prev = (0, 0, 0.0)
    for mark in r["marks"]:
        rate = (mark[1] - prev[1]) / max(mark[2] - prev[2], 1e-9)
        print(f"  {mark[0]} files, {mark[1]:,} passages, {mark[2]:.0f} s, {rate:.0f}/s")
        prev = mark
    if r["tables"]:
        print("\nbytes per passage by table (largest):")
        for name, size in sorted(r["tables"].items(), key=lambda kv: -kv[1])[:10]:
            print(f"  {name}: {size / n:.0f}")


def scan(args) -> None:
    from ragcli.store import db
    from ragcli.store import vectors

    path = args.out
    if not path.exists():
        conn = db.connect(path)
        rng = np.random.default_rng(3)
        t0 = time.perf_counter()
        with conn:
            for start in range(0, args.rows, vectors.BLOCK_ROWS):
                n = min(vectors.BLOCK_ROWS, args.rows - start)
                codes = rng.integers(0, 256, size=(n, DIM // 8), dtype=np.uint8)
                ids = np.arange(start + 1, start + n + 1, dtype="<i8")
                conn.execute("INSERT INTO vector_codes(tab, book_id, n, rowids, codes) VALUES (?,?,?,?,?)",
                             ("passage_vec", f"book{start // 1_000_000}", n, ids.tobytes(), codes.tobytes()))
        print(f"wrote {args.rows:,} codes in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        conn.close()
    conn = db.connect(path)
    rng = np.random.default_rng(5)
    timings = []
    for _ in range(args.queries):
        q = rng.standard_normal(DIM).astype(np.float32)
        q /= np.linalg.norm(q)
        t0, c0 = time.perf_counter(), time.process_time()
        cs = vectors.CodeScan(conn, vectors.sign_codes(q[None, :])[0], "passage_vec", None)
        t1, c1 = time.perf_counter(), time.process_time()
        want = vectors.MIN_CANDIDATES
        pre = vectors._smallest(cs.dists, max(vectors.PREFILTER, len(cs.ids) // 200, want))
        signs = np.unpackbits(cs.codes(pre), axis=1, bitorder="little", count=DIM).astype(np.float32)
        vectors._smallest(-np.einsum("ij,j->i", signs, q), want)
        t2, c2 = time.perf_counter(), time.process_time()
        timings.append((t1 - t0, t2 - t1, c1 - c0, c2 - c1))
        del cs
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    h = statistics.median(t[0] for t in timings)
    f = statistics.median(t[1] for t in timings)
    print(f"\n{args.rows:,} synthetic sign-bit codes, {path.stat().st_size / 2**30:.2f} GiB file, "
          f"median of {args.queries} queries\n")
    ch = statistics.median(t[2] for t in timings)
    cf = statistics.median(t[3] for t in timings)
    print("| pass | wall ms | CPU ms (this process) |")
    print("|---|---:|---:|")
    print(f"| read blocks + hamming over every code | {1000 * h:.0f} | {1000 * ch:.0f} |")
    print(f"| float query vs the bits of the best max(2000, n/200) | {1000 * f:.0f} | {1000 * cf:.0f} |")
    print(f"| total scan | {1000 * (h + f):.0f} | {1000 * (ch + cf):.0f} |")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} (2 cores)")
    print(f"\npeak RSS of the scanning process: {rss:.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["ingest", "child", "scan"])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--books", type=int, default=1000)
    ap.add_argument("--per-book", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--queries", type=int, default=5)
    args = ap.parse_args()
    if args.what == "ingest":
        ingest(args)
    elif args.what == "child":
        print(json.dumps(child(args.out / "jsonl", args.out / "library.db", args.workers)))
    else:
        scan(args)


if __name__ == "__main__":
    main()
