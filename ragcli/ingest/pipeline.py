"""File -> book in the store, in one transaction: a failed or interrupted ingest changes nothing."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

from ragcli.ingest import chunking
from ragcli.store import corpus as store
from ragcli.store.sql import transaction
from ragcli.ingest import vocabulary
from ragcli.errors import InputError, UsageError
from ragcli.text import file_sha256, sha256
from ragcli.types import ParsedBook

Progress = Callable[[str, int, int], None]  # (phase: "pages" | "ocr" | "embed", done, total)
TEXT_SUFFIXES = (".jsonl", ".txt", ".md", ".markdown")  # .jsonl: a BEIR corpus.jsonl
EBOOK_SUFFIXES = (".epub", ".mobi", ".fb2", ".xps", ".oxps", ".cbz", ".docx", ".html", ".htm", ".xhtml")
SUPPORTED = (".pdf",) + EBOOK_SUFFIXES + TEXT_SUFFIXES  # ingest/ebook.py holds the same list


@dataclass
class IngestResult:
    path: str
    status: str  # added | replaced | unchanged | failed
    book_id: str = ""
    title: str = ""
    pages: int = 0
    sections: int = 0
    figures: int = 0
    passages: int = 0
    embedded: int = 0  # passages embedded now
    reused: int = 0  # passages whose stored vector was reused (same text and model)
    seconds: float = 0.0
    error: str = ""
    exit_code: int = 0
    timings: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # what was lost while reading (ingest/health.py)
    unreadable_pages: list[int] = field(default_factory=list)
    ocr_pages: int = 0  # pages read by OCR


def discover(paths: Iterable[str], skipped: Optional[list[Path]] = None) -> list[Path]:
    """Files named, and every supported file inside folders (recursively), in a stable order. Files
    in folders that are not taken are appended to `skipped` (the CLI reports them)."""
    found: list[Path] = []
    for raw in paths:
        p = Path(raw).expanduser()
        if p.is_dir():
            for f in sorted(f for f in p.rglob("*") if f.is_file()):
                if _wanted_in_folder(f):
                    found.append(f)
                elif skipped is not None and not f.name.startswith("."):
                    skipped.append(f)
        else:
            found.append(p)
    return found


def _wanted_in_folder(f: Path) -> bool:
    """In a folder: every PDF, e-book and document (EPUB, MOBI, FB2, XPS, CBZ, DOCX, HTML), and a BEIR
    corpus.jsonl. Text and Markdown files (READMEs, notes, sources of a book) are taken only when
    named on the command line."""
    suffix = f.suffix.lower()
    if suffix == ".jsonl":
        from ragcli.ingest import textdocs

        return f.name.lower() == "corpus.jsonl" or textdocs.is_beir_corpus(f)
    return suffix == ".pdf" or suffix in EBOOK_SUFFIXES


def slug(text: str, fallback: str = "book", limit: int = 32) -> str:
    """A short stable id from a file name, transliterated to ASCII and cut at a word boundary:
    "fm4-25-11-first-aid", "Ünïcode name" -> "unicode-name", "Привет" -> "privet". A name with no
    letters or digits at all ("☠☠☠") gives `fallback` (the caller passes the file's hash prefix)."""
    from slugify import slugify

    return slugify(text, max_length=limit, word_boundary=True) or fallback


def parse_file(path: Path, password: Optional[str], title: Optional[str],
               progress: Optional[Progress], file_hash: Optional[str] = None, ocr: str = "auto",
               ocr_engine: str = "") -> ParsedBook:
    from ragcli.ingest import ocr as ocr_mod
    from ragcli.ingest import pdf

    def on_page(done: int, total: int, ocr_done: int) -> None:
        progress("pages", done, total)
        if ocr_done:  # pages read by OCR so far, of the book's pages
            progress("ocr", ocr_done, total)

    on_page = on_page if progress else None
    engine = (lambda: ocr_mod.make_engine(ocr_engine)) if ocr_engine else None
    if path.suffix.lower() in EBOOK_SUFFIXES:
        from ragcli.ingest import ebook

        return ebook.parse(path, title, on_page, ocr, engine, file_hash)
    if path.suffix.lower() in TEXT_SUFFIXES:
        from ragcli.ingest import textdocs

        return textdocs.parse(path, title, file_hash)
    if path.exists() and path.is_file() and path.suffix.lower() not in SUPPORTED:
        with open(path, "rb") as fh:
            if b"%PDF-" not in fh.read(1024):
                raise InputError(f"{path}: not a PDF file (supported: {', '.join(SUPPORTED)})")
    return pdf.parse(path, password=password, title=title, on_page=on_page, file_hash=file_hash, ocr=ocr,
                     ocr_engine=engine)


def ingest_file(conn, path: Path, embedder, *, book_id: Optional[str] = None, title: Optional[str] = None,
                password: Optional[str] = None, replace: bool = False, strict: bool = False,
                progress: Optional[Progress] = None, ocr: str = "auto", ocr_engine: str = "") -> IngestResult:
    """Parse, chunk, embed and store one file. A book that lost text while being read goes in with
    `warnings`, or with strict=True is refused (InputError, nothing written). `ocr`: auto | always |
    never; `ocr_engine`: a name of ingest.ocr.ENGINES ("" = the default)."""
    t0 = time.perf_counter()
    file_hash = _file_hash(path) if path.is_file() else None  # read once: the parsers reuse it
    same = store.book_by_hash(conn, file_hash) if file_hash else None
    if same and (book_id in (None, same.id)):  # the same bytes are already in: do not even parse
        return _unchanged(path, same, t0)
    parsed = parse_file(path, password, title, progress, file_hash, ocr, ocr_engine)
    t_parse = time.perf_counter()
    same = store.book_by_hash(conn, parsed.file_hash)
    if same and (book_id in (None, same.id)):
        return _unchanged(path, same, t0)
    if strict and parsed.warnings:
        raise InputError(f"{path}: {parsed.warnings[0]}; not ingested (--strict)")
    book_id = book_id or slug(path.stem, fallback=parsed.file_hash[:12])
    existing = store.book_by_id(conn, book_id)
    if existing and not replace:
        raise UsageError(f"book id '{book_id}' already holds a different file ({existing.path}); "
                         f"use --replace to swap it, or --id NEW_ID to add this one beside it")
    store.check_embedding(conn, embedder.name)
    passages = chunking.chunk_book(parsed.sections, parsed.figures)
    _check_not_empty(path, parsed, passages)
    _mark_ocr(passages, parsed)
    texts = [p.embed_text(parsed.title) for p in passages]
    embed_hashes = [sha256(embedder.name + "\n" + t) for t in texts]
    vectors, reused = _vectors(conn, embedder, texts, embed_hashes, progress)
    t_embed = time.perf_counter()
    terms = vocabulary.extract_terms(parsed)
    term_vecs = embedder.embed([t for t, _, _ in terms]) if terms else []
    t_terms = time.perf_counter()
    _store(conn, embedder, book_id, parsed, (passages, embed_hashes, vectors), (terms, term_vecs),
           replace=bool(existing))
    t_end = time.perf_counter()
    return IngestResult(
        str(path), "replaced" if existing else "added", book_id, parsed.title, len(parsed.pages),
        len(parsed.sections), len(parsed.figures), sum(p.kind == "passage" for p in passages),
        ocr_pages=sum(bool(p.ocr) for p in parsed.pages),
        embedded=len(passages) - reused, reused=reused, seconds=t_end - t0,
        timings={"parse": t_parse - t0, "embed": t_embed - t_parse, "vocabulary": t_terms - t_embed,
                 "store": t_end - t_terms},
        warnings=list(parsed.warnings), unreadable_pages=list(parsed.unreadable_pages),
    )


def _unchanged(path: Path, same, t0: float) -> IngestResult:
    return IngestResult(str(path), "unchanged", same.id, same.title, same.page_count, same.sections,
                        same.figures, same.passages, seconds=time.perf_counter() - t0, ocr_pages=same.ocr_pages,
                        warnings=list(same.warnings), unreadable_pages=list(same.unreadable_pages))


def _check_not_empty(path: Path, parsed: ParsedBook, passages) -> None:
    """Never an empty book in silence: pages with text that give no passage is a failed ingest."""
    if any(p.kind == "passage" for p in passages):
        return
    chars = sum(len(p.text.strip()) for p in parsed.pages)
    if chars:
        raise InputError(f"{path}: {len(parsed.pages)} pages with {chars:,} characters of text gave no "
                         f"passage (every line was taken for a running header, a heading or a caption)")
    raise InputError(f"{path}: no text to index")


def _mark_ocr(passages, parsed: ParsedBook) -> None:
    """A passage records the OCR engine when any of its pages was OCR'd."""
    engines = {p.number: p.ocr for p in parsed.pages if p.ocr}
    if engines:
        for p in passages:
            p.ocr = next((engines[n] for n in range(p.page_start, p.page_end + 1) if n in engines), "")


def _store(conn, embedder, book_id: str, parsed: ParsedBook, passage_parts, term_parts, *,
           replace: bool) -> None:
    """Write the book in one transaction: all of it or nothing (an error or Ctrl-C rolls back)."""
    passages, embed_hashes, vectors = passage_parts
    terms, term_vecs = term_parts
    labels = {p.number: p.label for p in parsed.pages}
    with transaction(conn):
        store.ensure_vector_tables(conn, embedder.name, embedder.dim)
        if replace:
            store.delete_book(conn, book_id)
        store.insert_book(conn, book_id, parsed, labels)
        store.insert_passages(conn, book_id, passages, [sha256(p.text) for p in passages],
                              embed_hashes, vectors)
        store.insert_terms(conn, book_id, terms, term_vecs)


def _file_hash(path: Path) -> str:
    try:
        return file_sha256(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from exc


def _vectors(conn, embedder, texts, hashes, progress) -> tuple[list[bytes], int]:
    known = store.vectors_by_embed_hash(conn, hashes)
    todo = [i for i, h in enumerate(hashes) if h not in known]
    out: dict[int, bytes] = {}
    batch = 64
    total = len(todo)
    if progress:
        progress("embed", 0, total)
    for start in range(0, total, batch):
        idx = todo[start : start + batch]
        vecs = embedder.embed([texts[i] for i in idx])
        for i, vec in zip(idx, vecs):
            out[i] = vec.astype("float32").tobytes()
        if progress:
            progress("embed", min(start + batch, total), total)
    return [out[i] if i in out else known[hashes[i]] for i in range(len(texts))], len(texts) - total


def remove_book(conn, book_id: str) -> None:
    from ragcli.errors import NotFoundError

    if not store.book_by_id(conn, book_id):
        raise NotFoundError(f"no book with id '{book_id}' (see `ragcli books`)")
    with transaction(conn):
        store.delete_book(conn, book_id)
