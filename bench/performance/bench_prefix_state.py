"""The system prompt's saved llama.cpp state (issue 34): `ragcli ask` in fresh processes, the prefix
cache off, then on (after one warm-up ask that saves the state), side by side.

    python bench/performance/bench_prefix_state.py --db cert.db --model qwen2.5-0.5b.gguf --threads 1

Prints, per ask, the prompt tokens, those evaluated, those loaded from the file and the wall time
of the process; whether each answer's text is the same off and on; then the medians and their ratio. Wall time on a shared machine is noisy: the
evaluated-token counts are exact.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

QUESTIONS = ("What should you do for a severe burn?", "How do you treat a sprained ankle?",
             "What are the signs of shock?")
WARMUP = "What is first aid?"


def answer_stats(doc) -> dict:
    """The model call's statistics in `ask --json` (the call with prompt_evaluated)."""
    if isinstance(doc, dict):
        if "prompt_evaluated" in doc:
            return doc
        for value in doc.values():
            found = answer_stats(value)
            if found:
                return found
    elif isinstance(doc, list):
        for value in doc:
            found = answer_stats(value)
            if found:
                return found
    return {}


def ask(question: str, args, env: dict) -> dict:
    cmd = [sys.executable, "-m", "ragcli", "ask", question, "--db", args.db, "--model", args.model,
           "--threads", str(args.threads), "--json"]
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"ask failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    doc = json.loads(done.stdout)
    st = answer_stats(doc)
    return {"seconds": seconds, "answer": doc.get("answer"), **{k: st.get(k) for k in
                                   ("prompt_tokens", "prompt_evaluated", "prompt_cached", "prompt_from_disk")}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    env = dict(os.environ, RAGCLI_PREFIX_CACHE="0")
    rows = {"off": [ask(q, args, env) for q in QUESTIONS]}
    # the states go to RAGCLI_CACHE's prefix-states/ (the ONNX embedding export lives there too)
    env = dict(os.environ, RAGCLI_PREFIX_CACHE="1")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from ragcli.models import prefix_cache
    folder = prefix_cache.folder()
    warm = ask(WARMUP, args, env)  # saves the state (or loads one an earlier run saved)
    rows["on"] = [ask(q, args, env) for q in QUESTIONS]
    print(f"warm-up: {dict(warm, answer=None)}")
    for mode, runs in rows.items():
        for q, r in zip(QUESTIONS, runs):
            print(f"{mode:3} | {r['prompt_tokens']:5} tokens | evaluated {r['prompt_evaluated']:5} | "
                  f"from disk {r['prompt_from_disk']} | {r['seconds']:6.1f} s | {q}")
    same = sum(a["answer"] == b["answer"] for a, b in zip(rows["off"], rows["on"]))
    print(f"same answer text off and on: {same} of {len(QUESTIONS)}")
    med = {m: (statistics.median(r["prompt_evaluated"] for r in runs), statistics.median(r["seconds"] for r in runs))
           for m, runs in rows.items()}
    print(f"median evaluated: off {med['off'][0]:.0f}, on {med['on'][0]:.0f} "
          f"(on/off {med['on'][0] / med['off'][0]:.2f}); median seconds: off {med['off'][1]:.1f}, "
          f"on {med['on'][1]:.1f} (on/off {med['on'][1] / med['off'][1]:.2f})")
    sizes = [p.stat().st_size for p in folder.glob("*.state")] if folder.exists() else []
    print(f"state files in {folder}: {len(sizes)}, {sum(sizes) / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
