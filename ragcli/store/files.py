"""Every SQL statement about the files books were read from and the folders `ragcli sync` keeps in line
(tables from migration m007_files_and_folders), and the passage lookups of `ragcli open` / `show`.

Writers take an open transaction (the caller's): a sync changes a book and its file rows together."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Optional

from ragcli.errors import CorpusError
from ragcli.store.corpus import BOOK_FILE, now
from ragcli.text import public_chars  # stored passages read before the ingest mapped them
from ragcli.types import Hit


@dataclass
class FileRow:
    path: str  # absolute
    book_id: str
    size: int
    mtime_ns: int
    file_hash: str


def all_files(conn) -> dict[str, FileRow]:
    """Every recorded file by path (a library of thousands is a few hundred kilobytes)."""
    return {r[0]: FileRow(*r) for r in conn.execute(
        "SELECT path, book_id, size, mtime_ns, file_hash FROM files")}


def record_file(conn, path: str, book_id: str, size: int, mtime_ns: int, file_hash: str) -> None:
    conn.execute("INSERT INTO files(path, book_id, size, mtime_ns, file_hash) VALUES (?,?,?,?,?) "
                 "ON CONFLICT(path) DO UPDATE SET book_id = excluded.book_id, size = excluded.size, "
                 "mtime_ns = excluded.mtime_ns, file_hash = excluded.file_hash",
                 (path, book_id, size, mtime_ns, file_hash))


def move_file(conn, old: str, new: str, book_id: str, size: int, mtime_ns: int, file_hash: str) -> None:
    """The book's file is now at `new` (same bytes): its file row and the book's path follow."""
    conn.execute("DELETE FROM files WHERE path = ?", (old,))
    record_file(conn, new, book_id, size, mtime_ns, file_hash)
    conn.execute("UPDATE books SET path = ? WHERE id = ?", (new, book_id))


def forget_file(conn, path: str) -> Optional[str]:
    """Drop a file's row; returns its book id when no other file of that book is recorded (the caller
    removes the book), else None (the book's path moves to one of its other files)."""
    row = conn.execute("SELECT book_id FROM files WHERE path = ?", (path,)).fetchone()
    if not row:
        return None
    conn.execute("DELETE FROM files WHERE path = ?", (path,))
    other = conn.execute("SELECT path FROM files WHERE book_id = ? ORDER BY path LIMIT 1", (row[0],)).fetchone()
    if other is None:
        return row[0]
    conn.execute("UPDATE books SET path = ? WHERE id = ? AND path = ?", (other[0], row[0], path))
    return None


def book_paths(conn, book_id: str) -> list[str]:
    """Where the book was read from: its recorded files, then the path saved with the book."""
    paths = [r[0] for r in conn.execute("SELECT path FROM files WHERE book_id = ? ORDER BY path", (book_id,))]
    row = conn.execute("SELECT path FROM books WHERE id = ?", (book_id,)).fetchone()
    if row and row[0] not in paths:
        paths.append(row[0])
    return paths


def file_paths(conn, book_ids) -> dict[str, str]:
    """One recorded file per book (the book's own path when it has no file row)."""
    out: dict[str, str] = {}
    for book_id in set(book_ids):
        paths = book_paths(conn, book_id)
        if paths:
            out[book_id] = paths[0]
    return out


def books_without_files(conn) -> list[tuple[str, str, str]]:
    """(book id, path, file hash) of books with no file row (ingested before m007)."""
    return conn.execute("SELECT id, path, file_hash FROM books b WHERE NOT EXISTS "
                        "(SELECT 1 FROM files f WHERE f.book_id = b.id)").fetchall()


def book_hashes(conn) -> dict[str, str]:
    """file hash -> book id."""
    return {h: b for b, h in conn.execute("SELECT id, file_hash FROM books")}


def book_ids(conn) -> set[str]:
    return {r[0] for r in conn.execute("SELECT id FROM books")}


# -- folders --------------------------------------------------------------------------------------

def folders(conn) -> list[str]:
    return [r[0] for r in conn.execute("SELECT path FROM folders ORDER BY path")]


def remember_folders(conn, paths: list[str]) -> None:
    conn.executemany("INSERT INTO folders(path, added_at) VALUES (?, ?) ON CONFLICT(path) DO NOTHING",
                     [(p, now()) for p in paths])


def mark_synced(conn, paths: list[str]) -> None:
    stamp = now()
    conn.executemany("UPDATE folders SET synced_at = ? WHERE path = ?", [(stamp, p) for p in paths])


# -- one passage and its neighbours (open, show) ----------------------------------------------------

_HIT_SQL = ("SELECT p.id, p.kind, p.book_id, b.title, p.section_path, p.page_start, p.page_end,"
            " COALESCE(pg.label, CAST(p.page_start AS TEXT)), p.text, p.figure_number, p.text_hash, p.ocr,"
            f" {BOOK_FILE}"
            " FROM passages p JOIN books b ON b.id = p.book_id"
            " LEFT JOIN pages pg ON pg.book_id = p.book_id AND pg.number = p.page_start")


def _hit(row) -> Hit:
    return Hit(passage_id=row[0], kind=row[1], book_id=row[2], book_title=row[3],
               section_path=json.loads(row[4]), page_start=row[5], page_end=row[6], page_label=row[7],
               text=public_chars(row[8]), figure_number=row[9], text_hash=row[10], ocr=row[11], path=row[12])


def passage(conn, passage_id: int) -> Optional[Hit]:
    row = conn.execute(_HIT_SQL + " WHERE p.id = ?", (passage_id,)).fetchone()
    return _hit(row) if row else None


def neighbours(conn, hit: Hit, before: int = 1, after: int = 1) -> tuple[list[Hit], list[Hit]]:
    """The text passages just before and after `hit` in its book (by position)."""
    ordinal = conn.execute("SELECT ordinal FROM passages WHERE id = ?", (hit.passage_id,)).fetchone()[0]
    prev = conn.execute(_HIT_SQL + " WHERE p.book_id = ? AND p.kind = 'passage' AND p.ordinal < ?"
                        " ORDER BY p.ordinal DESC LIMIT ?", (hit.book_id, ordinal, before)).fetchall()
    nxt = conn.execute(_HIT_SQL + " WHERE p.book_id = ? AND p.kind = 'passage' AND p.ordinal > ?"
                       " ORDER BY p.ordinal LIMIT ?", (hit.book_id, ordinal, after)).fetchall()
    return [_hit(r) for r in reversed(prev)], [_hit(r) for r in nxt]


def has_table(conn, name: str) -> bool:
    if getattr(conn, "dialect", "sqlite") == "postgres":
        return conn.execute("SELECT 1 FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
                            (conn.schema, name)).fetchone() is not None
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


def passage_ids(conn, book_id: str) -> list[int]:
    """The text passages of a book, in order (not its figure captions)."""
    return [r[0] for r in conn.execute("SELECT id FROM passages WHERE book_id = ? AND kind = 'passage' ORDER BY ordinal",
                                       (book_id,))]


# -- copies of source files kept in the library (migration m010_file_copies) -------------------------

# The most of one file a library keeps: PostgreSQL's bytea holds up to 1 GB, and a copy is sent and
# read in one piece, so a book's file is kept up to this size (`ingest --no-keep-file` above it).
KEEP_MAX_BYTES = 256 * 1024 * 1024


def keep_copy(conn, file_hash: str, name: str, data: bytes) -> None:
    """Keep the bytes of a book's file (inside the ingest's transaction); one copy per hash."""
    conn.execute("INSERT INTO file_copies(file_hash, name, size, data, stored_at) VALUES (?,?,?,?,?) "
                 "ON CONFLICT(file_hash) DO NOTHING", (file_hash, name, len(data), data, now()))


def copy_sizes(conn) -> dict[str, tuple[str, int]]:
    """file hash -> (name, size) of every kept copy (without their bytes)."""
    return {r[0]: (r[1], r[2]) for r in conn.execute("SELECT file_hash, name, size FROM file_copies")}


def copy_bytes(conn, file_hash: str) -> Optional[tuple[str, bytes]]:
    """(name, bytes) of the kept copy of a file, or None."""
    row = conn.execute("SELECT name, data FROM file_copies WHERE file_hash = ?", (file_hash,)).fetchone()
    return (row[0], bytes(row[1])) if row else None


def _same_bytes(path: str, file_hash: str, row: Optional[FileRow]) -> bool:
    """Whether the file at `path` holds the bytes of `file_hash`: its recorded size and mtime unchanged
    (as `sync` trusts them), else its sha256."""
    import os

    from ragcli.text import file_sha256

    try:
        st = os.stat(path)
        if row is not None and row.file_hash == file_hash and (row.size, row.mtime_ns) == (st.st_size, st.st_mtime_ns):
            return True
        return file_sha256(path) == file_hash
    except OSError:
        return False


def source_file(conn, hit: Hit) -> Optional[str]:
    """The file to show a passage's page from: a local file of the book with the same hash as when it
    was read (its recorded paths), else the library's kept copy (written once to the cache folder, by
    hash), else the book's path as it is now (a changed file, as before copies were kept), else None."""
    import os

    book = conn.execute("SELECT file_hash, path FROM books WHERE id = ?", (hit.book_id,)).fetchone()
    if book is None:
        return None
    file_hash = book[0]
    rows = {r[0]: FileRow(*r) for r in conn.execute(
        "SELECT path, book_id, size, mtime_ns, file_hash FROM files WHERE book_id = ?", (hit.book_id,))}
    candidates = list(dict.fromkeys([p for p in (hit.path, *book_paths(conn, hit.book_id)) if p]))
    for path in candidates:
        if os.path.isabs(path) and os.path.isfile(path) and _same_bytes(path, file_hash, rows.get(path)):
            return path
    cached = _cached_copy(conn, file_hash, book[1])
    if cached:
        return cached
    return next((p for p in candidates if os.path.isabs(p) and os.path.isfile(p)), None)


def _cached_copy(conn, file_hash: str, book_path: str) -> Optional[str]:
    """The kept copy of `file_hash` as a file in the cache folder (files/<hash><suffix>), written the
    first time it is asked for (to a temporary name, then renamed: readers never see half a file)."""
    import os
    import tempfile
    from pathlib import Path

    from ragcli.config import cache_dir

    # the hash and the name come from the library (a shared one is written by others): the cache file's
    # name is made of a sha256's 64 hex digits and an ASCII suffix only, never of a stored path's parts
    if not re.fullmatch(r"[0-9a-f]{64}", file_hash or ""):
        return None
    info = conn.execute("SELECT name, size FROM file_copies WHERE file_hash = ?", (file_hash,)).fetchone()
    if info is None:
        return None
    suffix = Path(info[0] or book_path).suffix.lower()
    if not re.fullmatch(r"\.[a-z0-9]{1,10}", suffix):
        suffix = ""
    folder = cache_dir() / "files"
    target = folder / f"{file_hash}{suffix}"
    if target.is_file() and target.stat().st_size == info[1]:
        return str(target)
    found = copy_bytes(conn, file_hash)
    if found is None:
        return None
    tmp = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".part-", dir=folder)
        with os.fdopen(fd, "wb") as fh:
            fh.write(found[1])
        os.replace(tmp, target)
    except OSError as exc:
        raise CorpusError(f"cannot write the library's copy of the book's file to {folder}: {exc.strerror} "
                          f"(set RAGCLI_CACHE to a folder you may write)") from exc
    finally:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
    return str(target)
