"""Plain-text inputs -> ParsedBook: a BEIR `corpus.jsonl`, `.txt` and `.md` files.

How documents map onto ragcli's book model:

- BEIR corpus.jsonl (one record per document: `_id`, `title`, `text`): the whole file is one book.
  Each document is one section (path = [title], or [_id] when untitled) on its own "page"; the page
  number is the document's position (1-based) and the page *label* is the document `_id`. Every
  passage cut from a document therefore carries the `_id` as its page label, which is how
  `ragcli eval` maps hits back to qrels.
- .txt: pages are split on form feeds when the file has them, else on paragraph boundaries about
  every PAGE_CHARS characters; labels are "1", "2", ... Sections are the pages themselves unless
  headings are found (a short line in capitals, or numbered "1." / "2.3 " lines, followed by text).
- .md: ATX headings (`#` .. `######`) make nested sections; pages as for .txt.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator, Optional

from ragcli.errors import InputError
from ragcli.text import file_sha256
from ragcli.types import Page, ParsedBook, Section

PAGE_CHARS = 3000
TEXT_SUFFIXES = (".txt", ".md", ".markdown")
CORPUS_SUFFIXES = (".jsonl",)
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_TXT_HEADING = re.compile(r"^(?:\d+(?:\.\d+)*\.?\s+[A-Z][^.!?]{1,70}|[A-Z][A-Z0-9 ,;:'&()/-]{2,70})$")


def read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from exc
    if b"\x00" in raw[:4096]:
        raise InputError(f"{path}: not a text file (binary content)")
    return raw.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


# -- BEIR corpus ---------------------------------------------------------------------------------

def iter_beir(path: Path) -> Iterator[dict]:
    """Records of a BEIR corpus.jsonl; raises InputError on the first bad line."""
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as exc:
                raise InputError(f"{path}:{n}: not JSON ({exc})") from exc
            if not isinstance(rec, dict) or "_id" not in rec or "text" not in rec:
                raise InputError(f"{path}:{n}: not a BEIR corpus record (needs \"_id\" and \"text\")")
            yield rec


def is_beir_corpus(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    rec = json.loads(line)
                    return isinstance(rec, dict) and "_id" in rec and "text" in rec
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return False


def corpus_title(path: Path) -> str:
    """`nfcorpus/corpus.jsonl` -> "nfcorpus"; `docs.jsonl` -> "docs"."""
    return path.parent.name if path.stem.lower() == "corpus" and path.parent.name else path.stem


def parse_beir(path: Path, title: Optional[str] = None, file_hash: Optional[str] = None) -> ParsedBook:
    pages: list[Page] = []
    sections: list[Section] = []
    seen: set[str] = set()
    for rec in iter_beir(path):
        doc_id = str(rec["_id"])
        if doc_id in seen:
            raise InputError(f"{path}: document id {doc_id!r} appears twice")
        seen.add(doc_id)
        number = len(pages) + 1
        doc_title = " ".join(str(rec.get("title") or "").split())
        text = " ".join(str(rec.get("text") or "").split())
        pages.append(Page(number, doc_id, f"{doc_title}\n{text}".strip()))
        body = text or doc_title
        if body:
            sections.append(Section([doc_title or doc_id], number, number, text=body, level=1,
                                    paragraphs=[(number, body)]))
    if not pages:
        raise InputError(f"{path}: the corpus has no documents")
    return ParsedBook(title or corpus_title(path), pages, sections, [], str(path), file_hash or file_sha256(path),
                      format="beir")


# -- .txt / .md ----------------------------------------------------------------------------------

def split_pages(text: str, page_chars: int = PAGE_CHARS) -> list[str]:
    """Form feeds when present, else paragraph-aligned pieces of about `page_chars` characters."""
    if "\f" in text:
        return [p for p in text.split("\f")] or [""]
    pages, current = [], ""
    for para in re.split(r"\n\s*\n", text):
        if current and len(current) + len(para) > page_chars:
            pages.append(current)
            current = ""
        current = f"{current}\n\n{para}" if current else para
    pages.append(current)
    return pages


def _heading(line: str, markdown: bool) -> Optional[tuple[int, str]]:
    if markdown:
        m = _MD_HEADING.match(line)
        return (len(m.group(1)), m.group(2).strip()) if m else None
    s = line.strip()
    if _TXT_HEADING.match(s) and not s.endswith((",", ";")) and len(s.split()) <= 12:
        num = re.match(r"^(\d+(?:\.\d+)*)", s)
        return ((num.group(1).count(".") + 1) if num else 1, s)
    return None


def _paragraphs(page_text: str) -> Iterator[str]:
    for para in re.split(r"\n\s*\n", page_text):
        yield para


def parse_text(path: Path, title: Optional[str] = None, file_hash: Optional[str] = None) -> ParsedBook:
    return parse_headed(path, read_text(path), title, "text", markdown=path.suffix.lower() in (".md", ".markdown"),
                        file_hash=file_hash)


def parse_headed(path: Path, text: str, title: Optional[str], fmt: str, author: str = "",
                 markdown: bool = True, file_hash: Optional[str] = None) -> ParsedBook:
    """Text with Markdown headings (a .md file, or what ebook.py makes of a DOCX or HTML file)."""
    raw_pages = split_pages(text)
    pages = [Page(i, str(i), t.strip()) for i, t in enumerate(raw_pages, 1)]
    if not any(p.text for p in pages):
        raise InputError(f"{path}: the file has no text")
    book_title = title or _first_title(text, markdown) or path.stem
    sections = _text_sections(raw_pages, markdown)
    return ParsedBook(book_title, pages, sections, [], str(path), file_hash or file_sha256(path), format=fmt,
                      author=author)


def _first_title(text: str, markdown: bool) -> str:
    for line in text.splitlines()[:20]:
        h = _heading(line, markdown) if markdown else None
        if h and h[0] == 1:
            return h[1]
    return ""


def _text_sections(raw_pages: list[str], markdown: bool) -> list[Section]:
    sections: list[Section] = []
    stack: list[str] = []
    current: Optional[Section] = None
    for number, page_text in enumerate(raw_pages, 1):
        for para in _paragraphs(page_text):
            lines = [ln for ln in para.split("\n") if ln.strip()]
            while lines and (h := _heading(lines[0], markdown)):
                level, name = h
                stack = stack[: level - 1] + [name]
                current = Section(list(stack), number, number, level=len(stack))
                sections.append(current)
                lines = lines[1:]
            body = " ".join(" ".join(lines).split())
            if not body:
                continue
            if current is None:
                current = Section([f"Page {number}"] if not markdown else ["Text"], number, number)
                sections.append(current)
            current.paragraphs.append((number, body))
            current.page_end = max(current.page_end, number)
    for s in sections:
        s.text = "\n\n".join(t for _, t in s.paragraphs)
    return [s for s in sections if s.paragraphs]


def parse(path: Path, title: Optional[str] = None, file_hash: Optional[str] = None) -> ParsedBook:
    """Dispatch on the suffix: .jsonl (BEIR corpus), .txt, .md. `file_hash`: the file's sha256 when
    the caller has it already."""
    path = Path(path)
    if not path.exists() or not path.is_file():
        raise InputError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix in CORPUS_SUFFIXES:
        if not is_beir_corpus(path):
            raise InputError(f"{path}: not a BEIR corpus.jsonl (records need \"_id\" and \"text\")")
        return parse_beir(path, title, file_hash)
    if suffix in TEXT_SUFFIXES:
        return parse_text(path, title, file_hash)
    raise InputError(f"{path}: unsupported file type {suffix!r}")
