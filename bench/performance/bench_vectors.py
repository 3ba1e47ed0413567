"""Dense retrieval at scale: ragcli's dense search vs a numpy float32 scan, side by side, one run.

    python bench/performance/make_synthetic.py --n 100000 --out /tmp/synth-100k.db      # once
    python bench/performance/bench_vectors.py --db /tmp/synth-100k.db [--queries 40] [--exact 3]

Per query, interleaved so machine noise hits both alike:
  numpy    the corpus's float32 vectors held in memory, X @ q, top-10 (the bar's baseline);
  ragcli   vectors.dense_search(conn, q, 10): hamming pass over sign-bit codes, float-vs-bits pass,
           exact rescoring from float16 copies; read from SQLite every time (nothing cached);
and recall@10 of ragcli against numpy's exact top 10. Then: the same with a one-book filter,
sqlite-vec's exact scan on a few queries (reference), and the search pipeline in lexical, dense and
hybrid mode (the query vector is precomputed: embedding is measured by bench_embed.py), and disk
bytes per passage by table. Prints markdown.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "performance"))

from make_synthetic import MODEL, synthetic_queries  # noqa: E402
from ragcli.store import db
from ragcli.search.pipeline import SearchOptions, search
from ragcli.store import vectors  # noqa: E402

K = 10


class FixedEmbedder:
    """Returns the prepared vector of each query text (the search path runs, the model does not)."""

    name, dim = MODEL, 384

    def __init__(self, texts, vecs):
        self.table = {t: v for t, v in zip(texts, vecs)}

    def embed(self, texts):
        return np.stack([self.table[t] for t in texts])


def load_matrix(conn, n: int) -> tuple[np.ndarray, np.ndarray]:
    ids = np.empty(n, dtype=np.int64)
    X = np.empty((n, 384), dtype=np.float32)
    at = 0
    cur = conn.execute("SELECT rowid, embedding FROM passage_vec")
    while rows := cur.fetchmany(8192):
        ids[at:at + len(rows)] = [r[0] for r in rows]
        X[at:at + len(rows)] = np.frombuffer(b"".join(r[1] for r in rows), np.float32).reshape(len(rows), -1)
        at += len(rows)
    return ids[:at], X[:at]


def numpy_topk(X, q, k=K):
    s = X @ q
    top = np.argpartition(-s, k)[:k]
    return top[np.argsort(-s[top])]


def stats(xs) -> str:
    ms = [x * 1000 for x in xs]
    return f"{min(ms):.1f} / {statistics.median(ms):.1f} / {max(ms):.1f}"


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def dense_vs_numpy(conn, ids, X, Q, book_ids=None):
    mask = None
    if book_ids:
        keep = {r for (r,) in conn.execute(
            f"SELECT id FROM passages WHERE book_id IN ({','.join('?' * len(book_ids))})", book_ids)}
        mask = np.array([i in keep for i in ids])
        ids, X = ids[mask], np.ascontiguousarray(X[mask])
    t_np, t_rc, recall = [], [], []
    for q in Q:
        dt, top = timed(lambda: numpy_topk(X, q))
        t_np.append(dt)
        dt, got = timed(lambda: vectors.dense_search(conn, q, K, book_ids))
        t_rc.append(dt)
        recall.append(len(set(ids[top].tolist()) & {r for r, _ in got}) / K)
    return t_np, t_rc, recall


def legs(conn, Q, texts, book_ids=None):
    emb = FixedEmbedder(texts, Q)
    out = {m: [] for m in ("lexical", "dense", "hybrid")}
    for text in texts:
        for mode in out:
            dt, _ = timed(lambda: search(conn, emb, text, SearchOptions(mode=mode, k=K, book_ids=book_ids)))
            out[mode].append(dt)
    return out


def disk(conn, path: Path, n: int) -> list[str]:
    lines = [f"file {path.stat().st_size / n:.0f} bytes per passage ({path.stat().st_size / 1e6:.0f} MB)"]
    try:
        rows = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
    except Exception:  # dbstat not compiled in
        return lines
    groups: dict[str, int] = {}
    for name, size in rows:
        key = ("passage_vec (vec0 float32)" if name.startswith("passage_vec") and "half" not in name else
               "passage_vec_half (float16 copies)" if name.startswith("passage_vec_half") else
               "vector_codes (sign bits + rowids)" if name.startswith("vector_codes") else
               "passages_fts (FTS5)" if name.startswith("passages_fts") else
               "passages (text + indexes)" if name.startswith(("passages", "sqlite_autoindex_passages")) else
               "other")
        groups[key] = groups.get(key, 0) + size
    lines += [f"{key}: {size / n:.0f} B/passage" for key, size in sorted(groups.items(), key=lambda x: -x[1])]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--exact", type=int, default=3, help="queries timed with sqlite-vec's exact scan")
    args = ap.parse_args()
    conn = db.connect(args.db, create=False)
    n = conn.execute("SELECT COUNT(*) FROM passages").fetchone()[0]
    print(f"corpus {args.db}: {n:,} passages; numpy {np.__version__}; k={K}; {args.queries} queries")
    ids, X = load_matrix(conn, n)
    Q, texts = synthetic_queries(n, args.queries)
    t_np, t_rc, rec = dense_vs_numpy(conn, ids, X, Q)
    book = [conn.execute("SELECT id FROM books ORDER BY id LIMIT 1").fetchone()[0]]
    b_np, b_rc, b_rec = dense_vs_numpy(conn, ids, X, Q[:20], book)
    del X
    t_ex = [timed(lambda: vectors.exact_search(conn, q, K))[0] for q in Q[:args.exact]]
    lg = legs(conn, Q, texts)
    print("\n| measurement | min / median / max ms | ratio of medians | recall@10 |\n|---|---|---|---|")
    print(f"| numpy float32 scan, in memory | {stats(t_np)} | 1.00 | exact |")
    print(f"| ragcli dense_search (codes + rescoring) | {stats(t_rc)} | "
          f"{statistics.median(t_rc) / statistics.median(t_np):.2f} | {np.mean(rec):.3f} (min {min(rec):.1f}) |")
    print(f"| numpy, one book ({book[0]}) | {stats(b_np)} | 1.00 | exact |")
    print(f"| ragcli dense_search --book {book[0]} | {stats(b_rc)} | "
          f"{statistics.median(b_rc) / statistics.median(b_np):.2f} | {np.mean(b_rec):.3f} |")
    if t_ex:
        print(f"| sqlite-vec exact float scan ({len(t_ex)} queries) | {stats(t_ex)} | "
              f"{statistics.median(t_ex) / statistics.median(t_np):.2f} | exact |")
    slower = max(statistics.median(lg["lexical"]), statistics.median(lg["dense"]))
    for mode in ("lexical", "dense", "hybrid"):
        print(f"| search mode={mode} | {stats(lg[mode])} | "
              f"{statistics.median(lg[mode]) / slower:.2f} of slower leg | |")
    print("\ndisk: " + "; ".join(disk(conn, args.db, n)))


if __name__ == "__main__":
    main()
