"""Build the bundled sample book ``cerebrovascular-neurosurgery-primer.pdf`` with pymupdf only.

    python corpus/build_sample_book.py [OUTPUT.pdf]

The prose lives in ``sample_book_text.txt`` (our own text, MIT) and the drawings in
``sample_book_figures.py``. The layout is a small flow engine: A5 pages, a running header with the
book title on every page, the printed page label in the footer (front matter i, ii; body from 1, the
same as the PDF page labels), headings in larger bold type, figures with captions below them
(floated to the next page when they do not fit), an outline with three levels, a contents page,
a glossary and an index. The output is byte-for-byte reproducible.
"""
from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _load_sibling(name: str):
    """Import corpus/<name>.py without touching sys.path (corpus/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


figures = _load_sibling("sample_book_figures")

SOURCE = HERE / "sample_book_text.txt"
DEFAULT_OUTPUT = HERE / "cerebrovascular-neurosurgery-primer.pdf"
TITLE = "A Primer of Cerebrovascular Neurosurgery"
PAGE_W, PAGE_H = 420, 595  # A5 in points
LEFT, RIGHT, TOP, BOTTOM = 42, 378, 60, 556
FRONT_PAGES = 2  # title page and contents, labelled i and ii
FONT_KEYS = ("tiro", "tibo", "tiit", "tibi", "helv", "hebo")


@dataclass(frozen=True)
class Style:
    font: str
    size: float
    leading: float
    before: float = 0.0
    after: float = 0.0


STYLES = {
    "h1": Style("tibo", 15, 18, 12, 5),
    "h2": Style("tibo", 12, 14.5, 7, 3),
    "h3": Style("tibi", 10.5, 12.5, 4, 2),
    "p": Style("tiro", 10, 12.4, 0, 3.5),
    "caption": Style("tiro", 8.8, 10.8, 7, 0),
    "entry": Style("tiro", 10, 12.4, 0, 4.5),
}


@dataclass
class Block:
    kind: str  # h1 h2 h3 p figure newpage entry index
    text: str = ""
    extra: str = ""  # figure name; glossary definition


@dataclass
class Layout:
    """The flow state: the document, the current page and where the next line goes."""
    doc: object
    fonts: dict
    writers: dict = field(default_factory=dict)
    y: float = BOTTOM
    pending: list = field(default_factory=list)  # figures waiting for the next page
    toc: list = field(default_factory=list)  # [level, title, page index, y]
    page_text: dict = field(default_factory=dict)  # page index -> text, for the index
    in_chapter: bool = False

    @property
    def pno(self):
        return self.doc.page_count - 1


def parse(source: str) -> list[Block]:
    """Turn the markup of sample_book_text.txt into blocks."""
    blocks, para = [], []
    mode = "p"

    def flush():
        if para:
            blocks.append(Block("p", " ".join(para)))
            para.clear()

    for raw in source.splitlines():
        line = raw.strip()
        if line.startswith("%"):
            continue
        if not line or line.startswith(("#", "@", "- ")):
            flush()
        if not line:
            continue
        heading = re.match(r"(#{1,3}) (.+)", line)
        if heading:
            blocks.append(Block(f"h{len(heading.group(1))}", heading.group(2)))
        elif line.startswith("@figure"):
            name, caption = line[len("@figure"):].split("|", 1)
            blocks.append(Block("figure", caption.strip(), name.strip()))
        elif line in ("@glossary", "@index"):
            mode = line[1:]
        elif line == "@newpage":
            blocks.append(Block("newpage"))
        elif line.startswith("- "):
            term, _, definition = line[2:].partition("|")
            blocks.append(Block("entry" if mode == "glossary" else "index", term.strip(),
                                definition.strip()))
        else:
            para.append(line)
    flush()
    return blocks


def wrap(runs, fonts, size, width, indent=0.0):
    """Greedy line breaking of [(text, font key)] runs; returns lines of [(text, font key)]."""
    words = [(w, key) for text, key in runs for w in text.split(" ") if w]
    lines, line, used = [], [], 0.0
    space = fonts["tiro"].text_length(" ", fontsize=size)
    for word, key in words:
        w = fonts[key].text_length(word, fontsize=size)
        limit = width - (indent if lines else 0.0)
        if line and used + space + w > limit:
            lines.append(line)
            line, used = [], 0.0
        line.append((word, key))
        used += (space if len(line) > 1 else 0.0) + w
    if line:
        lines.append(line)
    return [_merge(line) for line in lines]


def _merge(line):
    """Join consecutive words of the same font into one run, so each line has few spans."""
    runs = []
    for word, key in line:
        if runs and runs[-1][1] == key:
            runs[-1] = (runs[-1][0] + " " + word, key)
        else:
            runs.append((word if not runs else " " + word, key))
    return runs


def writer(lay: Layout, pno: int | None = None):
    import pymupdf

    pno = lay.pno if pno is None else pno
    if pno not in lay.writers:
        lay.writers[pno] = pymupdf.TextWriter(lay.doc[pno].rect)
    return lay.writers[pno]


def put_line(lay: Layout, runs, size, x, baseline, pno=None):
    tw = writer(lay, pno)
    for text, key in runs:
        tw.append((x, baseline), text, font=lay.fonts[key], fontsize=size)
        x += lay.fonts[key].text_length(text, fontsize=size)
    target = lay.pno if pno is None else pno
    if lay.in_chapter and pno is None:
        lay.page_text[target] = lay.page_text.get(target, "") + " " + "".join(t for t, _ in runs)


def new_page(lay: Layout):
    lay.doc.new_page(width=PAGE_W, height=PAGE_H)
    running_header(lay, lay.pno)
    lay.y = TOP
    pending, lay.pending = lay.pending, []
    for block in pending:
        place_figure(lay, block)


def ensure(lay: Layout, height: float):
    if lay.y + height > BOTTOM:
        new_page(lay)


def flow_text(lay: Layout, runs, style: Style, indent=0.0, keep=1):
    """Set runs as a paragraph at the current position, breaking pages between lines."""
    lines = wrap(runs, lay.fonts, style.size, RIGHT - LEFT, indent)
    lay.y += style.before if lay.y > TOP else 0.0
    ensure(lay, style.leading * min(keep, len(lines)))
    for i, line in enumerate(lines):
        ensure(lay, style.leading * (2 if i == len(lines) - 2 else 1))  # no widowed last line
        x = LEFT + (indent if i else 0.0)
        put_line(lay, line, style.size, x, lay.y + style.size * 0.8)
        lay.y += style.leading
    lay.y += style.after


def heading(lay: Layout, block: Block):
    level = int(block.kind[1])
    style = STYLES[block.kind]
    lay.y += style.before if lay.y > TOP else 0.0
    ensure(lay, style.leading * 2 + STYLES["p"].leading * 3)
    if level == 1:
        lay.in_chapter = block.text.startswith("Chapter")
    lay.toc.append([level, block.text, lay.pno, lay.y])
    flow_text(lay, [(block.text, style.font)], Style(style.font, style.size, style.leading, 0,
                                                     style.after))


def figure_height(lay: Layout, block: Block) -> float:
    cap = wrap([(block.text, "tiro")], lay.fonts, STYLES["caption"].size, RIGHT - LEFT)
    return figures.FIGURES[block.extra][1] + STYLES["caption"].before + len(cap) * 10.8 + 10


def place_figure(lay: Layout, block: Block):
    import pymupdf

    if lay.y + figure_height(lay, block) > BOTTOM:
        lay.pending.append(block)
        return
    lay.y += 4 if lay.y > TOP else 0
    height = figures.FIGURES[block.extra][1]
    rect = pymupdf.Rect(LEFT + 20, lay.y, RIGHT - 20, lay.y + height)
    figures.draw_figure(block.extra, lay.doc[lay.pno], rect, writer(lay), lay.fonts)
    lay.y += height
    number, _, rest = block.text.partition(" ")
    label, _, rest = rest.partition(" ")
    style = STYLES["caption"]
    flow_text(lay, [(f"{number} {label}", "tibo"), (rest, "tiro")], style)
    lay.y += 8


def glossary_entry(lay: Layout, block: Block):
    runs = [(block.text, "tibo"), ("\u2014 " + block.extra, "tiro")]
    flow_text(lay, runs, STYLES["entry"], indent=14)


def index_entry(lay: Layout, block: Block):
    terms = [block.text] + [t.strip() for t in block.extra.split(";") if t.strip()]
    pattern = re.compile(r"\b(" + "|".join(re.escape(t) for t in terms) + ")", re.IGNORECASE)
    pages = [p for p in sorted(lay.page_text) if pattern.search(lay.page_text[p])]
    labels = _ranges([p - FRONT_PAGES + 1 for p in pages])
    flow_text(lay, [(block.text + ",", "tiro"), (labels, "tiro")], STYLES["entry"], indent=14)
    lay.y -= STYLES["entry"].after - 1


def _ranges(numbers):
    parts, start = [], None
    for i, n in enumerate(numbers):
        start = n if start is None else start
        if i + 1 == len(numbers) or numbers[i + 1] != n + 1:
            parts.append(str(n) if n == start else f"{start}\u2013{n}")
            start = None
    return ", ".join(parts)


def lay_out_body(lay: Layout, blocks):
    for block in blocks:
        if block.kind.startswith("h"):
            heading(lay, block)
        elif block.kind == "p":
            flow_text(lay, [(block.text, "tiro")], STYLES["p"], keep=2)
        elif block.kind == "figure":
            place_figure(lay, block)
        elif block.kind == "newpage":
            while lay.pending:
                new_page(lay)
            new_page(lay)
        elif block.kind == "entry":
            glossary_entry(lay, block)
        elif block.kind == "index":
            index_entry(lay, block)
    while lay.pending:
        new_page(lay)


def centred(lay: Layout, pno, text, key, size, baseline):
    width = lay.fonts[key].text_length(text, fontsize=size)
    put_line(lay, [(text, key)], size, (PAGE_W - width) / 2, baseline, pno)


def title_page(lay: Layout):
    centred(lay, 0, "A Primer of", "tibo", 24, 190)
    centred(lay, 0, "Cerebrovascular Neurosurgery", "tibo", 24, 220)
    centred(lay, 0, "Aneurysms, craniotomy, intracranial pressure", "tiit", 12, 262)
    centred(lay, 0, "and vascular malformations", "tiit", 12, 278)
    shape = lay.doc[0].new_shape()
    shape.draw_line((140, 300), (280, 300))
    shape.finish(color=(0.5, 0.1, 0.1), width=1.2)
    shape.commit()
    centred(lay, 0, "Sample book bundled with ragcli \u00b7 First edition", "tiro", 10, 330)
    for i, line in enumerate(("Original text written for the ragcli project.",
                              "Released under the MIT licence, like the rest of the repository.",
                              "For teaching and software testing; not a clinical guideline.")):
        centred(lay, 0, line, "tiit", 8.5, 500 + 12 * i)


def contents_page(lay: Layout):
    centred(lay, 1, "Contents", "tibo", 15, TOP + 14)
    y = TOP + 44
    for level, title, pno, _ in lay.toc:
        if level > 2 or title == "Contents":
            continue
        key, size, x = ("tibo", 10.5, LEFT) if level == 1 else ("tiro", 10, LEFT + 16)
        y += 6 if level == 1 else 0
        label = str(pno - FRONT_PAGES + 1)
        put_line(lay, [(title, key)], size, x, y, 1)
        width = lay.fonts[key].text_length(label, fontsize=size)
        put_line(lay, [(label, key)], size, RIGHT - width, y, 1)
        y += 14


def running_header(lay: Layout, pno: int):
    """The book title and a rule at the top of every page, written before the page's text."""
    centred(lay, pno, TITLE, "tiit", 8.5, 36)
    shape = lay.doc[pno].new_shape()
    shape.draw_line((LEFT, 42), (RIGHT, 42))
    shape.finish(color=(0.5, 0.5, 0.5), width=0.5)
    shape.commit()


def page_label(pno: int) -> str:
    if pno < FRONT_PAGES:
        return ("i", "ii", "iii", "iv")[pno]
    return str(pno - FRONT_PAGES + 1)


def finish(lay: Layout, output: Path):
    import pymupdf

    doc = lay.doc
    for pno in range(doc.page_count):  # the printed page label, the same as the PDF page label
        centred(lay, pno, page_label(pno), "tiro", 9, 574)
    for pno in sorted(lay.writers):
        lay.writers[pno].write_text(doc[pno])
    doc.set_page_labels([{"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1},
                         {"startpage": FRONT_PAGES, "prefix": "", "style": "D", "firstpagenum": 1}])
    doc.set_toc([[lvl, title, pno + 1, {"kind": pymupdf.LINK_GOTO, "page": pno,
                                         "to": pymupdf.Point(LEFT, max(y - 4, 0)), "zoom": 0}]
                 for lvl, title, pno, y in lay.toc])
    doc.set_metadata({"title": TITLE, "author": "The ragcli authors",
                      "subject": "Sample book for ragcli: cerebrovascular neurosurgery",
                      "keywords": "craniotomy, aneurysm, subarachnoid hemorrhage, cerebral edema",
                      "creator": "corpus/build_sample_book.py", "producer": "pymupdf",
                      "creationDate": "D:20240101000000Z", "modDate": "D:20240101000000Z"})
    doc.subset_fonts()
    output.parent.mkdir(parents=True, exist_ok=True)
    doc.save(str(output), garbage=4, deflate=True, no_new_id=True)  # no random /ID


def build(output: Path = DEFAULT_OUTPUT, source: Path = SOURCE) -> Path:
    """Render the sample book to ``output`` and return the path."""
    import pymupdf

    doc = pymupdf.open()
    lay = Layout(doc=doc, fonts={key: pymupdf.Font(key) for key in FONT_KEYS})
    for pno in range(FRONT_PAGES):
        doc.new_page(width=PAGE_W, height=PAGE_H)
        running_header(lay, pno)
    lay.toc.append([1, "Contents", 1, TOP])
    new_page(lay)
    lay_out_body(lay, parse(Path(source).read_text(encoding="utf-8")))
    title_page(lay)
    contents_page(lay)
    finish(lay, Path(output))
    doc.close()
    return Path(output)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    output = build(Path(args[0]) if args else DEFAULT_OUTPUT)
    print(output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
