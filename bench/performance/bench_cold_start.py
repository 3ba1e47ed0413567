"""Cold start: new processes, side by side, in one run (min / median / max of --runs each).

    python bench/performance/bench_cold_start.py --db /tmp/synth-100k.db [--big-db /tmp/synth-1m.db] [--runs 5]

Round-robin, so machine noise hits every command alike:
  import sentence_transformers   the bar's yardstick: `python -c "import sentence_transformers"`
  ragcli --help / ragcli books   must import nothing heavy
  ragcli search QUERY            hybrid search on --db (the real ONNX query embedder)
  ragcli search (--big-db)       the same on the 1M corpus, for its peak RSS
Wall time and peak RSS (ru_maxrss of the child, from wait4) per process. Then the heavy modules
that `ragcli --help`, `ragcli books` and `ragcli search` leave in sys.modules.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
HEAVY = ("torch", "sentence_transformers", "transformers", "llama_cpp", "pymupdf", "numpy", "onnxruntime",
         "tokenizers", "pydantic", "rich")
QUERY = "how long can a tourniquet stay on before it damages the limb"


def run(argv: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one new process."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t
    if status != 0:
        raise SystemExit(f"{argv} failed: {proc.stderr.read().decode()[-2000:]}")
    proc.stderr.close()
    return seconds, usage.ru_maxrss / 1024


def heavy_modules(args: list[str]) -> list[str]:
    """Run the CLI in-process in a child and list the heavy modules it imported."""
    code = ("import sys, runpy\nsys.argv = ['ragcli'] + %r\n"
            "try:\n    runpy.run_module('ragcli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print(' '.join(m for m in %r if m in sys.modules), file=sys.stderr)") % (args, HEAVY)
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=env)
    return out.stderr.strip().splitlines()[-1].split() if out.stderr.strip() else []


def stats(xs: list[float], scale: float = 1.0, fmt: str = "{:.2f}") -> str:
    return " / ".join(fmt.format(x * scale) for x in (min(xs), statistics.median(xs), max(xs)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", type=Path, required=True, help="the 100k-passage corpus")
    ap.add_argument("--big-db", type=Path, help="the 1M-passage corpus (peak RSS of search)")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    cmds = {
        "python -c 'import sentence_transformers'": [PY, "-c", "import sentence_transformers"],
        "ragcli --help": [PY, "-m", "ragcli", "--help"],
        "ragcli books": [PY, "-m", "ragcli", "books", "--db", str(args.db)],
        f"ragcli search ({args.db.name})": [PY, "-m", "ragcli", "search", QUERY, "--db", str(args.db)],
    }
    if args.big_db:
        cmds[f"ragcli search ({args.big_db.name})"] = [PY, "-m", "ragcli", "search", QUERY, "--db", str(args.big_db)]
    for argv in cmds.values():  # warm the OS file cache and the ONNX export; not counted
        run(argv)
    times: dict[str, list[float]] = {name: [] for name in cmds}
    rss: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(args.runs):
        for name, argv in cmds.items():
            t, m = run(argv)
            times[name].append(t)
            rss[name].append(m)
    base = statistics.median(times["python -c 'import sentence_transformers'"])
    print(f"{args.runs} runs each, round-robin; python {sys.version.split()[0]}; {os.cpu_count()} cpus\n")
    print("| command | wall s (min / median / max) | median / ST import | peak RSS MB (max) |\n|---|---|---|---|")
    for name in cmds:
        print(f"| {name} | {stats(times[name])} | {statistics.median(times[name]) / base:.3f} | "
              f"{max(rss[name]):.0f} |")
    print()
    for label, cli_args in (("--help", ["--help"]), ("books", ["books", "--db", str(args.db)]),
                            ("search", ["search", QUERY, "--db", str(args.db)])):
        print(f"heavy modules after `ragcli {label}`: {' '.join(heavy_modules(cli_args)) or 'none'}")


if __name__ == "__main__":
    main()
