"""An OCR'd page's recognised lines made into the blocks and lines pdf.py builds from a text layer
(ocr.py reads the page image into `OcrLine`s): pieces on one baseline joined, lines grouped into blocks
in reading order, the text of drawings dropped, headings given their sizes, so the rest of ingest runs
unchanged on a scanned page."""
from __future__ import annotations

import re
from dataclasses import dataclass

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
