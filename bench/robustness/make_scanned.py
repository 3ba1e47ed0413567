"""Make a scanned-looking, image-only PDF from a text PDF (test data for OCR; issue 14).

    python bench/robustness/make_scanned.py IN.pdf OUT.pdf [--pages 1-5,9] [--dpi 200] [--noise 6]
        [--rotate 1.5] [--grey 230] [--text-pages 3,4] [--quality 70]

Each chosen page is rendered to a greyscale image at --dpi, optionally turned by --rotate degrees (as a
sheet fed a little askew), its paper darkened to --grey (0-255; 255 = white), and given Gaussian noise
of --noise grey levels; the image is written as the only content of a page of the original's size, as
JPEG at --quality. Pages listed in --text-pages are copied unchanged (with their text layer): a mixed
PDF. Nothing of the original's text layer or page labels survives on the scanned pages, as on a real
scan. Deterministic: the noise is seeded by the page number.
"""
from __future__ import annotations

import argparse
from pathlib import Path


def parse_pages(spec: str, count: int) -> list[int]:
    """"1-5,9" -> [0, 1, 2, 3, 4, 8] (0-based); "" -> every page."""
    if not spec:
        return list(range(count))
    out: list[int] = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        lo, hi = int(a), int(b or a)
        out.extend(n - 1 for n in range(lo, hi + 1) if 1 <= n <= count)
    return out


def scan_image(page, dpi: int = 200, rotate: float = 0.0, grey: int = 255, noise: float = 0.0,
               seed: int = 0):
    """One page as a scanned greyscale pixmap (pymupdf.Pixmap)."""
    import numpy as np
    import pymupdf

    zoom = dpi / 72.0
    matrix = pymupdf.Matrix(zoom, zoom)
    if rotate:
        matrix = matrix.prerotate(rotate)
    pix = page.get_pixmap(matrix=matrix, colorspace=pymupdf.csGRAY, alpha=False)
    img = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.stride)[:, : pix.width]
    img = img.astype(np.float32)
    if grey < 255:
        img = img * (grey / 255.0)
    if noise:
        rng = np.random.default_rng(seed)
        img = img + rng.normal(0.0, noise, img.shape)
    img = np.clip(img, 0, 255).astype(np.uint8)
    out = pymupdf.Pixmap(pymupdf.csGRAY, pix.width, pix.height, img.tobytes(), False)
    out.set_dpi(dpi, dpi)
    return out


def make(src: Path, dst: Path, pages: str = "", dpi: int = 200, rotate: float = 0.0, grey: int = 255,
         noise: float = 0.0, text_pages: str = "", quality: int = 70) -> int:
    """Write the image-only (or mixed) PDF; return its page count."""
    import pymupdf

    doc = pymupdf.open(str(src))
    keep_text = set(parse_pages(text_pages, doc.page_count)) if text_pages else set()
    out = pymupdf.open()
    for n in parse_pages(pages, doc.page_count):
        if n in keep_text:
            out.insert_pdf(doc, from_page=n, to_page=n)
            continue
        page = doc.load_page(n)
        pix = scan_image(page, dpi, rotate, grey, noise, seed=n)
        new = out.new_page(width=page.rect.width, height=page.rect.height)
        new.insert_image(new.rect, stream=pix.tobytes("jpeg", jpg_quality=quality))
    out.save(str(dst), garbage=3, deflate=True)
    count = out.page_count
    out.close()
    doc.close()
    return count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("--pages", default="", help="1-based pages and ranges, e.g. 1-5,9 (default: all)")
    ap.add_argument("--dpi", type=int, default=200)
    ap.add_argument("--rotate", type=float, default=0.0, help="degrees, e.g. 1.5")
    ap.add_argument("--grey", type=int, default=255, help="paper grey level, 255 = white")
    ap.add_argument("--noise", type=float, default=0.0, help="Gaussian noise, grey levels")
    ap.add_argument("--text-pages", default="", help="pages kept with their text layer (a mixed PDF)")
    ap.add_argument("--quality", type=int, default=70, help="JPEG quality")
    a = ap.parse_args()
    n = make(a.src, a.dst, a.pages, a.dpi, a.rotate, a.grey, a.noise, a.text_pages, a.quality)
    print(f"{a.dst}: {n} pages, {a.dst.stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
