"""What serving costs: the same questions answered by `ragcli serve` (HTTP, non-streamed and
streamed) and by `ragcli ask`'s own core call in process, on the same model file and settings,
interleaved in one run. Bar (issue 26): serve / ask <= 1.1 (median over questions of the ratio of
each way's fastest of --repeat runs: on a shared machine the fastest run is the one least slowed by
others).

Also shown: the `ragcli ask` command itself (a new process that loads the embedder and the model for
each question), which a served model saves.

    python bench/performance/bench_serve_overhead.py --db fm.db [--model tiny|PATH.gguf] [--n 6] [--cli 2]
           [--repeat 3] [--questions bench/answers/fm4-25-11-answers.jsonl] [--threads 2] [--max-tokens 256]

Traffic goes to 127.0.0.1 only. Run it with `nice -n 10`; absolute seconds depend on the load, the
ratios are taken side by side.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from serve_helpers import Server, server_env  # noqa: E402


def post(port: int, question: str, stream: bool) -> tuple[float, float, str]:
    """(seconds to the whole reply, seconds to the first text, the answer) of one chat completion."""
    import http.client

    body = {"model": "ragcli", "stream": stream, "messages": [{"role": "user", "content": question}]}
    t = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
    conn.request("POST", "/v1/chat/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    first = None
    if not stream:
        data = json.loads(r.read())
        total = time.perf_counter() - t
        return total, total, data["ragcli"]["answer"]
    answer, buf = "", b""
    while True:
        part = r.read1(4096)
        if not part:
            break
        buf += part
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            line = event.decode()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if first is None and chunk["choices"][0]["delta"].get("content"):
                first = time.perf_counter() - t
            if "ragcli" in chunk:
                answer = chunk["ragcli"]["answer"]
    conn.close()
    total = time.perf_counter() - t
    return total, first or total, answer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, type=Path)
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--questions", default=str(ROOT / "bench" / "answers" / "fm4-25-11-answers.jsonl"))
    ap.add_argument("--n", type=int, default=6, help="questions (answerable ones first)")
    ap.add_argument("--cli", type=int, default=2, help="questions also asked through the `ragcli ask` command")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each question by each way (the fastest counts)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--cache", default=None, help="RAGCLI_CACHE (the exported embedding model)")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="serve-overhead-"))
    db = work / "corpus.db"
    shutil.copyfile(args.db, db)
    model = args.model
    if model == "tiny":
        from tinymodel import write_tiny_gguf

        model = str(write_tiny_gguf(work / "tiny.gguf"))
    ctx = "2048" if args.model == "tiny" else "4096"
    rows = [json.loads(line) for line in open(args.questions, encoding="utf-8") if line.strip()]
    rows.sort(key=lambda r: not r.get("answerable", True))
    questions = [r["question"] for r in rows[:args.n]]
    cache = Path(args.cache) if args.cache else Path(tempfile.gettempdir()) / "ragcli-bench-cache"
    env = server_env(cache, work / "home")
    os.environ.update({k: env[k] for k in ("RAGCLI_CACHE", "HF_HUB_OFFLINE", "XDG_CONFIG_HOME")})

    from ragcli import ask as core
    from ragcli.models import embed
    from ragcli.models.factory import load_model
    from ragcli.store import db as dbmod

    settings = ["--ctx", ctx, "--threads", str(args.threads), "--max-tokens", str(args.max_tokens)]
    server = Server(["--db", db, "--model", model, *settings], env, work / "serve.log")
    try:
        conn = dbmod.connect(db, create=False)
        embedder = embed.get_embedder()
        llm = load_model(model, n_ctx=int(ctx), threads=args.threads)
        opts = core.AskOptions(max_tokens=args.max_tokens)
        core.ask(conn, embedder, questions[0], llm, opts)  # warm both sides once
        post(server.port, questions[0], False)
        print(f"model {Path(model).name}, --ctx {ctx} --threads {args.threads} --max-tokens {args.max_tokens}, "
              f"{len(questions)} questions, interleaved")
        print(f"{'q':>2} {'ask s':>7} {'serve s':>8} {'stream s':>9} {'1st text':>8} {'serve/ask':>9} "
              f"{'stream/ask':>10} same")
        ratios, stream_ratios, same = [], [], 0
        for i, q in enumerate(questions):
            runs = {"ask": [], "serve": [], "stream": [], "first": []}
            for _ in range(args.repeat):  # interleaved; the fastest of each is the least disturbed by load
                t = time.perf_counter()
                answer = core.ask(conn, embedder, q, llm, opts)
                runs["ask"].append(time.perf_counter() - t)
                served, _, served_answer = post(server.port, q, False)
                runs["serve"].append(served)
                streamed, first, _ = post(server.port, q, True)
                runs["stream"].append(streamed)
                runs["first"].append(first)
            in_process, served, streamed, first = (min(runs[k]) for k in ("ask", "serve", "stream", "first"))
            ratios.append(served / in_process)
            stream_ratios.append(streamed / in_process)
            same += served_answer == answer.answer
            print(f"{i:>2} {in_process:>7.2f} {served:>8.2f} {streamed:>9.2f} {first:>8.2f} {ratios[-1]:>9.2f} "
                  f"{stream_ratios[-1]:>10.2f} {'yes' if served_answer == answer.answer else 'no'}")
        cli_times = []
        for q in questions[:args.cli]:
            t = time.perf_counter()
            try:
                subprocess.run([sys.executable, "-m", "ragcli", "ask", q, "--json", "--db", str(db), "--model",
                                model, *settings], env=env, cwd=ROOT, capture_output=True, timeout=300, check=True,
                               stdin=subprocess.DEVNULL)
                cli_times.append(time.perf_counter() - t)
            except subprocess.TimeoutExpired:
                print("`ragcli ask` command: no answer in 300 s (not counted)")
    finally:
        server.stop()
    med, med_stream = statistics.median(ratios), statistics.median(stream_ratios)
    print(f"median serve/ask {med:.3f}, streamed/ask {med_stream:.3f} (bar <= 1.1); same answer {same}/{len(questions)}")
    if cli_times:
        print(f"`ragcli ask` command (new process each time): median {statistics.median(cli_times):.2f} s "
              f"over {len(cli_times)} questions")
    print("verdict:", "met" if max(med, med_stream) <= 1.1 else "NOT met")


if __name__ == "__main__":
    main()
