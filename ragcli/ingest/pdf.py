"""PDF -> pages, sections, figures with pymupdf. No database here.

Pages are read one at a time (a 2,000-page book streams), lines repeated in the top or bottom band of
many pages (running headers, footers) are dropped, printed page labels are kept beside physical pages,
sections come from the outline (refined by detected headings when it is shallow) or from headings
found by font size and weight, or else one per page.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional

from ragcli.errors import InputError
from ragcli.ingest import health, ocr
from ragcli.ingest.sections import build_sections
from ragcli.text import file_sha256
from ragcli.types import Figure, Page, ParsedBook, Section

# pymupdf is imported where a PDF is opened (it takes seconds): importing this module stays cheap.

RUNNING_PAGES = 6  # a band line repeated on this many pages (fewer in a short book) is a running line
BAND = 0.08  # top/bottom fraction of the page where running headers and footers live
CAPTION_RE = re.compile(
    r"^\s*(?P<word>Figure|FIGURE|Fig\.|FIG\.|Fig)\s*(?P<num>[A-Z]?\d+(?:[-.]\d+)*[a-z]?)\s*[.:\-–—]?\s*(?P<rest>.*)",
    re.S,
)
PAGE_NUM_RE = re.compile(r"^(?:page\s+)?([A-Z]?-?\d{1,4}(?:-\d{1,4})?|[ivxlcdm]{1,7})(?:\s+of\s+\d{1,5})?$", re.I)
PAGE_OF_RE = re.compile(r"\bpage\s+(\d{1,4})\s+of\s+\d{1,5}\b", re.I)  # "Page 2 of 10" inside a header
ARTICLE_KIND_RE = re.compile(r"^(?:research|review|original|short)\s+(?:article|paper)\s+", re.I)
SENTENCE_WORDS_RE = re.compile(r"\b(?:must|should|shall|will|cannot|can|may|do not|don't|never|always|is|are)\b", re.I)
NOT_HEADINGS = {"page", "warning", "danger", "note", "caution", "notes", "contents", "table of contents"}


@dataclass
class Line:
    text: str
    y0: float
    y1: float
    size: float
    bold: bool


@dataclass
class Block:
    page: int  # physical, 1-based
    y0: float
    lines: list[Line]
    kind: str = "text"

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)


@dataclass
class RawPage:
    number: int
    height: float
    blocks: list[Block]
    images: list[tuple[float, float, float, float]] = field(default_factory=list)
    pdf_label: str = ""
    health: Optional[health.PageHealth] = None
    ocr: str = ""  # the OCR engine that read this page; "" when its text layer was used


def mupdf_open(path: Path, filetype: str):
    """pymupdf.open of `path`; a name that is not UTF-8 (bytes the file system allows, kept by Python
    as lone surrogates) is opened from its bytes: MuPDF takes file names as UTF-8 only."""
    import pymupdf

    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return pymupdf.open(stream=Path(path).read_bytes(), filetype=filetype)
    return pymupdf.open(str(path), filetype=filetype)

def open_pdf(path: Path, password: Optional[str] = None):
    """Open a PDF or raise InputError with a clear reason."""
    import pymupdf

    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise InputError(f"{path}: is a directory")
    with open(path, "rb") as fh:
        head = fh.read(1024)
    if b"%PDF-" not in head:
        raise InputError(f"{path}: not a PDF file")
    try:
        doc = mupdf_open(path, "pdf")
    except Exception as exc:  # pymupdf raises several types for damaged files
        raise InputError(f"{path}: cannot be read as a PDF ({exc})") from exc
    if doc.needs_pass:
        if not password:
            raise InputError(f"{path}: the PDF is encrypted; give its password with --password")
        if not doc.authenticate(password):
            raise InputError(f"{path}: wrong password for the encrypted PDF")
    if doc.page_count == 0:
        raise InputError(f"{path}: the PDF has no pages (truncated or damaged)")
    return doc


CELL_GAP = 2.5  # a blank wider than this many font sizes between two runs of one line parts table cells
TABLE_HEADER_WORDS = 6


def _read_lines(block: dict) -> list[Line]:
    """Lines of a text block; spans on the same baseline are joined. A table's header row (a short bold
    line whose words stand in cells apart: "Step    Action") is dropped: it is neither a heading nor
    text a reader needs in a passage, and the rows under it keep their own words."""
    out: list[Line] = []
    cells = []  # per line in out: its runs stand apart like table cells
    last_x1 = []
    for line in block.get("lines", []):
        spans = [s for s in line["spans"] if s["text"].strip()]
        if not spans:
            continue
        text = "".join(s["text"] for s in line["spans"]).strip()
        bold = all((s["flags"] & 16) or "bold" in s["font"].lower() or "black" in s["font"].lower()
                   for s in spans)
        size = max(s["size"] for s in spans)
        apart = any(b["bbox"][0] - a["bbox"][2] > CELL_GAP * size for a, b in zip(spans, spans[1:]))
        y0, y1 = line["bbox"][1], line["bbox"][3]
        if out and abs(out[-1].y0 - y0) < 2:  # same visual line, split into two pymupdf lines
            prev = out[-1]
            out[-1] = Line(prev.text + " " + text, prev.y0, max(prev.y1, y1), max(prev.size, size),
                           prev.bold and bold)
            cells[-1] = cells[-1] or apart or spans[0]["bbox"][0] - last_x1[-1] > CELL_GAP * size
            last_x1[-1] = spans[-1]["bbox"][2]
        else:
            out.append(Line(text, y0, y1, size, bold))
            cells.append(apart)
            last_x1.append(spans[-1]["bbox"][2])
    return [line for line, c in zip(out, cells)
            if not (c and line.bold and len(line.text.split()) <= TABLE_HEADER_WORDS)]


def read_pages(doc, on_page: Optional[Callable[[int], None]] = None, ocr_mode: str = "never",
               ocr_engine: Optional[Callable[[], object]] = None, file_hash: str = "") -> Iterator[RawPage]:
    """Yield each page's text blocks with positions, fonts and image boxes, one page at a time, with
    its read health (what MuPDF reported about its content). A page MuPDF cannot load at all is
    yielded empty and unreadable: the rest of the book still goes in, with a warning. A page without
    a usable text layer (`ocr_mode` auto) or every page (always) is rendered and read by the OCR
    engine that `ocr_engine()` gives (made once, on the first such page); with the file's hash,
    recognised pages are cached (ocr.PageCache)."""
    engine = cache = None
    health.take_messages()
    for index in range(doc.page_count):
        try:
            page = doc.load_page(index)
            data = page.get_text("dict", flags=0)
            images = [tuple(info["bbox"]) for info in page.get_image_info()]
            label = (page.get_label() or "") if doc.is_pdf else ""
            height, width = page.rect.height, page.rect.width
            messages = health.take_messages()
            problems = health.content_problems(messages, doc, page) if doc.is_pdf else []
        except Exception as exc:  # pymupdf raises several types for damaged pages
            health.take_messages()
            state = health.PageHealth(index + 1, problems=[f"the page cannot be loaded ({exc})"])
            yield RawPage(index + 1, 792.0, [], health=state)
            if on_page:
                on_page(index + 1)
            continue
        blocks = []
        for b in data["blocks"]:
            if b.get("type", 0) != 0:
                continue
            lines = _read_lines(b)
            if lines:
                blocks.append(Block(index + 1, lines[0].y0, lines))
        engine_name, cover = "", health.image_cover(images, width, height)
        text = "\n".join(b.text for b in blocks)
        not_text = health.not_language(text) or ""
        if not_text:  # junk is never a passage: OCR reads the page's image (auto), or the page stays empty
            blocks = []
        if ocr_mode != "never" and (not_text or ocr.needs_ocr(ocr_mode, text, images, page.rect)):
            if engine is None:
                engine = (ocr_engine or ocr.make_engine)()
                cache = ocr.PageCache(file_hash, engine.name) if file_hash else None
            try:
                blocks = [Block(index + 1, b[0][1], [Line(*t) for t in b])
                          for b in ocr.read_page(page, index + 1, engine, cache)]
            except Exception as exc:
                raise InputError(f"page {index + 1} cannot be rendered for OCR ({exc}); the PDF looks damaged") from exc
            engine_name = engine.name
            if not not_text:  # a scan: the image is the page, not a figure (a junk layer's figures stay)
                images = []
            health.take_messages()  # rendering's messages are not the next page's
        state = health.PageHealth(index + 1, sum(len(b.text) for b in blocks), cover, problems, not_text=not_text,
                                  ocr=bool(engine_name))
        yield RawPage(index + 1, height, blocks, images, label, state, engine_name)
        if on_page:
            on_page(index + 1)


def _band_key(text: str) -> str:
    return re.sub(r"\d+", "#", re.sub(r"\s+", " ", text.strip().lower()))


def strip_running_lines(pages: list[RawPage]) -> dict[int, str]:
    """Remove running headers/footers in place; return printed page labels found in the bands."""
    counts: Counter = Counter()
    for p in pages:
        keys = {_band_key(l.text) for b in p.blocks for l in b.lines if _in_band(l, p.height)}
        counts.update(keys)
    # a line in the band on this many pages is furniture; a manual's footer names its chapter ("CERT
    # UNIT 3: DISASTER PREPAREDNESS", "JANUARY 2011 3-13"), so it repeats on a chapter's pages only
    threshold = max(3, min(int(0.3 * len(pages)), RUNNING_PAGES))
    repeated = {k for k, n in counts.items() if n >= threshold}
    # a running header goes with other text; a line that is the only text on most pages it is on
    # ("Line 7: aneurysm clip number 7." on each of 600 pages) is the book's content
    alone: Counter = Counter()
    for p in pages:
        keys = {_band_key(l.text) for b in p.blocks for l in b.lines if not PAGE_NUM_RE.match(l.text.strip())}
        if len(keys) == 1:
            alone.update(keys & repeated)
    repeated = {k for k in repeated if 2 * alone[k] <= counts[k]}
    printed: dict[int, str] = {}
    for p in pages:
        for b in p.blocks:
            kept = []
            for line in b.lines:
                if _in_band(line, p.height):
                    m = PAGE_NUM_RE.match(line.text.strip())
                    if m:
                        printed.setdefault(p.number, m.group(1))
                        continue
                    m = PAGE_OF_RE.search(line.text)
                    if m:
                        printed.setdefault(p.number, m.group(1))
                    if _band_key(line.text) in repeated:
                        continue
                kept.append(line)
            b.lines = kept
        p.blocks = [b for b in p.blocks if b.lines]
    return printed


def _in_band(line: Line, height: float) -> bool:
    return line.y1 < height * BAND + 12 or line.y0 > height * (1 - BAND) - 12


def body_size(pages: list[RawPage]) -> float:
    sizes: Counter = Counter()
    for p in pages:
        for b in p.blocks:
            for line in b.lines:
                sizes[round(line.size, 1)] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else 10.0


def is_heading(line: Line, body: float) -> bool:
    text = line.text.strip()
    if not (2 <= len(text) <= 80) or not re.search(r"[A-Za-z]{2}", text):
        return False
    if text.lower().rstrip(".:") in NOT_HEADINGS or CAPTION_RE.match(text):
        return False
    if text.endswith((",", ";")) or PAGE_NUM_RE.match(text) or text[0].islower():
        return False
    if text[0] in "•·▪◦*-–—" or text.count(",") >= 2:  # list bullets, author lists
        return False
    if re.search(r"\b(warning|danger|caution|note)\b", text, re.I) or text[0] in "“\"'‘(":
        return False
    if line.size >= body + 1.5:
        return True
    return line.bold and len(text.split()) <= 10 and not _is_sentence(text)


def _is_sentence(text: str) -> bool:
    """Bold instructions in warning boxes ("Do not move casualty to place padding.") are not headings."""
    if SENTENCE_WORDS_RE.search(text):
        return True
    return text.endswith(".") and len(text.split()) > 3 and not re.match(r"^[\dA-Z]{1,3}[-.]\d", text)


def find_figures(pages: list[RawPage]) -> list[Figure]:
    """Captions that start a line ("Figure 2-31.", "Fig. 3", "Figure 2.1:", "FIGURE 4"); one block may
    hold several captions (FAA: "Figure 7-26. ..." and "Figure 7-27. ..." in one block)."""
    figures: list[Figure] = []
    seen: set[str] = set()
    for p in pages:
        for b in p.blocks:
            starts = [(i, m) for i, line in enumerate(b.lines) if (m := CAPTION_RE.match(line.text))]
            for n, (i, m) in enumerate(starts):
                end = starts[n + 1][0] if n + 1 < len(starts) else len(b.lines)
                lines = b.lines[i:min(end, i + 4)]
                rest = m.group("rest").strip()
                if m.group("num") in seen or rest[:1].islower() or (not rest and len(lines) == 1):
                    continue  # a reference in running text ("Figure 2 shows ...")
                if i > 0 and not b.lines[i - 1].text.rstrip().endswith((".", ":", ")")):
                    continue  # "... as shown in" / "Figure 3. ..." wrapped inside a sentence
                seen.add(m.group("num"))
                caption = " ".join(line.text.strip() for line in lines)
                figures.append(Figure(m.group("num"), caption, p.number, _nearest_image(p, lines[0].y0)))
    return figures


def _nearest_image(p: RawPage, y: float):
    if not p.images:
        return None
    return min(p.images, key=lambda box: min(abs(box[1] - y), abs(box[3] - y)))


def parse(path: Path, password: Optional[str] = None, title: Optional[str] = None,
          on_page: Optional[Callable[[int, int, int], None]] = None, file_hash: Optional[str] = None,
          ocr: str = "never", ocr_engine: Optional[Callable[[], object]] = None) -> ParsedBook:
    """Read a PDF into a ParsedBook. Raises InputError for unusable files. `file_hash`: the file's
    sha256 when the caller has it already. `on_page(done, total, ocr_done)` after each page; `ocr` is
    auto | always | never (see ingest/ocr.py)."""
    health.silence_mupdf()
    health.take_messages()
    doc = open_pdf(path, password)
    file_hash = file_hash or file_sha256(path)
    try:
        doc_messages = health.take_messages()
        total = doc.page_count
        pages: list[RawPage] = []
        ocr_done = 0
        for p in read_pages(doc, None, ocr, ocr_engine, file_hash):
            pages.append(p)
            ocr_done += bool(p.ocr)
            if on_page:
                on_page(p.number, total, ocr_done)
        toc = doc.get_toc(simple=False)
        meta_title = (doc.metadata or {}).get("title") or ""
    finally:
        doc.close()
    read = sum(len(b.text) for p in pages for b in p.blocks)
    if read < 20 * max(1, len(pages) // 10):
        unreadable = [p.number for p in pages if p.health and p.health.problems]
        if len(unreadable) * 2 > len(pages):
            raise InputError(f"{path}: {health.page_ranges(unreadable)[:60]} of {len(pages)} pages could "
                             f"not be read; the file is damaged")
        junk = [p.number for p in pages if p.health and p.health.not_text]
        if ocr == "never" and len(junk) * 2 > len(pages):
            raise InputError(f"{path}: the text layer of {health.page_ranges(junk)[:60]} is not text (a damaged "
                             f"font map?); OCR is off (--ocr never): read it with --ocr auto")
        if ocr == "never":
            raise InputError(f"{path}: no text layer (a scanned PDF?); OCR is off (--ocr never)")
        raise InputError(f"{path}: no text layer, and OCR found no text on its pages")
    states = [p.health for p in pages]
    health.classify(states)
    printed = strip_running_lines(pages)
    kept = sum(len(b.text) for p in pages for b in p.blocks)
    labels = page_labels(pages, printed)
    outline = (sum(1 for e in toc if e[2] < 1), len(toc))
    return assemble(path, pages, labels, toc, title or _good_title(meta_title), file_hash,
                    warnings=health.warnings(states, doc_messages, outline, (read - kept, read)),
                    unreadable_pages=[s.number for s in states if s.status in health.OCR_CANDIDATES or s.not_text])


def assemble(path: Path, pages: list[RawPage], labels: dict[int, str], toc, title: str, file_hash: str,
             fmt: str = "pdf", author: str = "", warnings: Optional[list[str]] = None,
             unreadable_pages: Optional[list[int]] = None) -> ParsedBook:
    """Pages read (from a text layer, OCR or an e-book's layout) -> figures, sections, the book."""
    figures = find_figures(pages)
    sections = build_sections(pages, toc, body_size(pages), is_heading)
    for fig in figures:
        fig.section_path = _section_at(sections, fig.page, fig.caption)
    book_pages = [Page(p.number, labels[p.number], "\n".join(b.text for b in p.blocks),
                       p.health.status if p.health else "ok", p.ocr) for p in pages]
    return ParsedBook(
        title=title or first_page_title(pages) or path.stem.replace("_", " ").replace("-", " "),
        pages=book_pages, sections=sections, figures=figures, source_path=str(path),
        file_hash=file_hash, format=fmt, author=author,
        warnings=warnings or [], unreadable_pages=unreadable_pages or [],
    )


def page_labels(pages: list[RawPage], printed: dict[int, str]) -> dict[int, str]:
    """The PDF's own page labels, unless they disagree with the numbers printed on most pages
    (some journals label from 0): then the printed numbers, else the physical page number."""
    own = {p.number: p.pdf_label for p in pages if p.pdf_label}
    both = [n for n in printed if n in own]
    trust = bool(own) and (not both or 2 * sum(own[n] == printed[n] for n in both) >= len(both))
    return {p.number: (own.get(p.number) if trust else None) or printed.get(p.number) or str(p.number)
            for p in pages}


def first_page_title(pages: list[RawPage]) -> str:
    """The title page's title: of the first pages with text (running headers already removed), the
    longest run of lines in the largest font that reads as a title (`plausible_title`); a larger
    run that does not (a journal's margin line "Clinical Science \ufffdwww.clinsci.org", a cover's
    lettering read as "F 0ooT") gives way to the next size."""
    for p in pages[:3]:
        lines = [(i, line) for i, b in enumerate(p.blocks) for line in b.lines
                 if re.search(r"[A-Za-z]{3}", line.text)]
        for size in sorted({round(line.size, 1) for _, line in lines}, reverse=True):
            runs: list[list[str]] = []
            last = None
            for i, line in lines:
                if round(line.size, 1) != size:
                    last = None
                    continue
                if last is None or i != last:  # a run stays inside one block
                    runs.append([])
                runs[-1].append(line.text.strip())
                last = i
            titles = [ARTICLE_KIND_RE.sub("", " ".join(r))[:200].rstrip(" ,:;") for r in runs]
            titles = [title for title in titles if plausible_title(title)]  # "Research Article Patient ..."
            if titles:
                return max(titles, key=len)
    return ""


JUNK_CHARS = re.compile(r"[\ufffd\x00-\x08\x0b-\x1f\x7f-\x9f\ue000-\uf8ff]")  # replacement, control, private use
NOT_A_TITLE = re.compile(r"www\.|https?:|\bdoi\b|@|\b[A-Za-z]+\d+[A-Za-z]*\b|\b\d+[A-Za-z]+\d*\b", re.I)


# An issuer's or publisher's line on a title page ("HEADQUARTERS, DEPARTMENT OF THE ARMY", "Published
# by ...", "Oxford University Press", "Copyright 2009 ..."), or a line's tail broken off ("OF THE ARMY
# FIELD"): set in a large font on many covers, never the book's title.
ISSUER_LINE = re.compile(r"^\W*(?:headquarters\b|(?:department|ministry|office) of\b|published\b|printed\b|"
                         r"copyright\b|©|all rights reserved|(?:of|and|or)\b)"
                         r"|\b(?:press|publishers?|publishing|inc|ltd|llc)\W*$", re.I)


def plausible_title(text: str) -> bool:
    """A title is words: two or more of letters, mostly letters, no junk character, no address, no
    word mixing letters and digits (what a bad text layer makes of a cover's lettering), and no
    issuer's or publisher's line (ISSUER_LINE). A number on its own ("Volume 2", "2-15") is fine."""
    words = re.findall(r"[^\W\d_]{2,}", text)
    letters = sum(ch.isalpha() for ch in text)
    return (len(words) >= 2 and letters >= 0.6 * len(text.replace(" ", ""))
            and not JUNK_CHARS.search(text) and not NOT_A_TITLE.search(text) and not ISSUER_LINE.search(text))


def _good_title(meta_title: str) -> str:
    """PDF titles are often junk ("42511cvr", "Microsoft Word - x.doc"); keep only plausible ones."""
    t = meta_title.strip()
    if len(t) < 4 or not re.search(r"[A-Za-z]{3,}\s+[A-Za-z]{2,}", t) or t.lower().startswith("microsoft"):
        return ""
    return t if plausible_title(t) else ""


def _section_at(sections: list[Section], page: int, caption: str = "") -> list[str]:
    """The section whose text holds the caption, else the last one on its page."""
    head = " ".join(caption.split())[:40]
    for s in sections:
        if head and any(n == page and head in " ".join(para.split()) for n, para in s.paragraphs):
            return s.path
    best: list[str] = []
    for s in sections:
        if s.page_start <= page <= s.page_end:
            best = s.path
    return best
