"""Ingest through an embedding server vs the server's bare embedding time for the same texts.

    nice -n 10 python bench/performance/bench_embed_server.py --corpus ../shared/data/nfcorpus/corpus.jsonl \
        [--docs 800] [--rounds 2] [--threads 2]

The server is llama-cpp-python's (`python -m llama_cpp.server --embedding true`) on loopback, serving
the embedding GGUF the tests write (tests/tinyembed.py: 64 wide, 2 layers, random weights, a byte-level
vocabulary, so a 1,500-character abstract is about 1,300 tokens). Its cost per passage is of the order
of MiniLM's in process on this machine, so the engine's time is a realistic share of the whole.
`--size minilm` writes one at all-MiniLM-L6-v2's width and depth instead (384 wide, 6 layers): with
the byte-level vocabulary it ran at 87 tokens/s here, too slow for a bench run. The first --docs
records of the corpus go into one corpus.jsonl.

Per round, interleaved so machine noise hits both alike:
  bare    the texts ragcli embeds for those records (passages as chunked, then the book's vocabulary
          terms), POSTed to /v1/embeddings with ragcli's batch size and number of requests in flight
          by a plain httpx loop: the engine's time;
  ragcli  `python -m ragcli ingest corpus.jsonl --embed-model URL` into a new corpus, wall time of
          the whole process (start-up, parsing, chunking, embedding, FTS and vector writes).
Prints the ratio ragcli / bare (the bar: <= 1.1).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

BATCH, PARALLEL = 64, 4  # ragcli's defaults (models/embed_http.py); --batch sets both sides' batch


def start_server(model: Path, threads: int, log: Path) -> tuple[subprocess.Popen, str]:
    from conftest_http import _die_with_parent, _wait_ready, free_port

    port = free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
           "--port", str(port), "--embedding", "true", "--n_ctx", "2048", "--n_batch", "2048",
           "--n_ubatch", "2048", "--n_threads", str(threads), "--model_alias", "bench-embed"]
    proc = subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
    url = f"http://127.0.0.1:{port}/v1"
    _wait_ready(url, proc, log, seconds=900)  # a loaded machine: importing the server takes minutes
    return proc, url


def texts_of(corpus: Path) -> tuple[list[str], list[str]]:
    """The passage texts and vocabulary terms ragcli embeds for this file (same code path)."""
    from ragcli.ingest.pipeline import FileOptions, prepare

    prep = prepare(corpus, FileOptions(), None)
    return prep.texts, [t for t, _, _ in prep.terms]


def bare(url: str, texts: list[str]) -> float:
    from ragcli.models.openai_http import http_library

    client = http_library().Client(timeout=3600)
    batches = [texts[i:i + BATCH] for i in range(0, len(texts), BATCH)]

    def post(batch):
        r = client.post(url + "/embeddings", json={"model": "bench-embed", "input": batch})
        r.raise_for_status()
        return len(r.json()["data"])

    t0 = time.perf_counter()
    with ThreadPoolExecutor(PARALLEL) as pool:
        assert sum(pool.map(post, batches)) == len(texts)
    took = time.perf_counter() - t0
    client.close()
    return took


def ragcli_ingest(url: str, corpus: Path, work: Path, n: int) -> float:
    """ragcli through a profile that sets the same batch size and requests in flight as the bare loop."""
    db = work / f"run{n}.db"
    config = work / "config.toml"
    config.write_text(f'[models.bench]\nurl = "{url}"\nbatch_size = {BATCH}\nparallel = {PARALLEL}\ntimeout = 3600\n',
                      encoding="utf-8")
    env = {**os.environ, "RAGCLI_DB": str(db), "PYTHONPATH": str(ROOT), "RAGCLI_CONFIG": str(config)}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ragcli", "ingest", str(corpus), "--embed-model", "bench", "--json"],
                          env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(done.stderr)
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--docs", type=int, default=800)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--size", choices=["tiny", "minilm"], default="tiny")
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    global BATCH
    BATCH = args.batch
    from tinyembed import write_embed_gguf

    work = Path(tempfile.mkdtemp(prefix="bench-embed-server-"))
    size = {"n_embd": 384, "n_layer": 6, "n_ff": 1536, "n_head": 12, "n_head_kv": 12} if args.size == "minilm" else {}
    model = write_embed_gguf(work / f"{args.size}-embed.gguf", **size)
    corpus = work / "corpus.jsonl"
    with open(args.corpus, encoding="utf-8") as src, open(corpus, "w", encoding="utf-8") as out:
        for i, line in enumerate(src):
            if i >= args.docs:
                break
            out.write(line)
    passages, terms = texts_of(corpus)
    proc, url = start_server(model, args.threads, work / "server.log")
    try:
        bare(url, passages[:BATCH])  # warm-up
        rows = []
        for n in range(args.rounds):
            b_pass = bare(url, passages)
            b_all = b_pass + bare(url, terms)
            r = ragcli_ingest(url, corpus, work, n)
            rows.append((b_pass, b_all, r))
            print(f"round {n + 1}: bare passages {b_pass:.1f} s, bare passages+terms {b_all:.1f} s, "
                  f"ragcli ingest {r:.1f} s", file=sys.stderr, flush=True)
    finally:
        proc.terminate()
        proc.wait(10)
    b_pass = statistics.median(r[0] for r in rows)
    b_all = statistics.median(r[1] for r in rows)
    rag = statistics.median(r[2] for r in rows)
    print(f"\n{args.docs} NFCorpus records -> {len(passages)} passages + {len(terms)} vocabulary terms; "
          f"server threads {args.threads}, batch {BATCH}, {PARALLEL} in flight, median of {args.rounds} rounds\n")
    print("| measure | seconds | passages/s |")
    print("|---|---:|---:|")
    print(f"| bare server, passages only | {b_pass:.1f} | {len(passages) / b_pass:.0f} |")
    print(f"| bare server, passages + terms (every text ragcli embeds) | {b_all:.1f} | {len(passages) / b_all:.0f} |")
    print(f"| ragcli ingest (whole process) | {rag:.1f} | {len(passages) / rag:.0f} |")
    print(f"\nratio ragcli / bare (same texts: passages + terms): **{rag / b_all:.2f}x**; "
          f"vs passages only: {rag / b_pass:.2f}x")


if __name__ == "__main__":
    main()
