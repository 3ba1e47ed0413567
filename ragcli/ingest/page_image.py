"""A PNG of a passage's page with its sentences (or one quote) highlighted: `ragcli show --image`.

Each sentence is looked up on the page as the PDF holds it (pymupdf's search joins lines and
hyphenated words); a sentence the page spells differently (ligatures, a line-end hyphen kept by the
reader) is looked up again by runs of 6 words, so most of it is still marked. The PDF itself is never
changed: the highlights exist only in the rendered image."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragcli.errors import InputError
from ragcli.text import sentences

# pymupdf is imported where a page is rendered (it takes seconds to import).

WINDOW = 6  # words per run when a whole sentence is not found


@dataclass
class PageImage:
    path: str  # the PNG written
    page: int  # physical, 1-based
    sentences: int  # sentences (or 1 for a quote) looked for
    found: int  # of them, found on the page (wholly or by runs of words)
    width: int
    height: int


def _quads(page, sentence: str) -> list:
    quads = page.search_for(sentence, quads=True)
    if quads:
        return quads
    words = sentence.split()
    found: list = []
    for start in range(0, max(1, len(words) - WINDOW + 1), WINDOW // 2 or 1):
        found += page.search_for(" ".join(words[start:start + WINDOW]), quads=True)
    return found


def render(pdf: str, page_start: int, page_end: int, text: str, out: Path, quote: str = "",
           zoom: float = 2.0) -> PageImage:
    """Render the page of [page_start, page_end] where most of `text`'s sentences (or `quote`) are
    found, highlighted, to `out` (PNG)."""
    import pymupdf

    wanted = [quote] if quote.strip() else [s for s in sentences(" ".join(text.split())) if len(s.split()) >= 3]
    wanted = wanted or [" ".join(text.split())]
    try:
        doc = pymupdf.open(pdf)
    except Exception as exc:  # pymupdf raises its own types for a damaged or foreign file
        raise InputError(f"{pdf}: cannot be opened to render the page ({exc})") from exc
    with doc:
        if not doc.is_pdf:
            raise InputError(f"{pdf}: --image renders PDF pages only")
        best = None
        for number in range(page_start, min(page_end, doc.page_count) + 1):
            page = doc[number - 1]
            hits = [_quads(page, s) for s in wanted]
            score = sum(1 for h in hits if h)
            if best is None or score > best[1]:
                best = (number, score, hits)
        if best is None:
            raise InputError(f"{pdf}: has no page {page_start}")
        number, score, hits = best
        page = doc[number - 1]
        for quads in hits:
            if quads:
                page.add_highlight_annot(quads)
        pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), annots=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        pix.save(str(out))
        return PageImage(str(out), number, len(wanted), score, pix.width, pix.height)
