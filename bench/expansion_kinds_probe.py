"""The rank of the first prompt passage on the answer's pages, with the book terms as today and with
headings of non-exposition sections (exercises, exams) left out of query expansion's terms. No generation.

    python bench/expansion_kinds_probe.py --db cert.db --answers bench/cert-answers.jsonl
"""
import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from bench_context import on_pages
from ragcli.ingest.kinds import NOT_EXPOSITION, section_kind, EXPOSITION
from ragcli.store import db
from ragcli.models import embed
from ragcli.search import expansion
from ragcli.search.pipeline import SearchOptions, mode_for, search
from ragcli.answer import context, prompt
emb = embed.get_embedder()
orig = expansion.choose
def filtered(cands, *a, **k):
    return orig([c for c in cands if section_kind((c[0],)) == EXPOSITION], *a, **k)
ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--db", required=True)
ap.add_argument("--answers", required=True)
args = ap.parse_args()
for qf in [args.answers]:
    conn = db.connect(Path(args.db), create=False)
    rows = [json.loads(l) for l in open(qf) if json.loads(l)['answerable']]
    res = {"today": [], "filtered": []}
    for r in rows:
        pos = {}
        for cfg in ("today", "filtered"):
            expansion.choose = orig if cfg == "today" else filtered
            so = SearchOptions(mode=mode_for(True, False), k=10, check_language=True, rerank_depth=20, skip_kinds=NOT_EXPOSITION)
            hits = search(conn, emb, r["question"], so).hits
            srcs = prompt.label_sources(hits)[:6]
            pos[cfg] = next((i for i, s in enumerate(srcs, 1) if on_pages(context.passages_of(s), set(r["pages"]))), None)
            res[cfg].append(pos[cfg])
        if pos["today"] != pos["filtered"]:
            print(r["id"], pos)
    for cfg, v in res.items():
        print(cfg, "first", sum(p == 1 for p in v), "in 6", sum(p is not None for p in v), "of", len(v))
