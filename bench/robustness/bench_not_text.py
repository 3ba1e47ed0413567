"""Text layers that are not text: which pages does `ingest/health.not_language` flag?

    python bench/robustness/bench_not_text.py --pdfs ../shared/data/pdfs [--out /tmp/not-text]

Three sets of pages, each read by `ragcli.ingest.pdf.read_pages` (the reader behind `ragcli ingest`,
OCR off, so the text layer itself is judged):
  clean     every page of every PDF of --pdfs: a flagged page is a false alarm (bar: 0)
  damaged   bench/robustness/bench_damaged.py's 15 damaged copies of each (truncated, flipped and swapped
            streams, zeroed xref): flags counted, and compared with the clean page's own flag
  shifted   the sample book (corpus/) with its fonts' ToUnicode CMap shifted by one (letters one
            code up, the space mapped to U+0001): every page with text should be flagged
Prints per file: pages, flagged, and the reasons seen.
"""
from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "robustness"))

SAMPLE = ROOT / "corpus" / "cerebrovascular-neurosurgery-primer.pdf"


def shifted_copy(src: Path, out: Path) -> Path:
    """`src` with every ToUnicode CMap's targets moved one code up and the space sent to U+0001: the
    glyphs (and so the page images) are unchanged, the extracted text is letters shifted by one with
    control characters between the words."""
    import pymupdf

    doc = pymupdf.open(src)
    cmaps = {int(x) for x in re.findall(rb"/ToUnicode\s+(\d+)\s+0\s+R", src.read_bytes())}
    for xref in cmaps:
        text = doc.xref_stream(xref).decode("latin-1")

        def one_up(value: str) -> str:
            v = int(value, 16)
            return "0001" if v == 0x20 else f"{v + 1:04x}"

        text = re.sub(r"(<[0-9a-fA-F]{4}>\s*<[0-9a-fA-F]{4}>\s*)<([0-9a-fA-F]{4})>",
                      lambda m: m.group(1) + "<" + one_up(m.group(2)) + ">", text)  # bfrange
        text = re.sub(r"^(<[0-9a-fA-F]{4}>\s*)<([0-9a-fA-F]{4})>$",
                      lambda m: m.group(1) + "<" + one_up(m.group(2)) + ">", text, flags=re.M)  # bfchar
        doc.update_stream(xref, text.encode("latin-1"))
    doc.save(out)
    return out


def flags(path: Path) -> tuple[int, list[int], Counter]:
    """(pages, flagged page numbers, reasons) of one PDF read by ragcli's reader (OCR off)."""
    import pymupdf

    from ragcli.ingest import pdf

    try:
        doc = pymupdf.open(path)
    except Exception:  # noqa: BLE001 - a copy MuPDF cannot open at all: ingest refuses it
        return 0, [], Counter()
    flagged, reasons, pages = [], Counter(), 0
    try:
        for page in pdf.read_pages(doc):
            pages += 1
            if page.health and page.health.not_text:
                flagged.append(page.number)
                reasons[re.sub(r"\d+", "N", page.health.not_text)] += 1
    except Exception:  # noqa: BLE001 - a copy the reader gives up on is refused by ingest, not judged here
        pass
    return pages, flagged, reasons


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pdfs", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=Path("/tmp/bench-not-text"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    from bench_damaged import damaged_copies

    total = {"clean": [0, 0], "damaged": [0, 0], "shifted": [0, 0]}
    print("set      file                                        pages  flagged  reasons")
    for src in sorted(args.pdfs.glob("*.pdf")) + [SAMPLE]:
        pages, flagged, reasons = flags(src)
        total["clean"][0] += pages
        total["clean"][1] += len(flagged)
        print(f"clean    {src.name[:42]:42}  {pages:5}  {len(flagged):7}  {dict(reasons) or ''}")
        copies = damaged_copies(src, args.out / src.stem)
        d_pages = d_flagged = 0
        d_reasons: Counter = Counter()
        for _kind, copy in copies:
            p, f, r = flags(copy)
            d_pages, d_flagged = d_pages + p, d_flagged + len(f)
            d_reasons.update(r)
        total["damaged"][0] += d_pages
        total["damaged"][1] += d_flagged
        print(f"damaged  {src.name[:34]:34} x{len(copies):2} copies  {d_pages:5}  {d_flagged:7}  {dict(d_reasons) or ''}")
    shifted = shifted_copy(SAMPLE, args.out / "primer-shifted.pdf")
    pages, flagged, reasons = flags(shifted)
    total["shifted"] = [pages, len(flagged)]
    print(f"shifted  {shifted.name[:42]:42}  {pages:5}  {len(flagged):7}  {dict(reasons)}")
    print("\n" + "; ".join(f"{k}: {v[1]} of {v[0]} pages flagged" for k, v in total.items()))


if __name__ == "__main__":
    main()
