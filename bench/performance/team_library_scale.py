"""Scale of a PostgreSQL library against the SQLite store, same vectors, same run (issue 43).

    .venv/bin/python bench/team_library_scale.py --pg postgresql://USER@HOST/DB --n 100000 --dbs DIR
    .venv/bin/python bench/team_library_scale.py --pg ... --n 1000000 --dbs DIR     # the issue's 1M
    .venv/bin/python bench/team_library_scale.py --pg ... --ingest BOOK.pdf         # ingest PG vs SQLite

Vectors with real structure: the all-MiniLM-L6-v2 vectors (and texts) of every passage in the SQLite
libraries of --dbs (the shared books, NFCorpus), and, to reach --n, synthetic vectors spread over --books
books (their texts: the real texts, cycled):
- --synth gaussian (default): drawn from a Gaussian with the real vectors' mean and covariance,
  renormalised (the real collection's shape, no near-copies);
- --synth perturb: each a real vector plus Gaussian noise of --noise per dimension, renormalised
  (clusters of near-copies round each real vector: cosine about 1/sqrt(1 + 384 noise^2) to it).
Queries: the FM 4-25.11 questions embedded by the same model. Reported side by side:
- dense k=10 p50 of ragcli's SQLite store (sign-bit codes + float16 rescoring) and of pgvector HNSW
  (ragcli's graph over halfvec casts, ef_search as ragcli sets it), each with recall@10 against an exact
  numpy scan; for PostgreSQL also the recall against p50 curve over --ef values of hnsw.ef_search, and
  with --float-index the same curve for an HNSW index over the float32 vectors (the graph before m011);
- a search filtered to one book: hits returned (must be k) and p50;
- hybrid p50 (both legs and fusion, as `ragcli search` runs them);
- the HNSW build time and the index and table sizes;
--ingest BOOK: the real book ingested into a fresh SQLite file and a fresh PostgreSQL schema, alternately,
--rounds times, its vectors computed once beforehand (the store's time, not the model's), times and ratio.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ragcli.models import embed  # noqa: E402
from ragcli.store import backend, corpus as store, db, vectors as vector_index  # noqa: E402
from ragcli.store.postgres import vectors as pg_vectors  # noqa: E402
from ragcli.store.sql import transaction  # noqa: E402


def source_rows(dbs: Path):
    texts, vecs = [], []
    work = Path(tempfile.mkdtemp())
    for path in sorted(dbs.glob("*.db")):
        # read from a copy (SQLite's backup, WAL included): opening a library migrates it, and the
        # shared libraries must stay as they are for the ragcli that made them
        src = db.sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        dst = db.sqlite3.connect(work / path.name)
        src.backup(dst)
        src.close()
        dst.close()
        conn = db.connect(work / path.name, create=False)
        rows = conn.execute("SELECT p.id, p.text FROM passages p ORDER BY p.id").fetchall()
        got = vector_index.stored_vectors(conn, "passage_vec", [r[0] for r in rows])
        for pid, text in rows:
            if pid in got:
                texts.append(text)
                vecs.append(got[pid])
        conn.close()
    return texts, np.stack(vecs).astype(np.float32)


def make(n: int, texts, base: np.ndarray, noise: float, seed: int = 0, synth: str = "gaussian"):
    """n vectors: the real ones first (in a shuffled order), then synthetic ones (see the module's doc)."""
    rng = np.random.default_rng(seed)
    pick = np.arange(n) % len(base)
    rng.shuffle(pick)
    mat = np.empty((n, base.shape[1]), dtype=np.float32)
    real = min(n, len(base))
    order = rng.permutation(len(base))[:real]
    mat[:real] = base[order]
    pick[:real] = order
    extra = n - real
    if extra and synth == "gaussian":
        mean = base.mean(axis=0)
        root = np.linalg.cholesky(np.cov(base, rowvar=False) + 1e-6 * np.eye(base.shape[1]))
        for lo in range(real, n, 100_000):
            hi = min(n, lo + 100_000)
            z = rng.standard_normal((hi - lo, base.shape[1])).astype(np.float32)
            mat[lo:hi] = mean + z @ root.T.astype(np.float32)
    elif extra:
        for lo in range(real, n, 100_000):
            hi = min(n, lo + 100_000)
            mat[lo:hi] = base[pick[lo:hi]] + rng.normal(scale=noise, size=(hi - lo, base.shape[1]))
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    return [texts[i] for i in pick], mat


def fill(conn, texts, mat, books: int, pg: bool, maintenance_mem: str = "1GB") -> float:
    """Rows and vectors, book by book; on PostgreSQL the HNSW index is built after the load (timed)."""
    n = len(texts)
    per = (n + books - 1) // books
    with transaction(conn):
        store.set_meta(conn, "embedding_model", "sentence-transformers/all-MiniLM-L6-v2")
        store.set_meta(conn, "embedding_dim", "384")
        vector_index.create_tables(conn, 384)
        if pg:
            conn.execute(f"DROP INDEX {pg_vectors.HNSW_INDEX}")
    for b in range(books):
        lo, hi = b * per, min(n, (b + 1) * per)
        if lo >= hi:
            break
        with transaction(conn):
            conn.execute("INSERT INTO books(id, title, path, file_hash, page_count, ingested_at) VALUES (?,?,?,?,?,?)",
                         (f"b{b:05d}", f"Book {b}", f"b{b}.pdf", f"h{b}", 1, "2026-11-28"))
            conn.executemany("INSERT INTO passages(id, book_id, ordinal, kind, section_path, heading, page_start,"
                             " page_end, text, text_hash, embed_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                             [(i + 1, f"b{b:05d}", i - lo, "passage", "[]", "", 1, 1, texts[i], "h", "e")
                              for i in range(lo, hi)])
            vector_index.add_vectors(conn, f"b{b:05d}", list(range(lo + 1, hi + 1)), mat[lo:hi])
        if b % 50 == 0:
            print(f"  {'pg' if pg else 'sqlite'}: {hi}/{n} rows", file=sys.stderr)
    if not pg:
        return 0.0
    t = time.perf_counter()
    conn.execute(f"SET maintenance_work_mem = '{maintenance_mem}'")  # the graph built in memory
    pg_vectors.create_hnsw(conn, mat.shape[1])  # the graph ragcli builds (over halfvec casts, m011)
    return time.perf_counter() - t


def _fill_child(path: Path, texts, mat, books: int, got) -> None:
    conn = db.connect(path)
    got.put(timed(lambda: fill(conn, texts, mat, books, False))[0])
    conn.close()


def _save(args, out: dict) -> None:
    """Write what is measured so far (a long run keeps its figures if a later stage is cut short)."""
    if args.out:
        args.out.write_text(json.dumps({"scale": out, "partial": True}, indent=1))


def p50(xs):
    return statistics.median(xs) * 1000


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def scale(args) -> dict:
    embedder = embed.get_embedder()
    texts, base = source_rows(args.dbs)
    print(f"{len(base)} real passage vectors from {args.dbs}", file=sys.stderr)
    texts, mat = make(args.n, texts, base, args.noise, synth=args.synth)
    parents = mat[len(base):] @ base.T if args.n > len(base) and args.n <= 200_000 else None
    if parents is not None:
        print(f"synthetic vectors: cosine to their nearest real vector, median "
              f"{float(np.median(parents.max(axis=1))):.3f}", file=sys.stderr)
        del parents
    questions = [json.loads(line)["question"] for line in open(ROOT / "bench" / "retrieval" / "fm4-25-11-questions.jsonl")]
    queries = np.asarray(embedder.embed(questions[:args.queries]), dtype=np.float32)
    exact = [set((np.argsort(-(mat @ q), kind="stable")[:10] + 1).tolist()) for q in queries]
    print(f"{args.n} vectors, exact top 10 of {len(queries)} queries", file=sys.stderr)
    tmp = Path(tempfile.mkdtemp())
    address = f"{args.pg}{'&' if '?' in args.pg else '?'}schema=bench_scale_{args.n}_{args.synth}"
    pg = backend.connect(address)
    if store.list_books(pg):
        raise SystemExit("schema bench_scale_N exists: drop it first (DROP SCHEMA ... CASCADE)")
    if args.parallel_fill:
        # The SQLite file filled by a forked child while this process loads PostgreSQL (the two loads
        # overlap, so each load time, and the HNSW build's, is taken with the other running beside it).
        # Forked before this process holds a server connection, which a child must not share.
        import multiprocessing

        pg.close()
        ctx = multiprocessing.get_context("fork")
        got = ctx.Queue()
        child = ctx.Process(target=_fill_child, args=(tmp / "scale.db", texts, mat, args.books, got))
        child.start()
        pg = backend.connect(address)
        t_pg_load, build = timed(lambda: fill(pg, texts, mat, args.books, True, args.maintenance_mem))
        print(f"postgres loaded, HNSW built in {build:.0f} s", file=sys.stderr)
        t_sq = got.get()
        child.join()
        sq = db.connect(tmp / "scale.db")
    else:
        sq = db.connect(tmp / "scale.db")
        t_sq, _ = timed(lambda: fill(sq, texts, mat, args.books, False))
        t_pg_load, build = timed(lambda: fill(pg, texts, mat, args.books, True, args.maintenance_mem))
        print(f"postgres loaded, HNSW built in {build:.0f} s", file=sys.stderr)
    sizes = dict(pg.execute("SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON "
                            "n.oid = c.relnamespace WHERE n.nspname = ? AND c.relname IN "
                            "('passage_vec', ?, 'passages', 'passages_tsv')", (pg.schema, pg_vectors.HNSW_INDEX)).fetchall())
    out = {"n": args.n, "real": len(base), "books": args.books, "noise": args.noise, "hnsw_build_s": build,
           "sizes_mb": {k: v / 1e6 for k, v in sizes.items()}, "sqlite_file_mb": (tmp / "scale.db").stat().st_size / 1e6,
           "load_s": {"sqlite": t_sq, "postgres": t_pg_load - build}, "parallel_fill": args.parallel_fill}
    _save(args, out)
    from ragcli.search.options import SearchOptions
    from ragcli.search.pipeline import search

    for name, conn in (("sqlite", sq), ("postgres", pg)):
        vector_index.dense_search(conn, queries[0], 10)  # warm
        times, recall = [], []
        for q, truth in zip(queries, exact):
            dt, got = timed(lambda: vector_index.dense_search(conn, q, 10))
            times.append(dt)
            recall.append(len(truth & {r for r, _ in got}) / 10)
        ftimes, fcounts = [], []
        for i, q in enumerate(queries):
            book = [f"b{(i * 37) % args.books:05d}"]
            dt, got = timed(lambda: vector_index.dense_search(conn, q, 10, book))
            ftimes.append(dt)
            fcounts.append(len(got))
        htimes = [timed(lambda: search(conn, embedder, t, SearchOptions(mode="hybrid", k=10)))[0]
                  for t in questions[:args.queries]]
        out[name] = {"dense_p50_ms": p50(times), "recall@10": float(np.mean(recall)),
                     "filtered_p50_ms": p50(ftimes), "filtered_min_hits": min(fcounts),
                     "hybrid_p50_ms": p50(htimes)}
        print(f"  {name}: {json.dumps(out[name])}", file=sys.stderr)
        _save(args, out)
    out["dense_ratio_pg_over_sqlite"] = out["postgres"]["dense_p50_ms"] / out["sqlite"]["dense_p50_ms"]
    out["ef_curve"] = ef_curve(pg, queries, exact, [int(e) for e in args.ef.split(",")], "halfvec",
                               out["sqlite"]["dense_p50_ms"])
    _save(args, out)
    if args.float_index:
        t = time.perf_counter()
        pg.execute("CREATE INDEX passage_vec_float ON passage_vec USING hnsw (embedding vector_cosine_ops) "
                   "WITH (m = 16, ef_construction = 64)")
        out["float_build_s"] = time.perf_counter() - t
        out["sizes_mb"]["passage_vec_float"] = pg.execute(
            "SELECT pg_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = ? AND c.relname = 'passage_vec_float'", (pg.schema,)).fetchone()[0] / 1e6
        out["ef_curve_float"] = ef_curve(pg, queries, exact, [int(e) for e in args.ef.split(",")], "vector",
                                         out["sqlite"]["dense_p50_ms"])
    if not args.keep:
        pg.execute(f'DROP SCHEMA "{pg.schema}" CASCADE')
    return out


def ef_curve(pg, queries, exact, efs, kind: str, sqlite_p50: float) -> list[dict]:
    """recall@10 and p50 of the unfiltered dense search at each hnsw.ef_search (`kind`: the index over
    the stored vectors, or the one over their halfvec cast)."""
    from ragcli.store.postgres.connection import EF_SEARCH

    dim = queries.shape[1]
    sql = ("SELECT id FROM passage_vec ORDER BY embedding <=> ? LIMIT 10" if kind == "vector" else
           f"SELECT id FROM passage_vec ORDER BY embedding::halfvec({dim}) <=> ?::halfvec({dim}) LIMIT 10")
    rows = []
    for ef in efs:
        pg.execute(f"SET hnsw.ef_search = {int(ef)}")
        pg.execute(sql, (queries[0],))  # warm
        times, recall = [], []
        for q, truth in zip(queries, exact):
            dt, got = timed(lambda: pg.execute(sql, (q,)).fetchall())
            times.append(dt)
            recall.append(len(truth & {r[0] for r in got}) / 10)
        rows.append({"ef_search": ef, "recall@10": float(np.mean(recall)), "p50_ms": p50(times),
                     "ratio_to_sqlite": p50(times) / sqlite_p50})
        print(f"  {kind} ef_search {ef}: recall@10 {rows[-1]['recall@10']:.3f}, p50 {rows[-1]['p50_ms']:.1f} ms "
              f"({rows[-1]['ratio_to_sqlite']:.3f}x SQLite)", file=sys.stderr)
    pg.execute(f"SET hnsw.ef_search = {int(EF_SEARCH)}")
    return rows


def ingest_compare(args) -> dict:
    from ragcli.ingest import pipeline as ingest

    real = embed.get_embedder()

    class Memo:
        name, dim = real.name, real.dim
        source = getattr(real, "source", None)
        multilingual = getattr(real, "multilingual", False)
        cache: dict = {}

        def embed(self, texts):
            todo = [t for t in texts if t not in self.cache]
            if todo:
                for t, v in zip(todo, real.embed(todo)):
                    self.cache[t] = v
            return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

        def __getattr__(self, item):
            return getattr(real, item)

    memo = Memo()
    tmp = Path(tempfile.mkdtemp())
    warm = db.connect(tmp / "warm.db")
    ingest.ingest_file(warm, args.ingest, memo)  # every vector computed once, outside the timings
    times = {"sqlite": [], "postgres": []}
    phases: dict = {"sqlite": [], "postgres": []}
    for r in range(args.rounds):
        for name in ("sqlite", "postgres"):
            target = (str(tmp / f"r{r}.db") if name == "sqlite"
                      else f"{args.pg}{'&' if '?' in args.pg else '?'}schema=bench_ingest_{r}_{int(time.time())}")
            conn = backend.connect(target)  # the library made before the clock starts, on both
            dt, res = timed(lambda: ingest.ingest_file(conn, args.ingest, memo))
            assert res.status == "added"
            times[name].append(dt)
            phases[name].append(res.timings)
            print(f"  round {r} {name}: {dt:.2f} s ({', '.join(f'{k} {v:.2f}' for k, v in res.timings.items())})",
                  file=sys.stderr)
            if name == "postgres":
                conn.execute(f'DROP SCHEMA "{conn.schema}" CASCADE')
            conn.close()
    out = {name: statistics.median(v) for name, v in times.items()}
    out["ratio"] = out["postgres"] / out["sqlite"]
    out["store_s"] = {name: statistics.median(p["store"] for p in v) for name, v in phases.items()}
    out["passages"] = res.passages
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pg", required=True)
    ap.add_argument("--dbs", type=Path, help="a folder of SQLite libraries whose passages and vectors are the base")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--books", type=int, default=200)
    ap.add_argument("--noise", type=float, default=0.03, help="per-dimension noise of the perturbed copies")
    ap.add_argument("--synth", choices=("gaussian", "perturb"), default="gaussian",
                    help="how the vectors beyond the real ones are made")
    ap.add_argument("--ef", default="40,100,200,400", help="hnsw.ef_search values of the recall curve")
    ap.add_argument("--float-index", action="store_true",
                    help="also an HNSW index over the float32 vectors (the graph before m011), its curve")
    ap.add_argument("--keep", action="store_true", help="keep the PostgreSQL schema (default: dropped after)")
    ap.add_argument("--maintenance-mem", default="1GB", help="maintenance_work_mem of the HNSW build")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--parallel-fill", action="store_true",
                    help="fill the SQLite file in a child process while PostgreSQL loads and builds its index")
    ap.add_argument("--ingest", type=Path, help="a real book: ingest time on both backends")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    result = {}
    if args.ingest:
        result["ingest"] = ingest_compare(args)
        print(json.dumps(result["ingest"], indent=1))
    if args.dbs:
        result["scale"] = scale(args)
        print(json.dumps(result["scale"], indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
