"""Without generating: for each answerable question, the position in the answer prompt of the first
source holding a passage on the question's listed pages, under four configurations: with the model
rewrite that a bench_answers run recorded (replayed, no model loaded) or without one, and D86's blocks
(neighbours joined) or single passages (decision D102).

    python bench/prompt_pages_probe.py --db FM.db --answers bench/fm4-25-11-answers.jsonl \
        --run RUN.jsonl [--norew-run RUN2.jsonl] [--out probe.json]

A record's `rewrite` is `answer.expanded_query`: the model's rewrite where one ran, else the book terms.
With --norew-run (a run without the rewrite), a question whose two records show the same text had no
model rewrite, and is probed without one in both columns.
"""
import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from bench_context import on_pages
from ragcli.ask import _adjacent
from ragcli.store import db
from ragcli.models import embed
from ragcli.search import pipeline
from ragcli.search.pipeline import SearchOptions, mode_for, search
from ragcli.answer import context, prompt
from ragcli.ingest.kinds import NOT_EXPOSITION

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--db", required=True)
ap.add_argument("--answers", required=True)
ap.add_argument("--run", help="a bench_answers run with the model rewrite (its records' rewrites are replayed)")
ap.add_argument("--norew-run", help="a run without it (tells which records hold a real rewrite)")
ap.add_argument("--set", default="answerable")
ap.add_argument("--out")
a = ap.parse_args()
conn = db.connect(Path(a.db), create=False)
emb = embed.get_embedder()
rows = [json.loads(l) for l in open(a.answers)]
rows = [r for r in rows if r["answerable"] == (a.set == "answerable")]
rew = {}
if a.run:
    for l in open(a.run):
        d = json.loads(l); rew[d["id"]] = d["ragcli"].get("rewrite")
if a.norew_run:
    for l in open(a.norew_run):
        d = json.loads(l)
        if rew.get(d["id"]) == d["ragcli"].get("rewrite"):
            rew[d["id"]] = None  # the book terms, not a model rewrite
cur = {}
pipeline.model_rewrite = lambda *args, **kw: cur.get("text")


def adj(h):
    return _adjacent(conn, h)


out = []
for r in rows:
    pages = set(r.get("pages") or [])
    res = {}
    for rw in ("rew", "norew"):
        cur["text"] = rew.get(r["id"]) if rw == "rew" else None
        so = SearchOptions(mode=mode_for(True, False), k=10, check_language=True, rerank_depth=20, skip_kinds=NOT_EXPOSITION)
        result = search(conn, emb, r["question"], so, model=object() if rw == "rew" else None)
        for cfg in ("blocks", "p6"):
            if cfg == "blocks":
                blocks, rest = context.build(result.hits, adj, budget=700, max_blocks=5, block_tokens=260,
                                             max_neighbours=1)  # D86's blocks
                srcs = blocks[:prompt.ANSWER_SOURCES]
            else:
                srcs = prompt.label_sources(result.hits)[:6]
            pos = next((i for i, s in enumerate(srcs, 1) if on_pages(context.passages_of(s), pages)), None)
            toks = sum(context.estimate_tokens(s.hit.text) for s in srcs)
            res[f"{rw}-{cfg}"] = (pos, toks)
    out.append({"id": r["id"], **{k: v[0] for k, v in res.items()}, **{k + "-t": v[1] for k, v in res.items()}})
    print(r["id"], res, flush=True)
for k in ("rew-blocks", "rew-p6", "norew-blocks", "norew-p6"):
    vals = [o[k] for o in out]
    print(k, "in prompt", sum(v is not None for v in vals), "/", len(vals), "at 1:", sum(v == 1 for v in vals),
          "median tokens", sorted(o[k + "-t"] for o in out)[len(out)//2])
if a.out:
    json.dump(out, open(a.out, "w"))
