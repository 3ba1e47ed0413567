"""Reads while the model writes: the page's reads (a page image not rendered before, the conversation
list, one conversation, the books) timed on a `ragcli serve --parallel 1` whose tiny model is kept busy
writing a long forced answer (a GBNF grammar), against the same reads on the idle server, side by side
in one run. Bar (issue 46): each read <= 1 s while the model generates (before, reads shared the one
generation slot and waited for the answer: > 20 s with a real model).

    python bench/bench_web_reads.py [--db corpus.db] [--n 5] [--cache DIR]

Without --db the sample book is ingested into a temporary corpus first. Plain HTTP on 127.0.0.1 (no
browser): the page makes the same requests.
"""
from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench" / "performance"))

from serve_helpers import LONG  # noqa: E402
from web_common import forced_server  # noqa: E402

def get(port: int, path: str) -> tuple[int, float]:
    t = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("GET", path)
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status, time.perf_counter() - t


def ask(port: int, question: str, out: dict) -> None:
    """One page answer (the SSE of /web/api/ask), read to its end."""
    t = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", "/web/api/ask", body=json.dumps({"question": question}),
                 headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    while True:
        line = response.fp.readline()
        if not line:
            break
        if line.startswith(b"event: text") and "first" not in out:
            out["first"] = time.perf_counter() - t
    conn.close()
    out["end"] = time.perf_counter() - t


def generating(port: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", "/web/api/session")
    data = json.loads(conn.getresponse().read())
    conn.close()
    return data["generating"]


def reads(port: int, pid: int, page: int, cid: int) -> dict:
    return {"page image": get(port, f"/web/api/passages/{pid}/page.png?page={page}"),
            "conversations": get(port, "/web/api/conversations"),
            "conversation": get(port, f"/web/api/conversations/{cid}"),
            "books": get(port, "/books")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", type=Path)
    ap.add_argument("--n", type=int, default=5, help="reads of each kind while generating (and idle)")
    ap.add_argument("--cache", default=None, help="RAGCLI_CACHE (the exported embedding model)")
    args = ap.parse_args()

    server = forced_server("web-reads-", args.db, args.cache, LONG,
                           ["--ctx", "8192", "--max-tokens", "5600", "--threads", "1", "--parallel", "1"],
                           context=8192)  # room for a long answer
    port = server.port
    try:
        first = {}
        ask(port, "what happens after a craniotomy?", first)  # a conversation to read, and a warm model
        cid = json.loads(get_body(port, "/web/api/conversations"))[0]["id"]
        hits = json.loads(get_body(port, "/web/api/search?q=craniotomy&k=1"))
        pid = hits[0]["passage_id"]
        pages = json.loads(get_body(port, f"/web/api/passages/{pid}"))["page_count"]
        idle, busy, page = {}, {}, 1
        for _ in range(args.n):  # idle: each page image rendered for the first time
            for name, (status, seconds) in reads(port, pid, page, cid).items():
                assert status == 200, (name, status)
                idle.setdefault(name, []).append(seconds)
            page = page % pages + 1
        print(f"one answer alone: {first['end']:.2f} s (first text {first['first']:.2f} s)")
        for i in range(args.n):
            out: dict = {}
            writer = threading.Thread(target=ask, args=(port, f"how is the bone flap kept? ({i})", out))
            writer.start()
            while "first" not in out:  # the model is writing
                time.sleep(0.02)
            page = page % pages + 1
            timed = reads(port, pid, page, cid)
            still = generating(port)
            writer.join()
            if not still:
                raise SystemExit("the answer finished before the reads: make the forced text longer")
            for name, (status, seconds) in timed.items():
                assert status == 200, (name, status)
                busy.setdefault(name, []).append(seconds)
            print(f"run {i}: " + ", ".join(f"{k} {v[1]:.3f} s" for k, v in timed.items())
                  + f" (answer {out['end']:.2f} s)")
    finally:
        server.stop()
    print(f"{'read':<14} {'idle median':>12} {'while generating':>17} {'worst':>7}")
    worst = 0.0
    for name in busy:
        b, i = statistics.median(busy[name]), statistics.median(idle[name])
        worst = max(worst, max(busy[name]))
        print(f"{name:<14} {i:>11.3f}s {b:>16.3f}s {max(busy[name]):>6.3f}s")
    print("verdict:", "met" if worst <= 1.0 else "NOT met", f"(bar: each read <= 1 s while generating; worst {worst:.3f} s)")


def get_body(port: int, path: str) -> bytes:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("GET", path)
    data = conn.getresponse().read()
    conn.close()
    return data


if __name__ == "__main__":
    main()
