"""The sample book as an EPUB against the same book as a PDF: do its questions find the same sections?

    python bench/robustness/bench_ebook.py [--questions tests/fixtures/sample_book_questions.jsonl] [--mode hybrid]

Both files are ingested into one fresh corpus in a temp dir (the EPUB written by
corpus/build_sample_epub.py). A question's gold pages are physical pages of the PDF; the EPUB has other
pages, so both are scored by *section*: the gold sections are those of the PDF's passages on the gold
pages, and a question is a hit@k for a book when one of its first k hits (searched in that book only)
lies in a gold section (compared by the section's own title). The PDF's page hit@5 is printed as well.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", default=str(ROOT / "tests/fixtures/sample_book_questions.jsonl"))
    ap.add_argument("--mode", default="hybrid")
    ap.add_argument("-k", type=int, default=5)
    a = ap.parse_args()

    from ragcli.evaluate import searcher
    from ragcli.ingest import pipeline
    from ragcli.models import embed
    from ragcli.store import db

    spec = importlib.util.spec_from_file_location("build_sample_epub", ROOT / "corpus/build_sample_epub.py")
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    questions = [json.loads(line) for line in open(a.questions, encoding="utf-8") if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        epub = builder.build(Path(tmp) / "primer.epub")
        conn = db.connect(Path(tmp) / "corpus.db")
        embedder = embed.get_embedder(bulk=True)
        for book_id, path in (("pdf", ROOT / "corpus/cerebrovascular-neurosurgery-primer.pdf"), ("epub", epub)):
            r = pipeline.ingest_file(conn, path, embedder, book_id=book_id)
            print(f"{book_id}: {r.pages} pages, {r.sections} sections, {r.figures} figures, {r.passages} passages")
        run = searcher(conn, embedder, a.mode, depth=20)
        gold_rows = conn.execute("SELECT page_start, page_end, section_path FROM passages WHERE book_id = 'pdf'"
                                 ).fetchall()
        hits = {"pdf": 0, "epub": 0}
        page_hits = 0
        misses = []
        for q in questions:
            gold = {json.loads(sp)[-1] for s, e, sp in gold_rows if any(s <= p <= e for p in q["pages"])}
            for book in ("pdf", "epub"):
                top = run(q["question"], [book])[: a.k]
                ok = any(h.section_path and h.section_path[-1] in gold for h in top)
                hits[book] += ok
                if book == "epub" and not ok:
                    misses.append((q["id"], q["question"], sorted(gold), [h.section_path[-1] for h in top]))
                if book == "pdf":
                    page_hits += any(set(q["pages"]) & set(range(h.page_start, h.page_end + 1)) for h in top)
        n = len(questions)
        print(f"\n{n} questions, mode {a.mode}")
        print(f"| book | section hit@{a.k} |\n|---|---|")
        for book in ("pdf", "epub"):
            print(f"| {book} | {hits[book] / n:.3f} |")
        print(f"PDF page hit@{a.k}: {page_hits / n:.3f}; difference EPUB - PDF (sections): "
              f"{(hits['epub'] - hits['pdf']) / n:+.3f} (bar: within 0.05)")
        for m in misses:
            print("EPUB miss:", m)
        conn.close()


if __name__ == "__main__":
    main()
