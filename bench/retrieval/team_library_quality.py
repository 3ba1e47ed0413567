"""Retrieval on PostgreSQL against SQLite on the same passages and vectors (issue 43), and `copy`'s round trip.

    .venv/bin/python bench/team_library_quality.py --pg postgresql://USER@HOST/DB --fm-db fm.db --nf-db nf.db
    .venv/bin/python bench/team_library_quality.py --pg ... --fm-db fm.db --roundtrip 50

Each SQLite library is copied into a PostgreSQL schema of its own with `ragcli copy`'s code (same ids,
texts and float32 vectors), then both are searched in the same run with the same options:
- FM 4-25.11 page-set questions (bench/retrieval/fm4-25-11-questions.jsonl): hit@1 and hit@5 of the lay questions;
- NFCorpus (BEIR test qrels): nDCG@10;
in ask's search mode (`expanded`) and, to show the lexical leg alone, `lexical`; PostgreSQL once per
lexical ranking in --ranks (ts_rank / ts_rank_cd and their length normalisations).
--roundtrip N: SQLite -> PostgreSQL -> SQLite with `copy`, then `search --json`'s hits of N questions
compared between the original file and the copy of the copy (the bar: all identical).
--nf-db is built from ../shared/data/nfcorpus when missing (bench/retrieval/bench_retrieval.py's build).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ragcli import evaluate  # noqa: E402
from ragcli.models import embed  # noqa: E402
from ragcli.render.data import hits_data  # noqa: E402
from ragcli.search.options import SearchOptions  # noqa: E402
from ragcli.search.pipeline import search  # noqa: E402
from ragcli.store import backend, copy as library_copy, corpus as store  # noqa: E402
from ragcli.store.postgres import search as pg_search  # noqa: E402

RANKS = {"ts_rank/1": "ts_rank(p.tsv, q.q, 1)", "ts_rank/0": "ts_rank(p.tsv, q.q, 0)",
         "ts_rank_cd/1": "ts_rank_cd(p.tsv, q.q, 1)", "ts_rank_cd/0": "ts_rank_cd(p.tsv, q.q, 0)"}


def pg_copy(sqlite_path: Path, address: str, schema: str):
    target = f"{address}{'&' if '?' in address else '?'}schema={schema}"
    dst = backend.connect(target)
    if not store.list_books(dst):
        src = backend.connect(sqlite_path, create=False)
        t = time.perf_counter()
        library_copy.copy_library(src, dst)
        print(f"copied {sqlite_path.name} into schema {schema} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
        src.close()
    return dst


def run(conn, embedder, queries, mode: str, depth: int) -> dict:
    known = [b.id for b in store.list_books(conn)]
    for q in queries:
        q.book = evaluate.resolve_book(q.book, known) if q.book else None
    fn = evaluate.searcher(conn, embedder, SearchOptions(mode=mode, k=depth, depth=depth))
    return evaluate.evaluate({mode: fn}, queries).modes[0]


def compare(name, sqlite_path, address, queries, metrics, embedder, modes, ranks, depth, group=None):
    sq = backend.connect(sqlite_path, create=False)
    pg = pg_copy(sqlite_path, address, "bench_" + name)
    print(f"\n{name}: {len(queries)} questions; {', '.join(metrics)}" + (f" ({group} questions)" if group else ""))
    print(f"{'mode':<10}{'backend':<24}" + "".join(f"{m:>10}" for m in metrics) + f"{'s':>8}")
    out = {}
    for mode in modes:
        rows = [("sqlite", sq, None)] + [(f"postgresql {r}", pg, RANKS[r]) for r in ranks]
        for label, conn, rank in rows:
            if rank:
                pg_search.LEXICAL_RANK = rank
            r = run(conn, embedder, [replace(q) for q in queries], mode, depth)
            vals = r.by_type.get(group, {}) if group else r.metrics
            out[f"{mode} {label}"] = {m: vals.get(m, 0.0) for m in metrics}
            print(f"{mode:<10}{label:<24}" + "".join(f"{vals.get(m, 0.0):>10.4f}" for m in metrics)
                  + f"{r.seconds:>8.1f}")
    sq.close()
    pg.close()
    return out


def roundtrip(sqlite_path: Path, address: str, n: int, embedder) -> dict:
    tmp = Path(tempfile.mkdtemp())
    pg = pg_copy(sqlite_path, address, "bench_roundtrip")
    back = backend.connect(tmp / "back.db")
    library_copy.copy_library(pg, back)
    orig = backend.connect(sqlite_path, create=False)
    questions = [json.loads(line)["question"] for line in open(ROOT / "bench" / "retrieval" / "fm4-25-11-questions.jsonl")][:n]
    same = same_pg = 0
    for q in questions:
        a = hits_data(search(orig, embedder, q, SearchOptions(k=10)).hits)
        b = hits_data(search(back, embedder, q, SearchOptions(k=10)).hits)
        c = hits_data(search(pg, embedder, q, SearchOptions(mode="dense", k=10)).hits)
        d = hits_data(search(orig, embedder, q, SearchOptions(mode="dense", k=10)).hits)
        same += json.dumps(a) == json.dumps(b)
        same_pg += [h["passage_id"] for h in c] == [h["passage_id"] for h in d]
    counts = (library_copy.table_counts(orig) == library_copy.table_counts(back))
    print(f"\ncopy SQLite -> PostgreSQL -> SQLite: row counts equal {counts}; identical `search --json` hits "
          f"{same}/{len(questions)}; PostgreSQL dense top 10 = SQLite's {same_pg}/{len(questions)}")
    return {"counts_equal": counts, "identical": same, "questions": len(questions), "dense_same_on_pg": same_pg}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pg", required=True, help="a PostgreSQL address with pgvector (a schema per set is made)")
    ap.add_argument("--fm-db", type=Path, help="a SQLite library holding FM 4-25.11")
    ap.add_argument("--nf-db", type=Path, help="a SQLite library of NFCorpus (built when missing)")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--modes", default="expanded,lexical")
    ap.add_argument("--ranks", default="ts_rank/1,ts_rank_cd/1,ts_rank/0")
    ap.add_argument("--nf-limit", type=int, default=0, help="first N NFCorpus queries (0: all 323)")
    ap.add_argument("--roundtrip", type=int, default=0, help="N questions for the copy round trip")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    embedder = embed.get_embedder()
    modes, ranks = args.modes.split(","), args.ranks.split(",")
    result = {}
    if args.fm_db:
        queries = evaluate.load_queries(ROOT / "bench" / "retrieval" / "fm4-25-11-questions.jsonl")
        result["fm"] = compare("fm", args.fm_db, args.pg, queries, ["hit@1", "hit@5"], embedder, modes, ranks, 20,
                               group="lay")
    if args.nf_db:
        if not args.nf_db.exists():
            from bench_retrieval import build

            build(args.nf_db, [args.data / "nfcorpus" / "corpus.jsonl"], ["nfcorpus"])
        queries = evaluate.load_queries(args.data / "nfcorpus" / "queries.jsonl",
                                        args.data / "nfcorpus" / "qrels" / "test.tsv")
        queries = queries[:args.nf_limit] if args.nf_limit else queries
        result["nfcorpus"] = compare("nfcorpus", args.nf_db, args.pg, queries, ["ndcg@10"], embedder, modes, ranks, 300)
    if args.roundtrip and args.fm_db:
        result["roundtrip"] = roundtrip(args.fm_db, args.pg, args.roundtrip, embedder)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
