"""Folders kept in line with the corpus: a plan (added / changed / moved / gone), then each change
applied in its own transaction.

Rules:
- A file's content is hashed only when its size or modification time differ from what was recorded
  when it was read (an unchanged library costs one `stat` a file).
- changed (same path, other bytes): re-ingested under the same book id in one transaction; passages
  whose text is unchanged keep their vectors (as `ingest --replace` does).
- moved (a new path with the bytes of a recorded file that is no longer there): only the path changes.
- linked (a new path with the bytes of a book already in the corpus whose file is still there): the
  file is recorded for that book; nothing is read.
- gone (a recorded file no longer in the folder): reported; with prune, its book is removed (unless
  another recorded file holds the same bytes). A folder that is missing altogether is an error, never
  a reason to prune everything in it (an unmounted disk looks like that).
- A kill or Ctrl-C leaves every change either applied or not: each is one transaction, and the next
  sync picks up what was left.
"""
from __future__ import annotations

import os
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

from ragcli.errors import InputError, RagcliError, UsageError
from ragcli.ingest import paths, pipeline
from ragcli.store import corpus as store
from ragcli.store import files
from ragcli.store.sql import transaction
from ragcli.text import file_sha256

ACTIONS = ("added", "changed", "moved", "linked", "gone")


@dataclass
class Change:
    action: str  # added | changed | moved | linked | gone
    path: str  # absolute
    book_id: str = ""
    old_path: str = ""  # moved: where the file was
    size: int = 0
    mtime_ns: int = 0
    file_hash: str = ""
    # after apply:
    status: str = "planned"  # planned | done | removed (gone, pruned) | kept (gone, not pruned) | failed | skipped
    title: str = ""
    passages: int = 0
    embedded: int = 0  # passage vectors computed now
    reused: int = 0  # passage vectors kept (same text, same model)
    seconds: float = 0.0
    error: str = ""
    exit_code: int = 0
    warnings: list[str] = field(default_factory=list)


@dataclass
class SyncPlan:
    folders: list[str]
    changes: list[Change] = field(default_factory=list)
    unchanged: int = 0  # files on disk whose recorded size, mtime (or bytes) match
    touched: list[files.FileRow] = field(default_factory=list)  # same bytes, new mtime: recorded quietly
    busy: list[str] = field(default_factory=list)  # written less than `settle` seconds ago: left for later
    missing_folders: list[str] = field(default_factory=list)
    hashed: int = 0  # files whose content was read to hash it
    failed: list[Change] = field(default_factory=list)  # files that could not even be hashed
    skipped: list[str] = field(default_factory=list)  # links leaving the folders, folders reached twice


@dataclass
class SyncReport:
    folders: list[str]
    changes: list[Change]
    unchanged: int
    dry_run: bool
    prune: bool
    hashed: int = 0
    busy: list[str] = field(default_factory=list)
    missing_folders: list[str] = field(default_factory=list)
    seconds: float = 0.0
    stopped: bool = False  # interrupted between two changes; the rest is left for the next sync
    skipped: list[str] = field(default_factory=list)  # links leaving the folders, folders reached twice

    def count(self, action: str) -> int:
        return sum(1 for c in self.changes if c.action == action and c.status not in ("failed", "skipped"))

    @property
    def failed(self) -> list[Change]:
        return [c for c in self.changes if c.status == "failed"]


# -- the plan -------------------------------------------------------------------------------------

def folder_paths(raw: Iterable[str]) -> list[str]:
    """Absolute, normalised folder paths (symlinks resolved), without repeats or folders inside another."""
    out: list[str] = []
    for r in raw:
        p = str(Path(r).expanduser().resolve())
        if p not in out:
            out.append(p)
    return [p for p in out if not any(p != q and _under(p, [q]) for q in out)]


def _under(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def scan(root: str, out: dict[str, tuple[int, int]], roots: Optional[list[str]] = None,
         notes: Optional[list[str]] = None) -> None:
    """Every file a folder sync takes (as `ingest FOLDER` does: PDFs, e-books, documents, a BEIR
    corpus), by absolute path -> (size, mtime in ns). Hidden files and folders are left out: a copy in
    progress is often written as one (`.book.pdf.part`). Only files whose real path is inside `roots`
    (default: `root`) are taken; links leaving them and folders reached twice go to `notes`
    (ingest/paths.py)."""
    walked = paths.walk(root, roots or [root], hidden=False)
    if notes is not None:
        notes.extend(walked.notes())
    for path, st in walked.files:
        if pipeline.wanted_in_folder(Path(path)):
            out[path] = (st.st_size, st.st_mtime_ns)


def plan(conn, folders: list[str], *, settle: float = 0.0, skip: Optional[dict] = None,
         clock: Callable[[], float] = time.time) -> SyncPlan:
    """What a sync of `folders` (absolute, see folder_paths) would do. Nothing is written.
    `settle`: files modified less than this many seconds ago are left for a later round (being
    written). `skip`: path -> (size, mtime) of files that failed before; left alone until they change."""
    result = SyncPlan(list(folders))
    present = [f for f in folders if os.path.isdir(f)]
    result.missing_folders = [f for f in folders if f not in present]
    disk: dict[str, tuple[int, int]] = {}
    for root in present:
        scan(root, disk, present, result.skipped)
    known = files.all_files(conn)
    scope = {p: row for p, row in known.items() if _under(p, present)}
    for book_id, path, file_hash in files.books_without_files(conn):  # books ingested before m007
        if os.path.isabs(path) and _under(path, present) and path not in scope:
            scope[path] = files.FileRow(path, book_id, -1, -1, file_hash)
    now = clock()
    new: list[Change] = []
    for path in sorted(disk):
        size, mtime = disk[path]
        if settle and now - mtime / 1e9 < settle:
            result.busy.append(path)
            continue
        row = scope.get(path)
        if row and (row.size, row.mtime_ns) == (size, mtime):
            result.unchanged += 1
            continue
        if skip and skip.get(path) == (size, mtime):
            continue
        refused = not_a_book(path, size)
        if refused:  # the real sync would fail on it: the plan (and a dry run) says so instead of "added"
            result.failed.append(Change("added" if not row else "changed", path, size=size, mtime_ns=mtime,
                                        status="failed", error=refused, exit_code=InputError.exit_code))
            continue
        try:
            digest = file_sha256(path)
        except OSError as exc:
            result.failed.append(Change("added" if not row else "changed", path, size=size, mtime_ns=mtime,
                                        status="failed", error=f"{path}: cannot be read ({exc.strerror})",
                                        exit_code=InputError.exit_code))
            continue
        result.hashed += 1
        if row and digest == row.file_hash:
            result.unchanged += 1
            result.touched.append(files.FileRow(path, row.book_id, size, mtime, digest))
        elif row:
            result.changes.append(Change("changed", path, row.book_id, size=size, mtime_ns=mtime, file_hash=digest))
        else:
            new.append(Change("added", path, size=size, mtime_ns=mtime, file_hash=digest))
    vanished = {p: row for p, row in scope.items() if p not in disk}
    _moves_and_links(conn, new, vanished)
    result.changes += new
    result.changes += [Change("gone", p, row.book_id, file_hash=row.file_hash) for p, row in sorted(vanished.items())]
    return result


def not_a_book(path: str, size: int) -> str:
    """Why a file cannot be ingested, seen without parsing it (empty; a .pdf that does not start as
    a PDF does), or "". Anything subtler is found when the file is read."""
    if size == 0:
        return f"{path}: the file is empty (0 bytes)"
    if path.lower().endswith(".pdf"):
        try:
            with open(path, "rb") as f:
                head = f.read(1024)
        except OSError:
            return ""  # hashing it reports the error
        if b"%PDF-" not in head:
            return f"{path}: not a PDF (no %PDF- header in its first 1024 bytes)"
    return ""


def _moves_and_links(conn, new: list[Change], vanished: dict[str, files.FileRow]) -> None:
    """New paths whose bytes are already in the corpus: moved from a vanished file of those bytes, or
    linked to a book whose file is still in place. Updates `new` and `vanished` in place."""
    by_hash: dict[str, list[str]] = {}
    for p, row in sorted(vanished.items()):
        by_hash.setdefault(row.file_hash, []).append(p)
    books = files.book_hashes(conn)
    adding: set[str] = set()
    for change in new:
        olds = by_hash.get(change.file_hash)
        if olds:
            old = olds.pop(0)
            change.action, change.old_path, change.book_id = "moved", old, vanished.pop(old).book_id
            continue
        book_id = books.get(change.file_hash)
        if book_id:
            alive = [p for p in files.book_paths(conn, book_id) if os.path.isabs(p) and os.path.exists(p)]
            change.book_id = book_id
            if alive:
                change.action = "linked"
            else:  # its only known file is gone (outside the folders, or never recorded): a move
                change.action = "moved"
                change.old_path = next(iter(files.book_paths(conn, book_id)), "")
        elif change.file_hash in adding:  # a second copy of a file added in this sync
            change.action = "linked"
        else:
            adding.add(change.file_hash)


# -- applying it ----------------------------------------------------------------------------------

Embedder = Callable[[], object]  # gives the embedder; called only when a file must be read


def apply(conn, the_plan: SyncPlan, embedder: Embedder, *, prune: bool = False,
          on_change: Optional[Callable[[Change], None]] = None,
          should_stop: Optional[Callable[[], bool]] = None,
          progress_for: Optional[Callable[[str], object]] = None, **ingest_options) -> list[Change]:
    """Apply each change of the plan in its own transaction, in order; a file that fails is reported
    (status failed) and the others go on. `should_stop` is asked between changes."""
    if the_plan.touched:
        with transaction(conn):
            for row in the_plan.touched:
                files.record_file(conn, row.path, row.book_id, row.size, row.mtime_ns, row.file_hash)
    done: list[Change] = []
    for change in the_plan.failed:
        done.append(change)
        if on_change:
            on_change(change)
    for change in the_plan.changes:
        if should_stop and should_stop():
            change.status = "skipped"
            done.append(change)
            continue
        t0 = time.perf_counter()
        try:
            _apply_one(conn, change, embedder, prune, progress_for, ingest_options)
        except RagcliError as exc:
            change.status, change.error, change.exit_code = "failed", str(exc), exc.exit_code
        change.seconds = time.perf_counter() - t0
        done.append(change)
        if on_change:
            on_change(change)
    return done


def _apply_one(conn, change: Change, embedder: Embedder, prune: bool, progress_for, options: dict) -> None:
    if change.action == "moved":
        with transaction(conn):
            files.move_file(conn, change.old_path, change.path, change.book_id, change.size, change.mtime_ns,
                            change.file_hash)
        change.status = "done"
    elif change.action == "linked":
        book = store.book_by_hash(conn, change.file_hash)
        if book is None:  # its book went since the plan (e.g. the first copy failed): read it
            change.action = "added"
            return _apply_one(conn, change, embedder, prune, progress_for, options)
        change.book_id = book.id
        with transaction(conn):
            files.record_file(conn, change.path, book.id, change.size, change.mtime_ns, change.file_hash)
        change.status = "done"
    elif change.action == "gone":
        if not prune:
            change.status = "kept"
            return
        with transaction(conn):
            orphan = files.forget_file(conn, change.path)
            if orphan and store.book_by_id(conn, orphan):
                store.delete_book(conn, orphan)
        change.status = "removed" if orphan else "done"
    else:
        _ingest(conn, change, embedder, progress_for, options)


def _ingest(conn, change: Change, embedder: Embedder, progress_for, options: dict) -> None:
    """added: a fresh book id from the file name; changed: the same book id, replaced."""
    path = Path(change.path)
    if change.action == "added" and store.book_by_hash(conn, change.file_hash):  # its bytes came in meanwhile
        change.action = "linked"
        return _apply_one(conn, change, embedder, False, progress_for, options)
    if change.action == "added":
        change.book_id = free_book_id(files.book_ids(conn), pipeline.slug(path.stem, fallback=change.file_hash[:12]))
    context = progress_for(path.name) if progress_for else nullcontext(None)
    with context as progress:
        result = pipeline.ingest_file(conn, path, embedder(), book_id=change.book_id,
                                      replace=change.action == "changed", progress=progress, **options)
    if result.status == "unchanged":  # the same bytes were ingested since the plan: record the file
        with transaction(conn):
            files.record_file(conn, str(path), result.book_id, change.size, change.mtime_ns, change.file_hash)
        change.action, change.book_id = "linked", result.book_id
    change.status = "done"
    change.title, change.passages = result.title, result.passages
    change.embedded, change.reused, change.warnings = result.embedded, result.reused, list(result.warnings)


def free_book_id(taken: set[str], base: str) -> str:
    """`base`, or `base-2`, `base-3`, ... : the first not taken."""
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


# -- one call for the CLI -------------------------------------------------------------------------

def remembered(conn) -> list[str]:
    return files.folders(conn)


def sync(conn, folders: list[str], embedder: Embedder, *, prune: bool = False, dry_run: bool = False,
         on_change: Optional[Callable[[Change], None]] = None, should_stop: Optional[Callable[[], bool]] = None,
         progress_for=None, settle: float = 0.0, skip: Optional[dict] = None, remember: bool = True,
         **ingest_options) -> SyncReport:
    """Plan and (unless dry_run) apply a sync of `folders`; the folders are remembered in the corpus."""
    t0 = time.perf_counter()
    if not folders:
        raise UsageError("no folder to sync: give one (`ragcli sync FOLDER`); it is remembered for next time")
    the_plan = plan(conn, folders, settle=settle, skip=skip)
    present = [f for f in folders if f not in the_plan.missing_folders]
    if dry_run:
        changes = the_plan.failed + the_plan.changes
        for c in changes:
            if on_change:
                on_change(c)
    else:
        if remember and present:
            with transaction(conn):
                files.remember_folders(conn, present)
        changes = apply(conn, the_plan, embedder, prune=prune, on_change=on_change, should_stop=should_stop,
                        progress_for=progress_for, **ingest_options)
        if present and not any(c.status == "skipped" for c in changes):
            with transaction(conn):
                files.mark_synced(conn, present)
    return SyncReport(list(folders), changes, the_plan.unchanged, dry_run, prune, the_plan.hashed, the_plan.busy,
                      the_plan.missing_folders, time.perf_counter() - t0,
                      stopped=any(c.status == "skipped" for c in changes), skipped=the_plan.skipped)
