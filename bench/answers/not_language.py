"""The `not_text` health check (answer/health.py) on every answer text of the labelled runs.

    python bench/not_language.py [--top 15]

Reads each distinct answer text of bench/labels (the runs' answers and withheld drafts, and the graded
texts), with its hand label where one exists, and prints how many texts the check flags by label
(`not_language`: the status check; `text_warnings`: the warning, which also fires on a run of
non-words), then the texts nearest the bars. The bar: no answer labelled correct is flagged.
"""
from __future__ import annotations

import argparse
import glob
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ragcli.answer import health  # noqa: E402


def texts() -> dict[str, tuple]:
    graded: dict[str, str] = {}
    for f in sorted(glob.glob(str(ROOT / "bench" / "answers" / "labels" / "*.jsonl"))):
        if f.endswith("-run.jsonl"):
            continue
        for line in open(f, encoding="utf-8"):
            r = json.loads(line)
            if r.get("answer") and r.get("label"):
                graded[r["answer"]] = r["label"]
    out: dict[str, tuple] = {}
    for f in sorted(glob.glob(str(ROOT / "bench" / "answers" / "labels" / "*-run.jsonl"))):
        labels = {}
        lf = Path(f.replace("-run.jsonl", ".jsonl"))
        if lf.exists():
            for line in open(lf, encoding="utf-8"):
                r = json.loads(line)
                if r.get("system", "ragcli") == "ragcli":
                    labels[r["id"]] = r["label"]
        for line in open(f, encoding="utf-8"):
            r = json.loads(line)
            x = r.get("ragcli") or {}
            a = x.get("answer") or x.get("withheld_draft") or ""
            if a:
                out[a] = (labels.get(r["id"]) or graded.get(a), Path(f).stem, r["id"])
    for a, lab in graded.items():
        out.setdefault(a, (lab, "graded", "?"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    rows = texts()
    status = Counter(v[0] for a, v in rows.items() if health.not_language(a))
    warned = Counter(v[0] for a, v in rows.items() if health.text_warnings(a))
    print(f"{len(rows)} distinct answer texts; by label: {dict(Counter(v[0] for v in rows.values()))}")
    print(f"not_language (withheld): {sum(status.values())} {dict(status)}")
    print(f"not_text warning: {sum(warned.values())} {dict(warned)}")
    measured = sorted(((health.language_measures(a), a, v) for a, v in rows.items()),
                      key=lambda z: -(z[0][1] if z[0][0] >= health.NOT_TEXT_MIN_TOKENS else 0))
    print(f"\nhighest non-word share (answers of {health.NOT_TEXT_MIN_TOKENS} tokens or more):")
    for (n, share, run), a, v in measured[:args.top]:
        print(f"  {share:.2f} run {run} tokens {n} {v[0]} {v[1]}:{v[2]} {a[:90]!r}")
    print("\nlongest runs of non-words:")
    for (n, share, run), a, v in sorted(measured, key=lambda z: -z[0][2])[:args.top]:
        print(f"  run {run} share {share:.2f} {v[0]} {v[1]}:{v[2]} {a[:90]!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
