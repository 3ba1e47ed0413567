"""File -> book in the store, in one transaction: a failed or interrupted ingest changes nothing. A run over
many files (worker processes, the run's status) is ingest/run.py."""
from __future__ import annotations

import hashlib
import os
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

from slugify import slugify

from ragcli.ingest.paths import walk as folder_walk
from ragcli.ingest import chunking, ebook, ocr as ocr_mod, pdf, textdocs
from ragcli.models.embed_factory import describe_source
from ragcli.store import corpus as store
from ragcli.store import files as file_store
from ragcli.store.backend import is_postgres
from ragcli.store.sql import transaction
from ragcli.store.stage import EmbeddingStage
from ragcli.ingest import vocabulary
from ragcli.errors import InputError, NotFoundError, UsageError
from ragcli.text import file_sha256, public_chars, sha256
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


def discover(paths: Iterable[str], skipped: Optional[list[Path]] = None, notes: Optional[list[str]] = None,
             roots: Optional[Iterable[str]] = None) -> list[Path]:
    """Files named, and every supported file inside folders (recursively), in a stable order. Files
    in folders that are not taken are appended to `skipped` (the CLI reports them). Inside a folder
    only files whose real path lies in `roots` are taken (default: the folders named), symlinks
    leaving them and directories reached twice are skipped and described in `notes` (ingest/paths.py)."""
    given = [Path(raw).expanduser() for raw in paths]
    allowed = list(roots) if roots is not None else [str(p) for p in given if p.is_dir()]
    found: list[Path] = []
    for p in given:
        if p.is_dir():
            walked = folder_walk(p, allowed)
            if notes is not None:
                notes.extend(walked.notes())
            for name, _ in walked.files:
                f = Path(name)
                if wanted_in_folder(f):
                    found.append(f)
                elif skipped is not None and not f.name.startswith("."):
                    skipped.append(f)
        else:
            found.append(p)
    return found


def wanted_in_folder(f: Path) -> bool:
    """In a folder: every PDF, e-book and document (EPUB, MOBI, FB2, XPS, CBZ, DOCX, HTML), and a BEIR
    corpus.jsonl. Text and Markdown files (READMEs, notes, sources of a book) are taken only when
    named on the command line."""
    suffix = f.suffix.lower()
    if suffix == ".jsonl":
        return f.name.lower() == "corpus.jsonl" or textdocs.is_beir_corpus(f)
    return suffix == ".pdf" or suffix in EBOOK_SUFFIXES


def read_when_named(f: Path) -> bool:
    """A file a folder walk leaves that ingest reads when it is named: text and Markdown."""
    return f.suffix.lower() in TEXT_SUFFIXES and f.suffix.lower() != ".jsonl"


def slug(text: str, fallback: str = "book", limit: int = 32) -> str:
    """A short stable id from a file name, transliterated to ASCII and cut at a word boundary:
    "fm4-25-11-first-aid", "Ünïcode name" -> "unicode-name", "Привет" -> "privet". A name with no
    letters or digits at all ("☠☠☠") gives `fallback` (the caller passes the file's hash prefix)."""
    return slugify(text, max_length=limit, word_boundary=True) or fallback


def parse_file(path: Path, password: Optional[str], title: Optional[str],
               progress: Optional[Progress], file_hash: Optional[str] = None, ocr: str = "auto",
               ocr_engine: str = "") -> ParsedBook:
    def on_page(done: int, total: int, ocr_done: int) -> None:
        progress("pages", done, total)
        if ocr_done:  # pages read by OCR so far, of the book's pages
            progress("ocr", ocr_done, total)

    on_page = on_page if progress else None
    engine = (lambda: ocr_mod.make_engine(ocr_engine)) if ocr_engine else None
    if path.suffix.lower() in EBOOK_SUFFIXES:
        return ebook.parse(path, title, on_page, ocr, engine, file_hash)
    if path.suffix.lower() in TEXT_SUFFIXES:
        return textdocs.parse(path, title, file_hash)
    if path.exists() and path.is_file() and path.suffix.lower() not in SUPPORTED:
        with open(path, "rb") as fh:
            if b"%PDF-" not in fh.read(1024):
                raise InputError(f"{path}: not a PDF file (supported: {', '.join(SUPPORTED)})")
    return pdf.parse(path, password=password, title=title, on_page=on_page, file_hash=file_hash, ocr=ocr,
                     ocr_engine=engine)


@dataclass
class FileOptions:
    """How to read and store each file of one ingest run."""

    book_id: Optional[str] = None
    title: Optional[str] = None
    password: Optional[str] = None
    replace: bool = False
    strict: bool = False
    ocr: str = "auto"
    ocr_engine: str = ""
    keep_file: Optional[bool] = None  # keep a copy of the file in the library; None: on PostgreSQL only


@dataclass
class Prepared:
    """A file read, cut into passages, its vocabulary found: what a parsing worker hands back."""

    path: Path
    parsed: ParsedBook
    passages: list
    texts: list[str]
    terms: list
    seconds: float
    stat: Optional[tuple[int, int]] = None  # (size, mtime_ns) before the file was read
    read_from: Optional[Path] = None  # where its bytes were read, when not `path` (paths.opened)


def check_name(path: Path) -> None:
    """The corpus keeps a book's path as text: a name whose bytes are not UTF-8 (Python holds them as
    lone surrogates) cannot be stored, and is refused before anything is read."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(str(path)).decode("utf-8", "backslashreplace")
        raise InputError(f"{shown}: the file name is not valid UTF-8; rename the file to ingest it") from None


def prepare(path: Path, opts: FileOptions, file_hash: Optional[str],
            progress: Optional[Progress] = None, seen: Optional[tuple[int, int]] = None,
            read_from: Optional[Path] = None) -> Prepared:
    """Parse, chunk and extract the vocabulary of one file: no database, no model (runs in a worker).
    `seen`: the file's (size, mtime_ns) before its hash was taken (else taken now). A file whose size
    or mtime changed while it was read is refused: its hash and its text may not be of the same bytes."""
    t0 = time.perf_counter()
    check_name(path)
    source = read_from or path  # `read_from`: where the bytes of `path` are read (paths.opened)
    seen = seen or _stat(source)
    parsed = parse_file(source, opts.password, opts.title, progress, file_hash, opts.ocr, opts.ocr_engine)
    if read_from is not None:
        parsed.source_path = str(path)
    if seen and _stat(source) != seen:
        raise InputError(f"{path}: changed while it was being read; not ingested (try again when it is "
                         f"complete)")
    if opts.strict and parsed.warnings:
        raise InputError(f"{path}: {parsed.warnings[0]}; not ingested (--strict)")
    passages = chunking.chunk_book(parsed.sections, parsed.figures)
    for p in passages:  # a symbol font's private-use bullets as the characters they draw (text.public_chars)
        p.text = public_chars(p.text)
    _check_not_empty(path, parsed, passages)
    _mark_ocr(passages, parsed)
    texts = [p.embed_text(parsed.title) for p in passages]
    terms = vocabulary.extract_terms(parsed)
    return Prepared(path, parsed, passages, texts, terms, time.perf_counter() - t0, seen, read_from)


def ingest_file(conn, path: Path, embedder, *, book_id: Optional[str] = None, title: Optional[str] = None,
                password: Optional[str] = None, replace: bool = False, strict: bool = False,
                progress: Optional[Progress] = None, ocr: str = "auto", ocr_engine: str = "",
                on_embedded: Optional[Callable[[int], None]] = None, read_from: Optional[Path] = None,
                keep_file: Optional[bool] = None) -> IngestResult:
    """Parse, chunk, embed and store one file. A book that lost text while being read goes in with
    `warnings`, or with strict=True is refused (InputError, nothing written). `ocr`: auto | always |
    never; `ocr_engine`: a name of ingest.ocr.ENGINES ("" = the default). `read_from`: the path its
    bytes (hash and text) are read from, when not `path` itself (ingest/paths.opened: a descriptor
    opened and checked once). `keep_file`: keep a copy of the file in the library (None: on
    PostgreSQL, not in a SQLite file)."""
    opts = FileOptions(book_id, title, password, replace, strict, ocr, ocr_engine, keep_file)
    t0 = time.perf_counter()
    check_name(path)
    source = read_from or path
    seen = _stat(source)  # before the bytes are read: a file written after this is seen as changed
    file_hash = _file_hash(source) if source.is_file() else None  # read once: the parsers reuse it
    same = store.book_by_hash(conn, file_hash) if file_hash else None
    if same and (book_id in (None, same.id)):  # the same bytes are already in: do not even parse
        return _unchanged(path, same, t0)
    return store_prepared(conn, prepare(path, opts, file_hash, progress, seen, read_from), embedder, opts, progress,
                          t0, on_embedded)


def store_prepared(conn, prep: Prepared, embedder, opts: FileOptions, progress: Optional[Progress] = None,
                   t0: Optional[float] = None, on_embedded: Optional[Callable[[int], None]] = None) -> IngestResult:
    """Embed what is not stored yet (each batch committed to the stage: an interruption loses no
    embedding) and write the book in one transaction."""
    t0 = time.perf_counter() - prep.seconds if t0 is None else t0
    t_parse = time.perf_counter()
    parsed, passages, texts, terms = prep.parsed, prep.passages, prep.texts, prep.terms
    path = prep.path
    same = store.book_by_hash(conn, parsed.file_hash)
    if same and (opts.book_id in (None, same.id)):
        return _unchanged(path, same, t0)
    book_id = opts.book_id or slug(path.stem, fallback=parsed.file_hash[:12])
    existing = store.book_by_id(conn, book_id)
    if existing and not opts.replace:
        raise UsageError(f"book id '{book_id}' already holds a different file ({existing.path}); "
                         f"use --replace to swap it, or --id NEW_ID to add this one beside it")
    store.check_embedding(conn, embedder.name)
    kept = _file_copy(conn, prep, opts)  # read before any embedding: a refusal costs nothing
    embed_hashes = [sha256(embedder.name + "\n" + t) for t in texts]
    stage = EmbeddingStage(conn)
    vectors, reused = embed_staged(conn, embedder, texts, embed_hashes, progress, on_embedded, stage)
    t_embed = time.perf_counter()
    term_vecs = embedder.embed([t for t, _, _ in terms]) if terms else []
    t_terms = time.perf_counter()
    written = _store(conn, embedder, book_id, parsed, (passages, embed_hashes, vectors), (terms, term_vecs),
                     replace=bool(existing), file_row=(str(path.resolve()), *prep.stat) if prep.stat else None,
                     same_id=opts.book_id, kept=kept)
    if written is not None:  # another writer stored the same bytes meanwhile (a shared library)
        stage.close()
        return _unchanged(path, written, t0)
    stage.drop(embed_hashes)  # in the corpus now
    stage.close()
    t_end = time.perf_counter()
    return IngestResult(
        str(path), "replaced" if existing else "added", book_id, parsed.title, len(parsed.pages),
        len(parsed.sections), len(parsed.figures), sum(p.kind == "passage" for p in passages),
        ocr_pages=sum(bool(p.ocr) for p in parsed.pages),
        embedded=len(passages) - reused, reused=reused, seconds=t_end - t0,
        timings={"parse": prep.seconds, "wait": max(0.0, t_parse - t0 - prep.seconds), "embed": t_embed - t_parse,
                 "vocabulary": t_terms - t_embed, "store": t_end - t_terms},
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
           replace: bool, file_row: Optional[tuple[str, int, int]] = None, same_id: Optional[str] = None,
           kept: Optional[tuple[str, bytes]] = None):
    """Write the book in one transaction: all of it or nothing (an error or Ctrl-C rolls back).
    `file_row`: (absolute path, size, mtime in ns) of the file as it was before it was read; `kept`:
    (name, bytes) of the file, to keep a copy of in the library.
    Returns None, or the book another writer stored from the same bytes while this one was reading
    (checked again under the write lock: two machines ingesting one file store it once)."""
    passages, embed_hashes, vectors = passage_parts
    terms, term_vecs = term_parts
    labels = {p.number: p.label for p in parsed.pages}
    with transaction(conn, lock="ingest"):
        same = None if replace else store.book_by_hash(conn, parsed.file_hash)
        if same and same_id in (None, same.id):
            return same
        if not replace and store.book_by_id(conn, book_id):
            raise UsageError(f"book id '{book_id}' was just taken by another writer; try again, or give --id NEW_ID")
        store.ensure_vector_tables(conn, embedder.name, embedder.dim, _source(embedder))
        if replace:
            store.delete_book(conn, book_id)
        store.insert_book(conn, book_id, parsed, labels)
        store.insert_passages(conn, book_id, passages, [sha256(p.text) for p in passages],
                              embed_hashes, vectors)
        store.insert_terms(conn, book_id, terms, term_vecs)
        if file_row:
            file_store.record_file(conn, file_row[0], book_id, file_row[1], file_row[2], parsed.file_hash)
        if kept:
            file_store.keep_copy(conn, parsed.file_hash, kept[0], kept[1])
    return None


def _file_copy(conn, prep: Prepared, opts: FileOptions) -> Optional[tuple[str, bytes]]:
    """(name, bytes) of the file when the library keeps a copy of it (a PostgreSQL library by default,
    `--keep-file` / `--no-keep-file` either way), else None. The bytes must be the ones the book was
    read from (same sha256), and at most file_store.KEEP_MAX_BYTES."""
    keep = opts.keep_file if opts.keep_file is not None else is_postgres(conn)
    if not keep:
        return None
    source = prep.read_from or prep.path
    size = _stat(source)
    if size is None:
        return None  # not a regular file (a pipe): nothing to keep
    if size[0] > file_store.KEEP_MAX_BYTES:
        raise UsageError(f"{prep.path}: {size[0] / 2**20:.0f} MB is more than the library keeps of a file "
                         f"({file_store.KEEP_MAX_BYTES // 2**20} MB); ingest it with --no-keep-file "
                         f"(its pages are then shown only where the file is)")
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise InputError(f"{prep.path}: cannot be read ({exc.strerror})") from exc
    if hashlib.sha256(data).hexdigest() != prep.parsed.file_hash:
        raise InputError(f"{prep.path}: changed while it was being read; not ingested (try again when it is "
                         f"complete)")
    return prep.path.name, data


def _stat(path: Path) -> Optional[tuple[int, int]]:
    """(size, mtime in ns) of a regular file, None for anything else."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


def _file_hash(path: Path) -> str:
    try:
        return file_sha256(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from exc


def _source(embedder) -> dict:
    return describe_source(embedder)


EMBED_CHUNK = 256  # texts per staged commit (the embedder batches and parallelises inside)


def embed_staged(conn, embedder, texts: list[str], hashes: list[str], progress: Optional[Progress] = None,
                 on_embedded: Optional[Callable[[int], None]] = None,
                 stage: Optional[EmbeddingStage] = None) -> tuple[list[bytes], int]:
    """Vectors for `texts`: ones in the corpus or the stage (store/stage.py) reused, the rest
    embedded EMBED_CHUNK at a time, each chunk committed to the stage while the next one is being
    embedded (a helper thread: the embedder waits on a server or on onnxruntime, outside the GIL)."""
    stage = stage or EmbeddingStage(conn)
    known = store.vectors_by_embed_hash(conn, hashes)
    known.update(stage.get(h for h in hashes if h not in known))
    todo = list(dict.fromkeys(h for h in hashes if h not in known))
    first = {}
    for i, h in enumerate(hashes):
        first.setdefault(h, i)
    total = len(todo)
    if progress:
        progress("embed", 0, total)
    chunks = [todo[i:i + EMBED_CHUNK] for i in range(0, total, EMBED_CHUNK)]
    done = 0
    with ThreadPoolExecutor(1, thread_name_prefix="ragcli-embed-ahead") as ahead:
        pending = ahead.submit(embedder.embed, [texts[first[h]] for h in chunks[0]]) if chunks else None
        for n, chunk in enumerate(chunks):
            vecs = pending.result()
            if n + 1 < len(chunks):
                pending = ahead.submit(embedder.embed, [texts[first[h]] for h in chunks[n + 1]])
            rows = [(h, v.astype("float32").tobytes()) for h, v in zip(chunk, vecs)]
            stage.put(rows)
            known.update(rows)
            done += len(chunk)
            if progress:
                progress("embed", done, total)
            if on_embedded:
                on_embedded(len(chunk))
    return [known[h] for h in hashes], len(hashes) - total


def remove_book(conn, book_id: str) -> None:
    if not store.book_by_id(conn, book_id):
        raise NotFoundError(f"no book with id '{book_id}' (see `ragcli books`)")
    with transaction(conn):
        store.delete_book(conn, book_id)
