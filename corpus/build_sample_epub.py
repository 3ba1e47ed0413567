"""Build the sample book as an EPUB 3 from the same source text as the PDF (issue 14).

    python corpus/build_sample_epub.py OUTPUT.epub

XHTML in a zip, written with the standard library only: one chapter per file, headings h1-h3 with
ids, a navigation document (nav.xhtml) and an NCX table of contents with three levels, figures as
<figure> with a <figcaption> (no picture: the drawings are the PDF's), the glossary as a definition
list; the index is left out (an e-book reader searches). Title and author in the package metadata.
The output is byte-for-byte reproducible (fixed zip dates).
"""
from __future__ import annotations

import html
import re
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "sample_book_text.txt"
TITLE = "A Primer of Cerebrovascular Neurosurgery"
AUTHOR = "The ragcli authors"
BOOK_ID = "urn:uuid:5b0e3c52-7d0f-4b8e-9a51-ragcli-sample"


def parse_source(text: str) -> list[dict]:
    """Chapters: {"title", "blocks": [("h2"|"h3"|"p"|"figure"|"dl", text or items)]}."""
    chapters: list[dict] = []
    para: list[str] = []
    mode = ""

    def flush():
        if para and chapters:
            chapters[-1]["blocks"].append(("p", " ".join(para)))
        para.clear()

    for line in text.splitlines():
        if line.startswith("%"):
            continue
        s = line.strip()
        if not s:
            flush()
            continue
        if s.startswith("# "):
            flush()
            mode = ""
            chapters.append({"title": s[2:].strip(), "blocks": []})
        elif s.startswith("### ") or s.startswith("## "):
            flush()
            chapters[-1]["blocks"].append(("h3" if s.startswith("### ") else "h2", s.lstrip("#").strip()))
        elif s.startswith("@figure"):
            flush()
            chapters[-1]["blocks"].append(("figure", s.split("|", 1)[1].strip()))
        elif s in ("@glossary", "@index"):
            flush()
            mode = s[1:]
            if mode == "glossary":
                chapters[-1]["blocks"].append(("dl", []))
        elif s == "@newpage":
            flush()
        elif mode and s.startswith("- "):
            if mode == "glossary":
                term, _, definition = s[2:].partition("|")
                chapters[-1]["blocks"][-1][1].append((term.strip(), definition.strip()))
        else:
            para.append(s)
    flush()
    return [c for c in chapters if c["title"] != "Index"]


def _id(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def chapter_xhtml(ch: dict) -> str:
    e = html.escape
    body = [f'<h1 id="{_id(ch["title"])}">{e(ch["title"])}</h1>']
    for kind, value in ch["blocks"]:
        if kind in ("h2", "h3"):
            body.append(f'<{kind} id="{_id(value)}">{e(value)}</{kind}>')
        elif kind == "p":
            body.append(f"<p>{e(value)}</p>")
        elif kind == "figure":
            body.append(f"<figure><figcaption>{e(value)}</figcaption></figure>")
        elif kind == "dl":
            body.append("<dl>" + "".join(f"<dt>{e(t)}</dt><dd>{e(d)}</dd>" for t, d in value) + "</dl>")
    return ('<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html>\n'
            '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" lang="en">'
            f'<head><title>{e(ch["title"])}</title></head><body>\n' + "\n".join(body) + "\n</body></html>\n")


def toc_tree(chapters: list[dict]) -> list[tuple[int, str, str]]:
    """(level, title, href) for every heading, in order."""
    out = []
    for i, ch in enumerate(chapters, 1):
        href = f"ch{i:02d}.xhtml"
        out.append((1, ch["title"], f"{href}#{_id(ch['title'])}"))
        for kind, value in ch["blocks"]:
            if kind in ("h2", "h3"):
                out.append((2 if kind == "h2" else 3, value, f"{href}#{_id(value)}"))
    return out


def nav_xhtml(entries) -> str:
    e = html.escape
    items = []
    stack = 0
    for n, (level, title, href) in enumerate(entries):
        nxt = entries[n + 1][0] if n + 1 < len(entries) else 1
        items.append(f'<li><a href="{href}">{e(title)}</a>')
        if nxt > level:
            items.append("<ol>")
            stack += 1
        else:
            items.append("</li>")
            for _ in range(level - nxt):
                items.append("</ol></li>")
                stack -= 1
    return ('<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html>\n'
            '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" lang="en">'
            '<head><title>Contents</title></head><body><nav epub:type="toc" id="toc"><h1>Contents</h1><ol>'
            + "".join(items) + "</ol></nav></body></html>\n")


def toc_ncx(entries) -> str:
    e = html.escape
    out, depth, n = [], 0, 0
    for i, (level, title, href) in enumerate(entries):
        nxt = entries[i + 1][0] if i + 1 < len(entries) else 1
        n += 1
        out.append(f'<navPoint id="np{n}" playOrder="{n}"><navLabel><text>{e(title)}</text></navLabel>'
                   f'<content src="{href}"/>')
        if nxt <= level:
            out.append("</navPoint>" * (level - nxt + 1))
    return ('<?xml version="1.0" encoding="utf-8"?>\n<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" '
            f'version="2005-1"><head><meta name="dtb:uid" content="{BOOK_ID}"/></head>'
            f"<docTitle><text>{e(TITLE)}</text></docTitle><navMap>" + "".join(out) + "</navMap></ncx>\n")


def content_opf(n_chapters: int) -> str:
    items = "".join(f'<item id="ch{i:02d}" href="ch{i:02d}.xhtml" media-type="application/xhtml+xml"/>'
                    for i in range(1, n_chapters + 1))
    spine = "".join(f'<itemref idref="ch{i:02d}"/>' for i in range(1, n_chapters + 1))
    return ('<?xml version="1.0" encoding="utf-8"?>\n'
            '<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="bookid">'
            '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
            f'<dc:identifier id="bookid">{BOOK_ID}</dc:identifier><dc:title>{html.escape(TITLE)}</dc:title>'
            f'<dc:creator>{html.escape(AUTHOR)}</dc:creator><dc:language>en</dc:language>'
            '<meta property="dcterms:modified">2026-01-01T00:00:00Z</meta></metadata>'
            '<manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
            '<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>' + items +
            '</manifest><spine toc="ncx">' + spine + "</spine></package>\n")


def build(out: Path, source: Path = SOURCE) -> Path:
    chapters = parse_source(source.read_text(encoding="utf-8"))
    entries = toc_tree(chapters)
    files = [("mimetype", "application/epub+zip"),
             ("META-INF/container.xml",
              '<?xml version="1.0"?>\n<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
              '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
              "</rootfiles></container>\n"),
             ("OEBPS/content.opf", content_opf(len(chapters))),
             ("OEBPS/nav.xhtml", nav_xhtml(entries)),
             ("OEBPS/toc.ncx", toc_ncx(entries))]
    files += [(f"OEBPS/ch{i:02d}.xhtml", chapter_xhtml(ch)) for i, ch in enumerate(chapters, 1)]
    with zipfile.ZipFile(out, "w") as z:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED if name == "mimetype" else zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return out


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("cerebrovascular-neurosurgery-primer.epub")
    print(build(target))
