"""Could the page release an answer sentence by sentence, each as it passes its own support check,
instead of showing the whole draft as a draft until the verdict? Measured on answers the 0.5B/1.5B
models wrote in earlier labelled runs (bench/labels/*-run.jsonl: each withheld draft's text and the
passage behind each label), no generation needed:

- for each withheld draft, its sentences scored alone against the passages they cite
  (answer/grounding.score, as the answer's own check does): a sentence that passes (support
  `supported` or `weak`) would have been shown as checked, then taken back when the whole-answer
  verdict (not backed, off the question, far passages, an amount missing...) withheld the answer;
- what one sentence's check costs alone (the time a sentence-wise release would add per sentence).

    python bench/bench_sentence_release.py --db fm4-25-11.db --run bench/labels/fm44-s12-run.jsonl
    python bench/bench_sentence_release.py --db cert.db --run bench/labels/cert-s14-o0-run.jsonl

A label's passage is taken from the run's `sources` ("S1 p.18 Section #73": passage 73); a row whose
passages do not match the corpus given (another build of it) is skipped and counted.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SOURCE = re.compile(r"^(S\d+) p\.(\S+) (.*) #(\d+)$")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True)
    ap.add_argument("--run", required=True, action="append", help="a labelled run (repeatable)")
    args = ap.parse_args()

    from ragcli.answer import grounding
    from ragcli.models import embed
    from ragcli.store import corpus, db
    from ragcli.types import Source

    conn = db.connect(Path(args.db), create=False)
    embedder = embed.get_embedder()
    withheld = skipped = with_passing = sentences_total = sentences_passing = 0
    checks: list[float] = []
    reasons: dict = {}
    for run in args.run:
        for line in open(run, encoding="utf-8"):
            row = json.loads(line)
            out = row.get("ragcli") or {}
            if out.get("status") != "no_answer" or not (out.get("answer") or "").strip():
                continue
            labels = {}
            for s in out.get("sources") or []:
                m = SOURCE.match(s)
                if m:
                    labels[m.group(1)] = (int(m.group(4)), m.group(2), m.group(3))
            hits = corpus.fetch_hits(conn, [pid for pid, _, _ in labels.values()])
            ok = all(pid in hits and hits[pid].page_label == page for pid, page, _ in labels.values())
            if not labels or not ok:
                skipped += 1
                continue
            sources = [Source(label=lab, hit=hits[pid]) for lab, (pid, _, _) in labels.items()]
            claims = grounding.score(out["answer"], sources, embedder)
            factual = [c for c in claims if c.support != "not_factual"]
            passing = [c for c in factual if c.support in ("supported", "weak")]
            for c in factual[:2]:
                t = time.perf_counter()
                grounding.score(c.text, sources, embedder)
                checks.append(time.perf_counter() - t)
            withheld += 1
            sentences_total += len(factual)
            sentences_passing += len(passing)
            why = out.get("why") or "?"
            reasons.setdefault(why, [0, 0])
            reasons[why][0] += 1
            if passing:
                with_passing += 1
                reasons[why][1] += 1
            print(f"{row.get('id')}: {why}: {len(passing)}/{len(factual)} sentences pass alone"
                  f"{': ' + passing[0].text[:70] if passing else ''}")
    print(f"withheld drafts {withheld} (skipped {skipped}: passages not in this corpus build); with a sentence "
          f"passing its own check {with_passing}; sentences {sentences_passing}/{sentences_total} would have been "
          f"shown as checked, then taken back")
    print("by reason (withheld, with a passing sentence): " + ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in reasons.items()))
    if checks:
        print(f"one sentence's check alone: median {statistics.median(checks) * 1000:.0f} ms (n={len(checks)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
