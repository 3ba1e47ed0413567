"""Load on `ragcli serve`: N concurrent /v1/chat/completions against --parallel P, a few rounds.

Bars (issue 26): every request answered (200) or refused with 503, none lost (every request gets a
response) or mixed (each reply answers its own question and cites only its own sources; a streamed
reply's text is its final answer's), the corpus unchanged, the server's memory flat across rounds.

    python bench/performance/bench_serve_load.py --db fm.db [--model tiny|PATH.gguf] [--n 16] [--parallel 2]
           [--queue 4] [--rounds 3] [--questions bench/retrieval/fm4-25-11-questions.jsonl]

The corpus is copied first (the server never writes, and the copy's fingerprint proves it). With
--model tiny (the default) the tiny random-weight GGUF of tests/tinymodel.py is written and served.
Traffic goes to 127.0.0.1 only; each round is bounded (a 300 s timeout per request).
"""
from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from serve_helpers import Server, server_env  # noqa: E402

LABEL = re.compile(r"\[([SF]\d+)\]")


def fingerprint(path: Path) -> str:
    from ragcli.store.db import sqlite3

    conn = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
    h = hashlib.sha256()
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND sql NOT LIKE 'CREATE VIRTUAL%' "
                                "ORDER BY name"):
        for row in sorted(repr(r) for r in conn.execute(f'SELECT * FROM "{name}"')):
            h.update(row.encode())
    conn.close()
    return h.hexdigest()


def request(port: int, question: str, stream: bool) -> tuple:
    """(status, final answer data or error, streamed text or None)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    body = {"model": "ragcli", "stream": stream, "messages": [{"role": "user", "content": question}]}
    conn.request("POST", "/v1/chat/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    raw = r.read().decode("utf-8")
    conn.close()
    if r.status != 200 or not stream:
        data = json.loads(raw)
        return r.status, data, None
    pieces, last = [], None
    for line in raw.splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            chunk = json.loads(line[6:])
            if "error" in chunk:
                return 500, chunk, None
            pieces.append(chunk["choices"][0]["delta"].get("content") or "")
            last = chunk
    return 200, {"ragcli": last["ragcli"], "choices": [{"message": {"content": "".join(pieces)}}]}, "".join(pieces)


def check(question: str, status: int, data: dict, streamed) -> str:
    """'' when the reply is its own question's and cites only its own sources; else what is wrong."""
    if status == 503:
        return "" if "busy" in data["error"]["message"] else "503 without the busy message"
    if status != 200:
        return f"status {status}: {data}"
    extra = data["ragcli"]
    text = data["choices"][0]["message"]["content"]
    if extra["follow_up"]["asked"] != question:
        return "the reply is another question's"
    if not set(LABEL.findall(text)) <= {s["label"] for s in extra["sources"]}:
        return "a label that is not one of its sources"
    if streamed is not None and extra["status"] != "no_answer" and extra["answer"] and extra["answer"] not in streamed:
        return "the streamed text is not its final answer"
    return ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, type=Path)
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--questions", default=str(ROOT / "bench" / "retrieval" / "fm4-25-11-questions.jsonl"))
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--queue", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache", default=None, help="RAGCLI_CACHE (the exported embedding model)")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="serve-load-"))
    db = work / "corpus.db"
    shutil.copyfile(args.db, db)
    model = args.model
    if model == "tiny":
        from tinymodel import write_tiny_gguf

        model = str(write_tiny_gguf(work / "tiny.gguf"))
    questions = [json.loads(line)["question"] for line in open(args.questions, encoding="utf-8") if line.strip()]
    cache = Path(args.cache) if args.cache else Path(tempfile.gettempdir()) / "ragcli-bench-cache"
    before = fingerprint(db)
    server = Server(["--db", db, "--model", model, "--ctx", "2048", "--max-tokens", "128",
                     "--parallel", args.parallel, "--queue", args.queue],
                    server_env(cache, work / "home"), work / "serve.log")
    try:
        request(server.port, questions[0], False)  # warm-up: every lazy load done before measuring
        rss = [server.rss_kb()]
        print(f"server {server.url}: --parallel {args.parallel} --queue {args.queue}, model {Path(model).name}, "
              f"{args.n} concurrent x {args.rounds} rounds; RSS after warm-up {rss[0] / 1024:.0f} MB")
        print(f"{'round':>5} {'200':>4} {'503':>4} {'lost':>4} {'wrong':>5} {'seconds':>8} {'RSS MB':>7}")
        problems: list[str] = []
        for rnd in range(args.rounds):
            asked = [questions[(rnd * args.n + i) % len(questions)] + f" ({rnd}.{i})" for i in range(args.n)]
            results: dict[int, tuple] = {}

            def one(i: int) -> None:
                try:
                    results[i] = request(server.port, asked[i], stream=bool(i % 2))
                except Exception as exc:  # noqa: BLE001 - counted as lost
                    results[i] = ("lost", repr(exc), None)

            threads = [threading.Thread(target=one, args=(i,)) for i in range(args.n)]
            t = time.perf_counter()
            for th in threads:
                th.start()
            for th in threads:
                th.join(600)
            seconds = time.perf_counter() - t
            lost = [i for i in range(args.n) if i not in results or results[i][0] == "lost"]
            wrong = [f"{i}: {why}" for i in range(args.n) if i not in lost
                     for why in [check(asked[i], *results[i])] if why]
            problems += [f"round {rnd} lost {i}" for i in lost] + [f"round {rnd} {w}" for w in wrong]
            ok = sum(1 for r in results.values() if r[0] == 200)
            busy = sum(1 for r in results.values() if r[0] == 503)
            rss.append(server.rss_kb())
            print(f"{rnd:>5} {ok:>4} {busy:>4} {len(lost):>4} {len(wrong):>5} {seconds:>8.1f} {rss[-1] / 1024:>7.0f}")
        after = fingerprint(db)
    finally:
        server.stop()
    growth = (rss[-1] - rss[1]) / 1024
    print(f"corpus unchanged: {before == after}; RSS round 1 -> round {args.rounds}: {growth:+.0f} MB "
          f"(after warm-up -> last: {(rss[-1] - rss[0]) / 1024:+.0f} MB)")
    for p in problems:
        print("PROBLEM", p)
    print("verdict:", "met" if not problems and before == after and growth < 50 else "NOT met")


if __name__ == "__main__":
    main()
