"""A scanned book against its text-layer original: retrieval, printed page labels, ingest vs OCR time.

    python bench/robustness/bench_scanned_book.py ratio [--pages 11-30] [--engine tesseract]
    python bench/robustness/bench_scanned_book.py book --scan /tmp/fm-scanned.pdf [--pages 21-80] [--cache DIR]
        [--modes hybrid,expanded] [--title T] [--log FILE]

`ratio`: the chosen FM 4-25.11 pages are rendered as a scan (bench/robustness/make_scanned.py: 200 dpi, 1 degree,
grey 235, noise 5), then, side by side in one process, (1) OCR alone: every page rendered and read by
the engine, nothing else; (2) a full `ingest_file` of the same image-only PDF into a fresh corpus
(OCR cache off: a temp RAGCLI_CACHE). Printed: both times and their ratio (bar: ingest <= 1.2x OCR).

`book`: the text-layer FM 4-25.11 and the image-only rendering of the whole book (made with
make_scanned.py; its OCR is cached in --cache, RAGCLI_CACHE, by a first ingest or by this run) are
ingested as two books of one corpus; bench/retrieval/fm4-25-11-questions.jsonl is run against each (physical
pages are the same in both files): lay hit@5 and exact hit@1 per mode (bar: the scan within 0.03 of
the text layer), and the share of pages whose printed label matches (bar: >= 95%). With --pages the
scan is of those pages only: the text-layer book is then the same pages copied with their text layer
(without the book's outline), and only the questions whose pages all lie there are asked. The scan
is ingested first, with the time spent rendering and recognising pages (ocr.page_lines) measured
inside that ingest: on a run that recognised every page, ingest / OCR is printed (bar <= 1.2). Pages
already in the OCR cache are not recognised again, so a stopped run resumes where it stopped.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "robustness"))
SHARED = next((d / "shared" for d in (ROOT.parent, ROOT.parent.parent) if (d / "shared").is_dir()),
              ROOT.parent / "shared")
FM = SHARED / "data/pdfs/fm4-25-11-first-aid.pdf"


def ratio(a) -> None:
    import pymupdf

    import make_scanned
    from ragcli.ingest import ocr, pipeline
    from ragcli.models import embed
    from ragcli.store import db

    with tempfile.TemporaryDirectory() as tmp:
        scan = Path(tmp) / "scan.pdf"
        n = make_scanned.make(FM, scan, a.pages, 200, 1.0, 235, 5.0)
        embedder = embed.get_embedder(bulk=True)  # loaded before the clock starts (the ONNX cache)
        engine = ocr.make_engine(a.engine)
        t = time.perf_counter()
        with pymupdf.open(str(scan)) as doc:
            for page in doc:
                ocr.page_lines(page, engine)
        t_ocr = time.perf_counter() - t
        os.environ["RAGCLI_CACHE"] = str(Path(tmp) / "cache")  # no OCR cache: recognise again
        conn = db.connect(Path(tmp) / "corpus.db")
        t = time.perf_counter()
        r = pipeline.ingest_file(conn, scan, embedder, ocr="auto", ocr_engine=a.engine)
        t_ingest = time.perf_counter() - t
        conn.close()
    print(f"{n} scanned pages ({a.pages}), engine {a.engine}")
    print(f"| step | seconds | pages/s |\n|---|---|---|")
    print(f"| OCR alone (render + recognise) | {t_ocr:.1f} | {n / t_ocr:.3f} |")
    print(f"| ingest (OCR, layout, embed, store) | {t_ingest:.1f} | {n / t_ingest:.3f} |")
    print(f"ratio ingest / OCR alone: {t_ingest / t_ocr:.3f} (bar <= 1.2); "
          f"{r.ocr_pages} pages OCR'd, {r.passages} passages; ingest timings "
          + ", ".join(f"{k} {v:.1f}s" for k, v in r.timings.items()))


def book(a) -> None:
    from ragcli.evaluate import load_queries, run_eval
    from ragcli.ingest import pipeline
    from ragcli.models import embed
    from ragcli.store import corpus as store
    from ragcli.store import db

    if a.cache:  # OCR made earlier (another RAGCLI_CACHE): link its pages into this one's ocr/
        from ragcli.config import cache_dir

        for folder in (Path(a.cache) / "ocr").iterdir():
            target = cache_dir() / "ocr" / folder.name
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():
                target.symlink_to(folder.resolve())
    with tempfile.TemporaryDirectory() as tmp:
        text_pdf, questions = FM, Path(a.questions)
        if a.pages:  # a part of the book: its pages with their text layer, its questions, pages renumbered
            import json

            import make_scanned

            lo, hi = (int(x) for x in a.pages.split("-"))
            text_pdf = Path(tmp) / "text.pdf"
            make_scanned.make(FM, text_pdf, a.pages, text_pages=a.pages)
            questions = Path(tmp) / "questions.jsonl"
            kept = []
            for line in open(a.questions, encoding="utf-8"):
                q = json.loads(line)
                if lo <= min(q["pages"]) and max(q["pages"]) <= hi:
                    q["pages"] = [p - lo + 1 for p in q["pages"]]
                    kept.append(json.dumps(q))
            questions.write_text("\n".join(kept) + "\n", encoding="utf-8")
            print(f"pages {a.pages}: {len(kept)} questions whose pages all lie there")
        conn = db.connect(Path(tmp) / "corpus.db")
        embedder = embed.get_embedder(bulk=True)
        for book_id, path in (("scan", Path(a.scan)), ("text", text_pdf)):
            clock = _OcrClock(a.log) if book_id == "scan" else None
            t = time.perf_counter()
            try:
                r = pipeline.ingest_file(conn, path, embedder, book_id=book_id, ocr="auto", ocr_engine=a.engine,
                                         progress=clock.progress if clock else None, title=a.title or None)
            finally:
                if clock:
                    clock.close()
            took = time.perf_counter() - t
            print(f"{book_id}: title {r.title!r}; {r.pages} pages ({r.ocr_pages} OCR), {r.sections} sections, {r.figures} figures, "
                  f"{r.passages} passages in {took:.0f}s; ingest timings "
                  + ", ".join(f"{k} {v:.1f}s" for k, v in r.timings.items()))
            if clock:
                print(f"scan: {clock.pages} pages recognised in this run ({clock.seconds:.0f}s of render + "
                      f"recognise), {r.ocr_pages - clock.pages} from the OCR cache")
                if clock.pages == r.ocr_pages and clock.seconds:
                    print(f"ratio ingest / OCR alone (whole book, one run): {took / clock.seconds:.3f} (bar <= 1.2)")
                else:
                    print("ratio ingest / OCR alone: not measured in this run (pages came from the OCR cache)")
        text_labels, scan_labels = store.page_labels(conn, "text"), store.page_labels(conn, "scan")
        same = sum(text_labels.get(n) == label for n, label in scan_labels.items())
        print(f"printed page labels equal on {same}/{len(text_labels)} pages "
              f"({same / len(text_labels):.3f}; bar >= 0.95)")
        wrong = [(n, text_labels.get(n), lab) for n, lab in sorted(scan_labels.items()) if text_labels.get(n) != lab]
        print("differing (page, text, scan):", wrong[:30])
        rows = {}
        for book_id in ("text", "scan"):
            queries = load_queries(questions)
            for q in queries:
                q.book = book_id
            report = run_eval(conn, embedder, queries, a.modes.split(","), book_ids=[book_id])
            for m in report.modes:
                rows[(book_id, m.mode)] = m.by_type
        print(f"\n| mode | book | lay hit@5 | exact hit@1 |\n|---|---|---|---|")
        for mode in a.modes.split(","):
            for book_id in ("text", "scan"):
                bt = rows[(book_id, mode)]
                print(f"| {mode} | {book_id} | {bt.get('lay', {}).get('hit@5', float('nan')):.3f} | "
                      f"{bt.get('exact', {}).get('hit@1', float('nan')):.3f} |")
            d5 = rows[("scan", mode)]["lay"]["hit@5"] - rows[("text", mode)]["lay"]["hit@5"]
            d1 = rows[("scan", mode)]["exact"]["hit@1"] - rows[("text", mode)]["exact"]["hit@1"]
            print(f"| {mode} | scan - text | {d5:+.3f} | {d1:+.3f} |")
        conn.close()


class _OcrClock:
    """Times every page the engine renders and recognises (ocr.page_lines, the OCR alone) inside a real
    ingest, and logs progress to a file (a long run on a shared machine is watched with tail -f)."""

    def __init__(self, log: str) -> None:
        from ragcli.ingest import ocr

        self.pages, self.seconds, self._ocr = 0, 0.0, ocr
        self._log = open(log, "a", encoding="utf-8") if log else None
        self._orig = ocr.page_lines
        self._t0 = time.perf_counter()

        def timed(*args, **kw):
            t = time.perf_counter()
            try:
                return self._orig(*args, **kw)
            finally:
                self.pages += 1
                self.seconds += time.perf_counter() - t
        ocr.page_lines = timed

    def progress(self, phase: str, done: int, total: int) -> None:
        if self._log:
            self._log.write(f"{time.strftime('%H:%M:%S')} {phase} {done}/{total}; recognised {self.pages} "
                            f"in {self.seconds:.0f}s; elapsed {time.perf_counter() - self._t0:.0f}s\n")
            self._log.flush()

    def close(self) -> None:
        self._ocr.page_lines = self._orig
        if self._log:
            self._log.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("ratio")
    r.add_argument("--pages", default="11-30")
    r.add_argument("--engine", default="tesseract")
    b = sub.add_parser("book")
    b.add_argument("--scan", required=True)
    b.add_argument("--cache", default="")
    b.add_argument("--engine", default="tesseract")
    b.add_argument("--modes", default="hybrid,expanded")
    b.add_argument("--pages", default="", help="LO-HI: the scan holds only these pages of FM 4-25.11")
    b.add_argument("--title", default="", help="give both books this title (--title of ingest); default: "
                   "each its own, as ingest finds it (the title is embedded with every passage)")
    b.add_argument("--log", default="", help="append per-page progress to this file")
    b.add_argument("--questions", default=str(ROOT / "bench/retrieval/fm4-25-11-questions.jsonl"))
    a = ap.parse_args()
    ratio(a) if a.cmd == "ratio" else book(a)


if __name__ == "__main__":
    main()
