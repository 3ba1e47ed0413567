"""N concurrent `ragcli ask` processes against one OpenAI-compatible server.

    python bench/performance/bench_http_parallel.py --db fm.db [--n 8] [--model F.gguf | --url URL] [--question Q]

Without --url it starts llama-cpp-python's server (`python -m llama_cpp.server`) on a free loopback
port with --model (default: the tiny test GGUF, with a grammar that forces invalid citations into every
answer, so the citation filter is exercised in every process). Checks: every process answers (exit 0,
a finished reply: any status but incomplete), every citation in every answer is a listed source's
label, and the corpus file is byte-for-byte unchanged (ask writes nothing).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench" / "performance"))

FORCED = "Lift the bone flap [S1]. Swelling follows [S19] (p. 45). See [Source 7] or [S2, S30]."
LABEL = re.compile(r"\[([A-Z]\d+)\]")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--model", help="GGUF to serve (default: the tiny test model, forced output)")
    ap.add_argument("--url", help="an already running server instead")
    ap.add_argument("--question", default="How do I stop heavy bleeding from a leg wound?")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--server-arg", action="append", default=[],
                    help="passed to llama_cpp.server, e.g. --server-arg=--interrupt_requests --server-arg=False")
    ap.add_argument("--forced", action="store_true", help="with --url: the forced-citation grammar too "
                    "(a server that serves the tiny test model)")
    args = ap.parse_args()
    from bench_http import start_server
    from ragcli.models.grammars import forced_text_grammar

    before = hashlib.sha256(args.db.read_bytes()).hexdigest()
    proc, url, extra = None, args.url, []
    if url and args.forced:
        grammar = Path(tempfile.mkdtemp()) / "forced.gbnf"
        grammar.write_text(forced_text_grammar(FORCED))
        extra = ["--grammar-file", str(grammar)]
    if not url:
        model = args.model
        if not model:
            from tinymodel import write_tiny_gguf

            model = str(write_tiny_gguf(Path(tempfile.mkdtemp()) / "tiny.gguf"))
            grammar = Path(tempfile.mkdtemp()) / "forced.gbnf"
            grammar.write_text(forced_text_grammar(FORCED))
            extra = ["--grammar-file", str(grammar)]
        proc, url = start_server(model, args.threads, tuple(args.server_arg))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "ragcli", "ask", args.question, "--db", str(args.db), "--json", "--model", url,
           "--max-tokens", "96", *extra]
    try:
        t = time.perf_counter()
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                 for _ in range(args.n)]
        outs = [p.communicate(timeout=3600) for p in procs]
        wall = time.perf_counter() - t
    finally:
        if proc:
            proc.terminate()
            proc.wait(10)
    ok, invalid, removed, statuses = 0, 0, 0, []
    for p, (out, err) in zip(procs, outs):
        if p.returncode != 0:
            print(f"exit {p.returncode}: {err.strip()[-300:]}")
            continue
        data = json.loads(out)
        statuses.append(data["status"])
        given = {s["label"] for s in data["sources"]}
        invalid += len(set(LABEL.findall(data["answer"])) - given)
        removed += len(data["removed_citations"])
        ok += data["status"] != "incomplete"  # the reply finished (the grounding checks may still refuse it)
    after = hashlib.sha256(args.db.read_bytes()).hexdigest()
    print(f"{args.n} concurrent asks against {url}: {ok} answered ({', '.join(statuses)}), "
          f"{invalid} invalid citations in the output, {removed} invalid marks removed, "
          f"corpus {'unchanged' if after == before else 'CHANGED'}; {wall:.1f} s wall for all")
    return 0 if ok == args.n and invalid == 0 and after == before else 1


if __name__ == "__main__":
    raise SystemExit(main())
