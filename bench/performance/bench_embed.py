"""Embedding benchmark: cold start, passages/s and NFCorpus nDCG@10, sentence-transformers vs ONNX.

    python bench/performance/bench_embed.py --nfcorpus ../shared/data/nfcorpus [--doc REPORT.md]

(a) cold process: `python -c "import sentence_transformers"` vs a process that imports ragcli.models.embed
    and embeds one query (5 runs each);
(b) passages/s on NFCorpus abstracts (title + text, cut to 1,600 characters): ST fp32 batch 32 vs
    the ONNX embedders (fp32 and int8), interleaved slice by slice;
(c) nDCG@10 on the NFCorpus test split, dense only (numpy exact search over all docs, title + text).
    Corpus vectors are cached in --cache (default: a folder in the temp dir).
Prints a markdown table and writes it (with the machine's facts) to --doc.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ragcli.models import embed  # noqa: E402

QUERY = "how long can a tourniquet stay on before it damages the limb?"
ONNX_BACKENDS = ("onnx", "onnx-int8")


def load_nfcorpus(folder: Path):
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").open(encoding="utf-8")]
    queries = {q["_id"]: q["text"] for q in map(json.loads, (folder / "queries.jsonl").open(encoding="utf-8"))}
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / "test.tsv").open(encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            qid, did, score = line.rstrip("\n").split("\t")
            qrels.setdefault(qid, {})[did] = int(score)
    return corpus, queries, qrels


def corpus_texts(corpus) -> list[str]:
    return [f"{d['title']} {d['text']}".strip() for d in corpus]


def get(backend: str):
    os.environ["RAGCLI_EMBED_BACKEND"] = backend
    try:
        return embed.get_embedder(embed.DEFAULT_MODEL)
    finally:
        del os.environ["RAGCLI_EMBED_BACKEND"]


# ------------------------------------------------------------------------------ (a) cold start


def time_process(code: str, env: dict) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def cold_start(runs: int) -> list[dict]:
    get("onnx-int8")  # make sure the export exists before timing anything
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    cases = [("python -c 'import sentence_transformers'", "import sentence_transformers", None)]
    for backend in ONNX_BACKENDS:
        code = ("import sys; from ragcli.models.embed import get_embedder; "
                f"get_embedder().embed([{QUERY!r}]); assert 'torch' not in sys.modules")
        cases.append((f"import ragcli.models.embed + 1 query ({backend})", code, backend))
    rows = []
    for label, code, backend in cases:
        run_env = dict(env, RAGCLI_EMBED_BACKEND=backend) if backend else env
        times = sorted(time_process(code, run_env) for _ in range(runs))
        rows.append({"case": label, "min": times[0], "median": statistics.median(times), "max": times[-1]})
    return rows


# ------------------------------------------------------------------------------ (b) throughput


def throughput(texts: list[str], rounds: int = 4) -> list[dict]:
    """Passages/s per backend. The texts are cut into `rounds` slices and every slice is embedded by
    each backend in turn, so load from other processes on the machine hits all backends alike."""
    backends = [*ONNX_BACKENDS, "st"]  # ONNX sessions first, before torch is imported
    embedders = {b: get(b) for b in backends}
    spent = dict.fromkeys(backends, 0.0)
    for e in embedders.values():
        e.embed(texts[:8])  # warm-up: first-run allocations
    step = math.ceil(len(texts) / rounds)
    for start in range(0, len(texts), step):
        chunk = texts[start:start + step]
        for b, e in embedders.items():
            t = time.perf_counter()
            e.embed(chunk)
            spent[b] += time.perf_counter() - t
    return [{"backend": b, "per_s": len(texts) / spent[b]} for b in ("st", *ONNX_BACKENDS)]


# ------------------------------------------------------------------------------ (c) nDCG@10


def corpus_vectors(backend: str, docs: list[str], cache: Path, chunk: int = 512) -> np.ndarray:
    """Embed the corpus in chunks, each saved in `cache`: an interrupted run resumes."""
    digest = hashlib.sha256("\x00".join(docs).encode()).hexdigest()[:12]
    cache.mkdir(parents=True, exist_ok=True)
    parts = []
    for start in range(0, len(docs), chunk):
        path = cache / f"nfcorpus-{digest}-{backend}-{start:05d}-{chunk}.npy"
        if not path.exists():
            print(f"{backend}: embedding NFCorpus docs {start}..{start + chunk} of {len(docs)}",
                  file=sys.stderr, flush=True)
            np.save(path, get(backend).embed(docs[start:start + chunk]))
        parts.append(np.load(path))
    return np.vstack(parts)


def ndcg_at_10(ranked: list[str], rels: dict[str, int]) -> float:
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(rels.values(), reverse=True)[:10]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def evaluate(backend: str, corpus, queries, qrels, cache: Path) -> float:
    ids = [d["_id"] for d in corpus]
    doc_vecs = corpus_vectors(backend, corpus_texts(corpus), cache)
    qids = [q for q in qrels if q in queries]
    q_vecs = get(backend).embed([queries[q] for q in qids])
    scores = q_vecs @ doc_vecs.T
    top = np.argsort(-scores, axis=1)[:, :10]
    return float(np.mean([ndcg_at_10([ids[j] for j in top[i]], qrels[q]) for i, q in enumerate(qids)]))


# ------------------------------------------------------------------------------ report


def machine() -> str:
    mem = next((line.split()[1] for line in open("/proc/meminfo") if line.startswith("MemTotal")), "0")
    import onnxruntime

    return (f"{len(os.sched_getaffinity(0))} cores ({platform.processor() or platform.machine()}), "
            f"{int(mem) / 2**20:.0f} GB RAM, no GPU; load average at start {os.getloadavg()[0]:.1f}; "
            f"Python {platform.python_version()}, onnxruntime {onnxruntime.__version__}")


def report(cold, speed, quality, n_texts: int, tokens: list[int], qrels_info: str) -> str:
    import torch

    st = next(r["per_s"] for r in speed if r["backend"] == "st")
    lines = [f"Machine: {machine()}, torch {torch.__version__}.",
             f"Model: {embed.DEFAULT_MODEL} (max 256 word pieces). Threads: torch "
             f"{torch.get_num_threads()}, onnxruntime intra-op {embed._threads()}. Batch 32 everywhere.",
             "", "### (a) Cold process (s)", "", "| process | min | median | max | vs ST import |",
             "|---|---|---|---|---|"]
    base = cold[0]["median"]
    for r in cold:
        lines.append(f"| {r['case']} | {r['min']:.2f} | {r['median']:.2f} | {r['max']:.2f} | "
                     f"{base / r['median']:.1f}x faster |" if r is not cold[0] else
                     f"| {r['case']} | {r['min']:.2f} | {r['median']:.2f} | {r['max']:.2f} | 1.0x |")
    lines += ["", f"### (b) Throughput: {n_texts} NFCorpus abstracts (title + text, <= 1,600 chars; "
              f"word pieces median {int(np.median(tokens))}, {np.mean(np.array(tokens) >= 256):.0%} cut at 256)",
              "", "| embedder | passages/s | vs ST fp32 |", "|---|---|---|"]
    lines += [f"| {r['backend']} | {r['per_s']:.1f} | {r['per_s'] / st:.2f}x |" for r in speed]
    if quality:
        ref = next(iter(quality))
        lines += ["", f"### (c) NFCorpus test, dense only, nDCG@10 ({qrels_info})", "",
                  f"| embedder | nDCG@10 | vs {ref} |", "|---|---|---|"]
        lines += [f"| {b} | {v:.4f} | {v - quality[ref]:+.4f} |" for b, v in quality.items()]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nfcorpus", type=Path, required=True, help="BEIR NFCorpus folder")
    ap.add_argument("--passages", type=int, default=800, help="passages for the throughput test")
    ap.add_argument("--runs", type=int, default=5, help="cold-process runs per case")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "ragcli-bench-embed")
    ap.add_argument("--doc", type=Path, help="also write the tables to this Markdown file")
    ap.add_argument("--quality", default="st,onnx,onnx-int8",
                    help="embedders for (c), comma-separated, the first is the reference ('' skips (c))")
    ap.add_argument("--prepare", action="store_true", help="only embed the corpus into --cache (resumable)")
    args = ap.parse_args()

    corpus, queries, qrels = load_nfcorpus(args.nfcorpus)
    if args.prepare:
        for b in ("onnx-int8", "onnx", "st"):
            corpus_vectors(b, corpus_texts(corpus), args.cache)
        return
    cold = cold_start(args.runs)
    texts = [f"{d['title']}. {d['text']}"[:1600] for d in corpus[: args.passages]]
    tokens = get("onnx").token_counts(texts)
    speed = throughput(texts)
    quality = {b: evaluate(b, corpus, queries, qrels, args.cache) for b in args.quality.split(",") if b}
    qrels_info = f"{sum(q in queries for q in qrels)} queries, {len(corpus):,} docs, exact numpy search"
    table = report(cold, speed, quality, len(texts), tokens, qrels_info)
    print(table)
    if args.doc:
        write_doc(args.doc, table, " ".join(sys.argv[1:]))


START, END = "<!-- bench_embed:start -->", "<!-- bench_embed:end -->"


def write_doc(path: Path, table: str, argv: str) -> None:
    """Replace the generated block of `path` (between the markers), keeping the notes around it."""
    block = f"{START}\nGenerated by `python bench/performance/bench_embed.py {argv}`.\n\n{table}\n{END}"
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if START in old and END in old:
        new = old[:old.index(START)] + block + old[old.index(END) + len(END):]
    else:
        new = "# Embedding benchmark\n\n" + block + "\n" + old
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    main()
