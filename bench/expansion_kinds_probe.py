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
from bench_context import on_pages  # noqa: E402
from ragcli.answer import context, prompt  # noqa: E402
from ragcli.ingest.kinds import EXPOSITION, NOT_EXPOSITION, section_kind  # noqa: E402
from ragcli.models import embed  # noqa: E402
from ragcli.search import expansion  # noqa: E402
from ragcli.search.pipeline import SearchOptions, mode_for, search  # noqa: E402

TODAY = expansion.choose


def exposition_only(cands, *args, **kwargs):
    return TODAY([c for c in cands if section_kind((c[0],)) == EXPOSITION], *args, **kwargs)


def main() -> int:
    from ragcli.store import db

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--answers", required=True)
    args = ap.parse_args()
    conn = db.connect(Path(args.db), create=False)
    emb = embed.get_embedder()
    rows = [r for r in map(json.loads, open(args.answers, encoding="utf-8")) if r["answerable"]]
    ranks = {"today": [], "filtered": []}
    for r in rows:
        pos = {}
        for cfg, choose in (("today", TODAY), ("filtered", exposition_only)):
            expansion.choose = choose
            so = SearchOptions(mode=mode_for(True, False), k=10, check_language=True, rerank_depth=20,
                               skip_kinds=NOT_EXPOSITION)
            sources = prompt.label_sources(search(conn, emb, r["question"], so).hits)[:prompt.ANSWER_SOURCES]
            pos[cfg] = next((i for i, s in enumerate(sources, 1)
                             if on_pages(context.passages_of(s), set(r["pages"]))), None)
            ranks[cfg].append(pos[cfg])
        if pos["today"] != pos["filtered"]:
            print(r["id"], pos)
    for cfg, v in ranks.items():
        print(cfg, "first", sum(p == 1 for p in v), "in 6", sum(p is not None for p in v), "of", len(v))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
