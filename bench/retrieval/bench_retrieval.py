"""Retrieval benchmarks: NFCorpus (BEIR, test split) and the FM 4-25.11 page-set questions.

    .venv/bin/python bench/retrieval/bench_retrieval.py --data ../shared/data            # both sets
    .venv/bin/python bench/retrieval/bench_retrieval.py --data ../shared/data --only fm --variants base
    .venv/bin/python bench/retrieval/bench_retrieval.py --data ../shared/data --list     # the variants

The corpus files are built once in --cache (default: $TMPDIR/ragcli-bench) and reused: NFCorpus
embeds 3,633 documents, the PDFs about 2,000 passages. Results go to stdout (a table) and, with
--out, to a JSON file. Each variant is one set of search options (search/options.py) run through
the one search pipeline, as `ragcli eval retrieval` runs the modes.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ragcli import evaluate  # noqa: E402
from ragcli.ingest import pipeline as ingest  # noqa: E402
from ragcli.models import embed  # noqa: E402
from ragcli.search.options import MODES, WINDOW, SearchOptions  # noqa: E402
from ragcli.store import corpus as store, db  # noqa: E402

ANCHORS = {"BM25 (BEIR paper)": 0.325, "all-MiniLM-L6-v2 (MTEB)": 0.316, "BM25+BGE-base RRF": 0.3725}


def exp(**kw) -> SearchOptions:
    """`expanded` with some settings changed; with feedback settings, the feedback steps on top of it
    (no feedback unless asked, fusion window 20, RM3 words at weight 0.3: the expansion options
    these variants were measured with)."""
    if kw.get("feedback") or kw.get("lexical_feedback"):
        base = dict(feedback=0, lexical_feedback=0, lexical_feedback_weight=0.3, window=WINDOW)
        return SearchOptions(mode="feedback", **{**base, **kw})
    return SearchOptions(mode="expanded", **kw)


def fb(**kw) -> SearchOptions:
    return SearchOptions(mode="feedback", **kw)


def plain(mode: str, **kw) -> SearchOptions:
    return SearchOptions(mode=mode, **kw)


# name -> search options (k, depth and the book scope are set per set). Variants that needed options
# measured and dropped (score fusion, leg weights, page/section grouping, text PRF, heading queries,
# terms as a dense query) went with those options; their figures are in git history (docs/benchmarks-retrieval.md).
VARIANTS = {
    "lexical": plain("lexical"),
    "dense": plain("dense"),
    "hybrid": plain("hybrid"),
    "expanded": exp(),
    "exp-norr": exp(rerank_top=0),
    "hybrid-k20": plain("hybrid", rrf_k=20),
    "hybrid-k100": plain("hybrid", rrf_k=100),
    "exp-w.3": exp(term_weight=0.3),
    "exp-w.8": exp(term_weight=0.8),
    "exp-n4": exp(n_terms=4),
    "exp-n12": exp(n_terms=12),
    "exp-nolex": exp(lexical_terms=False),
    "exp-off": exp(term_weight=0.0),
    "exp-w.1": exp(term_weight=0.1),
    "exp-rr10": exp(rerank_top=10),
    "exp-rr10-t0": exp(rerank_top=10, rerank_terms=0.0),
    "exp-rr10-.4": exp(rerank_top=10, rerank_dense=0.4),
    "exp-rr10-.3-t.2": exp(rerank_top=10, rerank_dense=0.3, rerank_terms=0.2),
    "exp-rr10-.5-t.2": exp(rerank_top=10, rerank_dense=0.5, rerank_terms=0.2),
    "exp-rr10-.5": exp(rerank_top=10, rerank_dense=0.5),
    "exp-rr5": exp(rerank_top=5),
    "exp-rr20": exp(rerank_top=20),
    "exp-fb3": exp(feedback=3),
    "exp-fb3-.5": exp(feedback=3, feedback_beta=0.5),
    "exp-fb5": exp(feedback=5),
    "exp-fb3-norr": exp(feedback=3, rerank_top=0),
    "exp-lf3": exp(lexical_feedback=3),
    "exp-lf5": exp(lexical_feedback=5),
    "exp-lf5-t20": exp(lexical_feedback=5, lexical_feedback_terms=20),
    "exp-lf5-w.6": exp(lexical_feedback=5, lexical_feedback_weight=0.6),
    "exp-lf10": exp(lexical_feedback=10),
    "exp-fb3-lf5": exp(feedback=3, lexical_feedback=5),
    "exp-fb3-lf5-w.6": exp(feedback=3, lexical_feedback=5, lexical_feedback_weight=0.6),
    "exp-fb3-lf5-w1": exp(feedback=3, lexical_feedback=5, lexical_feedback_weight=1.0),
    "exp-fb5-lf5-w.6": exp(feedback=5, lexical_feedback=5, lexical_feedback_weight=0.6),
    "exp-fb3-lf5-t20-w.6": exp(feedback=3, lexical_feedback=5, lexical_feedback_terms=20,
                               lexical_feedback_weight=0.6),
    "exp-fb3-lf10-w.6": exp(feedback=3, lexical_feedback=10, lexical_feedback_weight=0.6),
    "exp-fb3-lf5-w.6-nr": exp(feedback=3, lexical_feedback=5, lexical_feedback_weight=0.6, rerank_top=0),
    "exp-fb3-lf5-w.6-k30": exp(feedback=3, lexical_feedback=5, lexical_feedback_weight=0.6, rrf_k=30),
    "exp-fb3-lf5-w.6-tw.3": exp(feedback=3, lexical_feedback=5, lexical_feedback_weight=0.6, term_weight=0.3),
    "exp-fb3-lf5-w.6-rr20": exp(feedback=3, lexical_feedback=5, lexical_feedback_weight=0.6, rerank_top=20),
    "exp-fb2-lf5-w.6": exp(feedback=2, lexical_feedback=5, lexical_feedback_weight=0.6),
    "exp-fb3-lf3-w.6": exp(feedback=3, lexical_feedback=3, lexical_feedback_weight=0.6),
    "exp-fb3-lf5-w.6-b1.5": exp(feedback=3, feedback_beta=1.5, lexical_feedback=5, lexical_feedback_weight=0.6),
    "hybrid-w10": plain("hybrid", window=10),
    "hybrid-w20": plain("hybrid", window=20),
    "hybrid-w30": plain("hybrid", window=30),
    "hybrid-w50": plain("hybrid", window=50),
    "exp-w10": exp(window=10),
    "exp-w20": exp(window=20),
    "exp-w30": exp(window=30),
    "exp-w50": exp(window=50),
    "fb-w20": fb(window=20),
    "fb-w30": fb(window=30),
    "fb-w50": fb(window=50),
    "feedback": fb(),
    "fb-k100": fb(rrf_k=100),
    "fb-k200": fb(rrf_k=200),
}
SETS = {"base": ["lexical", "dense", "hybrid", "exp-norr", "expanded", "feedback"]}


def build(db_path: Path, files: list[Path], ids: list[str | None]) -> None:
    conn = db.connect(db_path)
    embedder = embed.get_embedder()
    for path, book_id in zip(files, ids):
        t = time.perf_counter()
        r = ingest.ingest_file(conn, path, embedder, book_id=book_id)
        print(f"  {r.status} {r.book_id}: {r.passages} passages, {r.embedded} embedded, "
              f"{time.perf_counter() - t:.0f} s", file=sys.stderr)
    conn.close()


def run_set(db_path: Path, queries, names: list[str], depth: int, scope=None) -> evaluate.EvalReport:
    conn = db.connect(db_path, create=False)
    embedder = embed.get_embedder()
    known = [b.id for b in store.list_books(conn)]
    for q in queries:
        q.book = evaluate.resolve_book(q.book, known) if q.book else None
    searchers = {n: evaluate.searcher(conn, embedder, replace(VARIANTS[n], k=depth, depth=depth)) for n in names}
    report = evaluate.evaluate(searchers, queries, scope)
    conn.close()
    return report


def nfcorpus(data: Path, cache: Path, names: list[str], limit: int, split: str = "test") -> dict:
    db_path = cache / "nfcorpus.db"
    if not db_path.exists():
        print("building the NFCorpus corpus (once)", file=sys.stderr)
        build(db_path, [data / "nfcorpus" / "corpus.jsonl"], ["nfcorpus"])
    queries = evaluate.load_queries(data / "nfcorpus" / "queries.jsonl", data / "nfcorpus" / "qrels" / f"{split}.tsv")
    queries = queries[:limit] if limit else queries
    report = run_set(db_path, queries, names, 300)
    print(f"\nNFCorpus {split}, {report.queries} queries (anchors: "
          + ", ".join(f"{k} {v}" for k, v in ANCHORS.items()) + ")")
    _print(report, ["ndcg@10", "recall@10", "recall@100", "mrr@10"])
    return _data(report)


def fm(data: Path, cache: Path, names: list[str], limit: int) -> dict:
    db_path = cache / "pdfs.db"
    if not db_path.exists():
        print("building the PDF corpus (once)", file=sys.stderr)
        pdfs = sorted((data / "pdfs").glob("*.pdf"))
        build(db_path, pdfs, [None] * len(pdfs))
    queries = evaluate.load_queries(ROOT / "bench" / "retrieval" / "fm4-25-11-questions.jsonl")
    queries = queries[:limit] if limit else queries
    report = run_set(db_path, queries, names, 20)
    print(f"\nFM 4-25.11, {report.queries} questions, all PDFs in one corpus")
    _print(report, ["hit@1", "hit@5", "mrr@10", "recall@10"])
    return _data(report)


def _print(report: evaluate.EvalReport, metrics: list[str]) -> None:
    groups = [("all", None)] + [(t, t) for t in sorted({t for r in report.modes for t in r.by_type})]
    cols = [f"{g} {m}" for g, _ in groups for m in metrics]
    print(f"{'variant':<20}" + "".join(f"{c:>16}" for c in cols) + f"{'s':>7}")
    for r in report.modes:
        vals = [(r.by_type.get(t, {}) if t else r.metrics).get(m, 0.0) for _, t in groups for m in metrics]
        print(f"{r.mode:<20}" + "".join(f"{v:>16.4f}" for v in vals) + f"{r.seconds:>7.1f}")


def _data(report: evaluate.EvalReport) -> dict:
    return {r.mode: {"metrics": r.metrics, "by_type": r.by_type, "seconds": r.seconds,
                     "per_query": [{k: v for k, v in row.items()} for row in r.per_query]}
            for r in report.modes}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "ragcli-bench")
    ap.add_argument("--only", choices=["nfcorpus", "fm"])
    ap.add_argument("--variants", default="base", help="'base', 'all', or comma-separated names")
    ap.add_argument("--split", default="test", help="NFCorpus qrels split: test | dev (tune on dev)")
    ap.add_argument("--limit", type=int, default=0, help="first N queries only (quick looks)")
    ap.add_argument("--out", type=Path, help="write every figure (and per-query rows) as JSON")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    if args.list:
        defaults = {m: SearchOptions(mode=m) for m in MODES}
        for name, opts in VARIANTS.items():
            changed = {f: getattr(opts, f) for f in opts.__dataclass_fields__
                       if getattr(opts, f) != getattr(defaults[opts.mode], f)}
            print(f"{name:<20} {opts.mode:<9} {changed or ''}")
        return 0
    names = SETS.get(args.variants) or (list(VARIANTS) if args.variants == "all" else args.variants.split(","))
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        ap.error(f"unknown variants: {', '.join(unknown)}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args.cache.mkdir(parents=True, exist_ok=True)
    out = {}
    if args.only in (None, "nfcorpus"):
        out["nfcorpus"] = nfcorpus(args.data, args.cache, names, args.limit, args.split)
    if args.only in (None, "fm"):
        out["fm"] = fm(args.data, args.cache, names, args.limit)
    if args.out:
        args.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
