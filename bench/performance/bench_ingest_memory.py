"""Peak memory of ingesting a 2,000-page PDF, and whether the progress callback moves.

    python bench/performance/bench_ingest_memory.py --pdfs ../shared/data/pdfs --pdf /tmp/joined-2000.pdf \
        [--pages 2000] [--modes parse,ingest]

The big PDF is made once (if --pdf does not exist) by joining the real PDFs of --pdfs with pymupdf
insert_pdf, round after round, until it has --pages pages. Each mode runs in a new process:
  parse    ragcli.ingest.pdf.parse() alone
  ingest   ragcli.ingest.pipeline.ingest_file() into a new corpus in a temp dir, the real default embedder
Reported per mode: wall time, peak RSS (ru_maxrss, exact) and an RSS trace (psutil, every 0.5 s)
by phase, plus how often the progress callback fired in each phase and over what time span.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def make_pdf(folder: Path, out: Path, pages: int) -> None:
    import pymupdf

    sources = sorted(folder.glob("*.pdf"))
    joined = pymupdf.open()
    while joined.page_count < pages:
        for src in sources:
            with pymupdf.open(str(src)) as doc:
                take = min(doc.page_count, pages - joined.page_count)
                if take > 0:
                    joined.insert_pdf(doc, from_page=0, to_page=take - 1)
    joined.save(str(out), garbage=3, deflate=True)
    joined.close()


class Sampler(threading.Thread):
    """RSS every `every` seconds, tagged with the phase the progress callback last reported."""

    def __init__(self, every: float = 0.5):
        super().__init__(daemon=True)
        import psutil

        self.proc, self.every, self.phase, self.peaks, self.stop = psutil.Process(), every, "start", {}, False

    def run(self) -> None:
        while not self.stop:
            rss = self.proc.memory_info().rss / 2**20
            self.peaks[self.phase] = max(self.peaks.get(self.phase, 0.0), rss)
            time.sleep(self.every)


def child(mode: str, pdf: Path) -> dict:
    import resource

    sampler = Sampler()
    sampler.start()
    events: dict[str, list[float]] = {}
    t0 = time.perf_counter()

    def progress(phase: str, done: int, total: int) -> None:
        sampler.phase = phase
        events.setdefault(phase, []).append(time.perf_counter() - t0)

    if mode == "parse":
        from ragcli.ingest import pdf as pdfmod

        parsed = pdfmod.parse(pdf, on_page=lambda d, t: progress("pages", d, t))
        sampler.phase = "after parse"
        extra = {"pages": len(parsed.pages), "sections": len(parsed.sections)}
    else:
        from ragcli.store import db
        from ragcli.models import embed
        from ragcli.ingest import pipeline as ingest

        with tempfile.TemporaryDirectory() as tmp:
            conn = db.connect(Path(tmp) / "corpus.db")
            embedder = embed.get_embedder(bulk=True)  # as `ragcli ingest`
            sampler.phase = "model loaded"
            result = ingest.ingest_file(conn, pdf, embedder, progress=progress)
            extra = {"pages": result.pages, "passages": result.passages, "timings": result.timings}
    seconds = time.perf_counter() - t0
    sampler.stop = True
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    moves = {ph: {"updates": len(ts), "first_s": round(ts[0], 1), "last_s": round(ts[-1], 1)}
             for ph, ts in events.items()}
    return {"mode": mode, "seconds": round(seconds, 1), "peak_rss_mb": round(peak),
            "rss_by_phase_mb": {k: round(v) for k, v in sampler.peaks.items()}, "progress": moves, **extra}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pdfs", type=Path, help="folder of real PDFs to join (needed if --pdf is missing)")
    ap.add_argument("--pdf", type=Path, default=Path(tempfile.gettempdir()) / "ragcli-joined-2000.pdf")
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--modes", default="parse,ingest")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.pdf)))
        return
    if not args.pdf.exists():
        if not args.pdfs:
            raise SystemExit(f"{args.pdf} does not exist: give --pdfs FOLDER to build it")
        make_pdf(args.pdfs, args.pdf, args.pages)
    print(f"{args.pdf}: {args.pdf.stat().st_size / 1e6:.1f} MB")
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    for mode in args.modes.split(","):
        out = subprocess.run([sys.executable, __file__, "--child", mode, "--pdf", str(args.pdf)],
                             capture_output=True, text=True, env=env)
        if out.returncode:
            raise SystemExit(out.stderr[-3000:])
        print(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
