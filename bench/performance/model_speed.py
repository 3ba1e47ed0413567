"""Writing speed of GGUF chat models on this machine, and the bytes a core reads per second it implies
(the figure behind models/choice.py's CORE_GB_PER_S, docs/decisions.md D121).

    python bench/model_speed.py --threads 1 MODEL.gguf [MODEL.gguf ...]

For each model, side by side in one run: a 64-token greedy completion after a warm-up; prints tokens/s
and tokens/s x file size / threads (GB a core reads per second while generating). Run on a quiet
machine for the machine's figure; on a shared one the figures are lower and say so.
"""
from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--tokens", type=int, default=64)
    args = parser.parse_args()
    from llama_cpp import Llama

    print("model\tthreads\ttokens\ttokens/s\tGB/s a core\tload average")
    for path in args.models:
        model = Llama(path, n_ctx=512, n_threads=args.threads, verbose=False)
        model("Hello", max_tokens=4)
        start = time.perf_counter()
        out = model("Write about the history of bridges in Europe.", max_tokens=args.tokens, temperature=0)
        seconds = time.perf_counter() - start
        made = out["usage"]["completion_tokens"]
        rate = made / seconds
        size = os.path.getsize(path) / 1e9
        print(f"{os.path.basename(path)}\t{args.threads}\t{made}\t{rate:.2f}\t{rate * size / args.threads:.2f}\t"
              f"{os.getloadavg()[0]:.1f}", flush=True)
        del model


if __name__ == "__main__":
    main()
