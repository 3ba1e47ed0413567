"""Never silent: run `ragcli ask` (or any command) in a pseudo-terminal at 80 columns and report the
longest gap between two updates of the terminal (status line or text), the time to the first
update and to the first answer text, and what was on screen before the longest gap.

    python bench/performance/screen_gaps.py --db fm.db --model M.gguf --questions bench/retrieval/fm4-25-11-questions.jsonl \
        --limit 3 [--k 4 --max-tokens 160 --ctx 4096 --threads 1]

The gap is measured between two writes to the terminal (the spinner redraws count: they show the
phase is alive); the start-up (process start to the first write: Python and its imports) and the
exit (last write to the end) are reported apart.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))


SPINNER = re.compile(r"^\s*[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] ")  # the status line


def _first_text(s):
    """Seconds to the first answer text: the first screen with a line that is neither the status line
    nor on screen when the model started reading its prompt (the dimmed rewrite and book terms,
    wrapped over several lines at 80 columns)."""
    baseline = None
    for (t, _), snap in zip(s.chunks, s.snapshots):
        lines = {line.strip() for line in snap if line.strip() and not SPINNER.match(line)}
        if baseline is None:
            if any(SPINNER.match(line) and ("prompt tokens" in line or "reading the prompt" in line
                                            or "writing" in line) for line in snap):
                baseline = lines
            continue
        if lines - baseline:
            return t
    return None


def main() -> None:
    import terminal

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--db", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--questions", default=str(ROOT / "bench" / "retrieval" / "fm4-25-11-questions.jsonl"))
    p.add_argument("--ids", help="comma-separated question ids (default: the first --limit)")
    p.add_argument("--limit", type=int, default=3)
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--max-tokens", type=int, default=160)
    p.add_argument("--ctx", type=int, default=4096)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--verify", action="store_true")
    args = p.parse_args()
    qs = [json.loads(line) for line in open(args.questions) if line.strip()]
    if args.ids:
        wanted = args.ids.split(",")
        qs = [q for q in qs if q["id"] in wanted]
    qs = qs[:args.limit]
    rows = []
    for q in qs:
        cmd = ["ask", q["question"], "--db", args.db, "--model", args.model, "-k", str(args.k),
               "--max-tokens", str(args.max_tokens), "--ctx", str(args.ctx), "--threads", str(args.threads)]
        if args.verify:
            cmd.append("--verify")
        load = os.getloadavg()[0]
        s = terminal.run(cmd, columns=80)
        times = [t for t, _ in s.chunks]
        texts = [re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", c) for _, c in s.chunks]
        gaps = [(b - a, i) for i, (a, b) in enumerate(zip(times, times[1:]))]
        gap, at = max(gaps) if gaps else (0.0, 0)
        first_text = _first_text(s)
        row = {"id": q["id"], "rc": s.returncode, "load": round(load, 2), "elapsed": round(s.elapsed, 1),
               "start_up": round(times[0], 2) if times else None,
               "first_text": round(first_text, 1) if first_text else None,
               "longest_gap": round(gap, 2),
               "gap_at": round(times[at], 1) if times else None,
               "gap_status": next((line.strip() for line in (s.snapshots[at] if s.snapshots else [])
                                   if SPINNER.match(line)), "(no status line)"),
               "gap_after": texts[at][-50:] if texts else "", "gap_before": texts[at + 1][:50] if texts else "",
               "exit_after_last_update": round(s.elapsed - times[-1], 2) if times else None}
        rows.append(row)
        print(json.dumps(row, ensure_ascii=False), flush=True)
    print("longest gap between two terminal updates over all runs:", max(r["longest_gap"] for r in rows),
          "s | load average (1 min) at the starts:", min(r["load"] for r in rows), "-", max(r["load"] for r in rows), "|",
          "start-up to the first update: up to", max(r["start_up"] or 0 for r in rows), "s")


if __name__ == "__main__":
    main()
