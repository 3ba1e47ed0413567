"""E-books and documents -> ParsedBook (issue 14).

- EPUB, MOBI, FB2, XPS, CBZ: opened by pymupdf. A reflowable book (EPUB, MOBI, FB2) is laid out by
  ragcli at one fixed size (LAYOUT: 6 x 9 in pages, 11 pt type), so the same file always gives the
  same pages; a page of that layout is the book's *location*: its page label is the layout page
  number, shown as "p. N" like a PDF's, next to the section path (the chapters and sections of the
  book's own table of contents, in full). Then the PDF path runs unchanged on those pages: reading
  order, headings, "Figure N" captions (an EPUB's <figcaption> is such a line), sections from the
  table of contents. Title and author come from the book's metadata. A fixed-layout format (XPS,
  CBZ) keeps its own pages; a page that is only a picture (a comic's, a scanned XPS) goes to OCR.
- DOCX: python-docx reads the paragraphs with their styles ("Title", "Heading 1" .. "Heading 9"),
  the core properties (title, author) and the tables; HTML: the standard library's html.parser keeps
  h1-h6 as headings and skips script, style, nav, header and footer. Both become the same headed
  text that textdocs builds Markdown books from (sections with full paths, "pages" of about
  textdocs.PAGE_CHARS characters, labelled 1, 2, ...). Figure items come from <figcaption>, Word's
  "Caption" style and "Figure N. ..." paragraphs (find_figures), as a PDF's come from its captions.
"""
from __future__ import annotations

import re
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Callable, Optional

from ragcli.errors import InputError
from ragcli.ingest import pdf, textdocs
from ragcli.ingest.pdf import CAPTION_RE
from ragcli.ingest.textdocs import read_text
from ragcli.text import file_sha256
from ragcli.types import Figure, ParsedBook

# pymupdf and python-docx are imported where a file of theirs is opened (each takes a second or more).

PYMUPDF_FORMATS = {".epub": "epub", ".mobi": "mobi", ".fb2": "fb2", ".xps": "xps", ".oxps": "xps",
                   ".cbz": "cbz"}
DOC_FORMATS = {".docx": "docx", ".html": "html", ".htm": "html", ".xhtml": "html"}
SUFFIXES = tuple(PYMUPDF_FORMATS) + tuple(DOC_FORMATS)
LAYOUT = {"width": 432, "height": 648, "fontsize": 11}  # 6 x 9 in, 11 pt: a reflowable book's pages


def parse(path: Path, title: Optional[str] = None, on_page: Optional[Callable[[int, int, int], None]] = None,
          ocr: str = "auto", ocr_engine=None, file_hash: Optional[str] = None) -> ParsedBook:
    suffix = path.suffix.lower()
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    if suffix in PYMUPDF_FORMATS:
        return _parse_pymupdf(path, PYMUPDF_FORMATS[suffix], title, on_page, ocr, ocr_engine, file_hash)
    if suffix == ".docx":
        return _parse_docx(path, title, file_hash)
    return _parse_html(path, title, file_hash)


def _parse_pymupdf(path: Path, fmt: str, title, on_page, ocr, ocr_engine, file_hash) -> ParsedBook:
    import pymupdf

    if fmt == "epub" and not zipfile.is_zipfile(path):
        raise InputError(f"{path}: not an EPUB (not a zip archive); the file is damaged or of another kind")
    try:
        from ragcli.ingest.pdf import mupdf_open

        doc = mupdf_open(path, fmt)
        if doc.is_reflowable:
            doc.layout(**LAYOUT)
        total = doc.page_count
    except Exception as exc:  # pymupdf raises several types for damaged files
        raise InputError(f"{path}: cannot be read as {fmt.upper()} ({exc})") from exc
    try:
        if total == 0:
            raise InputError(f"{path}: the {fmt.upper()} has no pages (empty or damaged)")
        file_hash = file_hash or file_sha256(path)
        pages, ocr_done = [], 0
        for p in pdf.read_pages(doc, None, ocr, ocr_engine, file_hash):
            pages.append(p)
            ocr_done += bool(p.ocr)
            if on_page:
                on_page(p.number, total, ocr_done)
        toc = doc.get_toc(simple=False)
        meta = doc.metadata or {}
        reflowable = doc.is_reflowable
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"{path}: cannot be read as {fmt.upper()} ({exc})") from exc
    finally:
        doc.close()
    if not any(b.text.strip() for p in pages for b in p.blocks):
        raise InputError(f"{path}: no text found in the {fmt.upper()}")
    if reflowable:  # no printed page numbers: the layout's pages are the locations
        labels = {p.number: str(p.number) for p in pages}
    else:
        labels = pdf.page_labels(pages, pdf.strip_running_lines(pages))
    return pdf.assemble(path, pages, labels, toc, title or (meta.get("title") or "").strip(), file_hash,
                        fmt=fmt, author=(meta.get("author") or "").strip())


# -- DOCX and HTML: headed text -> the Markdown path of textdocs ----------------------------------

def _parse_docx(path: Path, title: Optional[str], file_hash: Optional[str] = None) -> ParsedBook:
    try:
        import docx
        from docx.opc.exceptions import PackageNotFoundError
    except ImportError as exc:  # pragma: no cover - a dependency of ragcli
        raise InputError(f"{path}: reading DOCX needs python-docx ({exc})") from exc
    try:
        document = docx.Document(str(path))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise InputError(f"{path}: not a readable DOCX ({exc or 'damaged'})") from exc
    except Exception as exc:  # lxml errors on a damaged part
        raise InputError(f"{path}: not a readable DOCX ({exc})") from exc
    lines: list[str] = []
    captions: set[str] = set()
    doc_title = ""
    for block in _docx_blocks(document):
        if isinstance(block, str):
            lines.append(block)
            continue
        style = (block.style.name if block.style is not None else "") or ""
        text = " ".join(block.text.split())
        if not text:
            continue
        text = " " + text if text.startswith("#") else text  # not a heading mark
        level = _docx_heading_level(style)
        if style == "Caption" and not re.match(r"^(?:Table|TABLE)\b", text):  # Word's Insert Caption
            captions.add(text)
        if style == "Title":
            doc_title = doc_title or text
            lines.append(f"# {text}")
        elif level:
            lines.append("#" * min(6, level + (1 if doc_title else 0)) + f" {text}")
        else:
            lines.append(text)
    props = document.core_properties
    return _headed_book(path, lines, title or (props.title or "").strip() or doc_title, "docx",
                        (props.author or "").strip(), file_hash, captions)


def _docx_heading_level(style: str) -> int:
    m = re.match(r"^Heading (\d)$", style)
    return int(m.group(1)) if m else 0


def _docx_blocks(document):
    """Paragraphs and tables in document order (a table becomes one line per row)."""
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    body = document.element.body
    for child in body.iterchildren():
        tag = child.tag.rsplit("}", 1)[-1]
        if tag == "p":
            yield Paragraph(child, document)
        elif tag == "tbl":
            for row in Table(child, document).rows:
                cells = [" ".join(c.text.split()) for c in row.cells]
                line = " | ".join(dict.fromkeys(c for c in cells if c))
                if line:
                    yield line


def _parse_html(path: Path, title: Optional[str], file_hash: Optional[str] = None) -> ParsedBook:
    parser = _HeadedText()
    try:
        parser.feed(read_text(path))
        parser.close()
    except Exception as exc:  # html.parser is lenient; this is a last resort
        raise InputError(f"{path}: cannot be read as HTML ({exc})") from exc
    parser.flush()
    return _headed_book(path, parser.lines, title or parser.title, "html", parser.author, file_hash,
                        parser.captions)


def _headed_book(path: Path, lines: list[str], title: str, fmt: str, author: str,
                 file_hash: Optional[str] = None, captions: Optional[set[str]] = None) -> ParsedBook:
    text = "\n\n".join(lines)
    if not text.strip():
        raise InputError(f"{path}: the {fmt.upper()} has no text")
    book = textdocs.parse_headed(path, text, title, fmt, author, file_hash=file_hash)
    book.figures = find_figures(book.sections, captions or set())
    return book


def find_figures(sections, captions: set[str]) -> list:
    """Figure items of a DOCX or HTML file, as pdf.find_figures makes them for a PDF: a paragraph that
    is a caption by its markup (`captions`: an HTML <figcaption>, a DOCX paragraph in Word's "Caption"
    style) or by its words ("Figure 3. Splinting a forearm", with the PDF's rules: not "Figure 3 shows
    ...", a number seen once). The number is the caption's own; an unnumbered caption gets its position
    among the document's figures, or the next number no caption uses. The caption keeps its place in
    the section text too (as in a PDF)."""
    marked = {" ".join(c.split()) for c in captions}
    figures: list[Figure] = []
    seen: set[str] = set()
    for s in sections:
        for page, body in s.paragraphs:
            m = CAPTION_RE.match(body)
            rest = m.group("rest").strip() if m else ""
            if body not in marked and (not m or not rest or rest[:1].islower()):
                continue
            if m and m.group("num") in seen:
                continue
            if m:
                seen.add(m.group("num"))
            figures.append(Figure(m.group("num") if m else "", body, page, None, list(s.path)))
    for position, fig in enumerate(figures, 1):
        if not fig.number:
            number = position
            while str(number) in seen:
                number += 1
            fig.number = str(number)
            seen.add(fig.number)
    return figures


class _HeadedText:
    """HTML -> lines: "## Heading" for h1-h6 (by level), one line per paragraph, list item, table row."""

    SKIP = {"script", "style", "nav", "header", "footer", "noscript", "template", "svg", "head"}
    BLOCKS = {"p", "div", "li", "tr", "dd", "dt", "blockquote", "pre", "figcaption", "section", "article",
              "table", "ul", "ol", "br", "main", "aside", "figure", "h1", "h2", "h3", "h4", "h5", "h6"}

    def __init__(self) -> None:
        outer = self

        class P(HTMLParser):
            def handle_starttag(self, tag, attrs):
                outer.start(tag, dict(attrs))

            def handle_endtag(self, tag):
                outer.end(tag)

            def handle_data(self, data):
                outer.data(data)

        self._p = P(convert_charrefs=True)
        self.lines: list[str] = []
        self.title = self.author = ""
        self._buf: list[str] = []
        self._skip = 0
        self._heading = 0
        self._in_title = False
        self._in_caption = 0
        self.captions: set[str] = set()  # the text of every <figcaption>

    def feed(self, text: str) -> None:
        self._p.feed(text)

    def close(self) -> None:
        self._p.close()

    def start(self, tag: str, attrs: dict) -> None:
        if tag == "meta" and (attrs.get("name") or "").lower() == "author":
            self.author = (attrs.get("content") or "").strip()
        if tag == "title":
            self._in_title = True
        if tag in self.SKIP and tag != "head":
            self._skip += 1
        if tag in self.BLOCKS:
            self.flush()
        if re.fullmatch(r"h[1-6]", tag):
            self._heading = int(tag[1])
        if tag == "figcaption":
            self._in_caption += 1

    def end(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in self.SKIP and tag != "head" and self._skip:
            self._skip -= 1
        if tag in self.BLOCKS:
            self.flush()
        if tag == "figcaption" and self._in_caption:
            self._in_caption -= 1

    def data(self, data: str) -> None:
        if self._in_title:
            self.title = (self.title + " " + " ".join(data.split())).strip()
        elif not self._skip:
            self._buf.append(data)

    def flush(self) -> None:
        text = " ".join("".join(self._buf).split())
        self._buf = []
        if text:
            text = " " + text if text.startswith("#") and not self._heading else text  # not a heading mark
            if self._in_caption and not self._heading:
                self.captions.add(text)
            self.lines.append(("#" * self._heading + " " + text) if self._heading else text)
        self._heading = 0
