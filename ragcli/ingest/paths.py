"""What ragcli may read under a folder a user or a client supplied: one walk for MCP `ingest`,
`ingest FOLDER`, `sync` and `sync --watch`.

Rules:
- Every file taken has its real path (symlinks resolved) inside one of the allowed roots. A symlink
  whose target leaves them is reported (`escaped`) and skipped, never read. The roots are the folder
  MCP was allowed (--allow-ingest), or the folders named on the command line (the user asked for
  them, so a folder given as a symlink is followed, and links between two named folders stay inside).
- Directories are identified by (device, inode): a directory reached a second time (a symlink loop
  `ln -s . a`, or two links to one folder) is reported (`loops`) and not listed again, so the walk
  is linear in the folder's size and every file is found once per real directory.
- A directory reached both by its own name and through a link is reported (as a repeat) under the
  link's name: links are followed after the real directories of a folder, whatever their names sort as.
- Hidden entries may be left out (sync: a copy in progress is often written as `.book.pdf.part`).
- A file read for a client (MCP `ingest`) is opened once (`opened`): O_NOFOLLOW on its real path, then
  the descriptor's own path (/proc/self/fd) and its device and inode checked against the allowed roots
  and the name; a file with more than one hard link is refused (a link to a file outside the roots
  looks like any other file inside them). Its hash and text are read from that descriptor.
- Uploaded file names are reduced to a safe set of characters and length (`safe_upload_name`) and
  created exclusively (`create_exclusive`): an existing file is never replaced.
"""
from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
import unicodedata
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Optional

from ragcli.errors import InputError, NotFoundError, UsageError

MAX_PATH = 4096  # characters of a path a client may give (PATH_MAX on Linux)
MAX_NAME = 255  # bytes of one name (NAME_MAX)
UPLOAD_NAME_MOST = 120  # characters of an uploaded file's name, its suffix included


@dataclass
class Walk:
    files: list[tuple[str, os.stat_result]] = field(default_factory=list)  # path as found, its stat
    escaped: list[tuple[str, str]] = field(default_factory=list)  # (link as found, where it points)
    loops: list[str] = field(default_factory=list)  # directories reached again (by device and inode)
    unreadable: list[str] = field(default_factory=list)  # directories that could not be listed

    def notes(self) -> list[str]:
        """One line per skipped link or repeated directory (the CLI and MCP report them)."""
        out = [f"{link}: skipped, it links outside the allowed folder (to {target})" for link, target in self.escaped]
        out += [f"{d}: skipped, a folder already read (a symlink loop or a second link to it)" for d in self.loops]
        return out


def real(path: str | Path) -> str:
    return os.path.realpath(os.path.expanduser(str(path)))


def inside(path: str, roots: Iterable[str]) -> bool:
    """`path` (a real path) is one of `roots` (real paths) or under one."""
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def walk(folder: str | Path, roots: Iterable[str | Path], *, hidden: bool = True) -> Walk:
    """The regular files under `folder` (recursively, sorted by path) whose real paths lie inside
    `roots`. `folder` itself must be inside them (the caller checked it: ValueError otherwise)."""
    allowed = [real(r) for r in roots]
    start = real(folder)
    if not inside(start, allowed):
        raise ValueError(f"{folder} is not inside the allowed folders")
    out = Walk()
    seen: set[tuple[int, int]] = set()
    stack = [start]
    linked: list[str] = []  # directories reached through a link: walked after every real one
    while stack or linked:
        here = stack.pop() if stack else linked.pop(0)
        try:
            st = os.stat(here)
        except OSError:
            out.unreadable.append(here)
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen:
            out.loops.append(here)
            continue
        seen.add(key)
        try:
            entries = sorted(os.scandir(here), key=lambda e: e.name)
        except OSError:
            out.unreadable.append(here)
            continue
        subdirs, via_link = [], []
        for entry in entries:
            if not hidden and entry.name.startswith("."):
                continue
            try:
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    if not inside(target, allowed):
                        out.escaped.append((entry.path, target))
                        continue
                if entry.is_dir():
                    (via_link if entry.is_symlink() else subdirs).append(entry.path)
                elif entry.is_file():
                    out.files.append((entry.path, entry.stat()))
            except OSError:  # vanished between listing and stat, or a dangling link
                continue
        stack.extend(reversed(subdirs))
        linked.extend(via_link)
    out.files.sort(key=lambda f: f[0])
    return out


def check_length(path: str) -> None:
    """A path a client gave: at most MAX_PATH characters, each name at most MAX_NAME bytes."""
    if len(path) > MAX_PATH or any(len(os.fsencode(part)) > MAX_NAME for part in path.split(os.sep)):
        raise UsageError(f"the path is too long ({len(path)} characters; at most {MAX_PATH}, {MAX_NAME} bytes a "
                         f"name)")


def _fd_path(fd: int) -> Optional[str]:
    """The path the kernel has for an open descriptor (Linux /proc, macOS F_GETPATH), None elsewhere."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
    try:
        import fcntl

        return fcntl.fcntl(fd, getattr(fcntl, "F_GETPATH"), b"\0" * 1024).rstrip(b"\0").decode()
    except (ImportError, AttributeError, OSError, ValueError):
        return None


@dataclass
class Opened:
    """A file opened and checked: `real` its real path (inside the roots), `read_from` a path that
    reads the very descriptor checked (a link to /proc/self/fd/N bearing the file's name, or a
    private copy made from the descriptor where /proc is missing)."""
    fd: int
    real: Path
    read_from: Path
    stat: os.stat_result


@contextmanager
def opened(path: str | Path, roots: Iterable[str | Path]) -> Iterator[Opened]:
    """`path` opened once for reading (see the module's rules). UsageError when it leads outside the
    roots, is a link loop, has other hard links or is not a regular file; NotFoundError when missing."""
    allowed = [real(r) for r in roots]
    check_length(str(path))
    try:
        where = real(path)
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot be resolved ({getattr(exc, 'strerror', None) or exc})") from exc
    if not inside(where, allowed):
        raise UsageError(f"{path}: skipped, it links outside the allowed folder")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(where, flags)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise NotFoundError(f"{path}: no such file") from exc
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise UsageError(f"{path}: skipped, it was replaced by a link while being opened") from exc
        if exc.errno == errno.ENAMETOOLONG:
            raise UsageError(f"{path}: the path is too long") from exc
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{path}: not a regular file")
        kernel = _fd_path(fd)
        if kernel is not None and not inside(kernel, allowed):
            raise UsageError(f"{path}: skipped, it leads outside the allowed folder (to {kernel})")
        try:
            named = os.stat(where, follow_symlinks=False)
        except OSError:
            named = None
        if named is None or (named.st_dev, named.st_ino) != (st.st_dev, st.st_ino):
            raise UsageError(f"{path}: skipped, it was replaced while being opened")
        if st.st_nlink > 1:
            raise UsageError(f"{path}: skipped, it has {st.st_nlink} hard links (one may be a file outside the "
                             f"allowed folder)")
        with tempfile.TemporaryDirectory(prefix="ragcli-read-") as private:
            read_from = Path(private) / Path(where).name
            if kernel is not None and os.path.exists(f"/proc/self/fd/{fd}"):
                os.symlink(f"/proc/self/fd/{fd}", read_from)  # the descriptor itself, under the file's name
            else:  # no /proc: a private copy of the descriptor's bytes
                with open(read_from, "wb") as out:
                    os.lseek(fd, 0, os.SEEK_SET)
                    while block := os.read(fd, 1 << 20):
                        out.write(block)
            yield Opened(fd, Path(where), read_from, st)
    finally:
        os.close(fd)


UNSAFE = re.compile(r"[^A-Za-z0-9._ ()+-]+")


def safe_upload_name(name: str, suffixes: Iterable[str]) -> str:
    """An uploaded file's name reduced to letters, digits and `._ ()+-` (accents dropped, anything else
    `_`), no leading dot or dash, at most UPLOAD_NAME_MOST characters with its suffix kept; UsageError
    when nothing is left or the suffix is not one of `suffixes`."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    base = unicodedata.normalize("NFKD", base).encode("ascii", "ignore").decode("ascii")
    stem, dot, suffix = UNSAFE.sub("_", base).rpartition(".")
    suffix = "." + suffix.lower() if dot else ""
    if not dot or suffix not in tuple(suffixes):
        raise UsageError(f"`name` must be a file name ending in {', '.join(suffixes)}, not {name[:80]!r}")
    stem = stem.strip(" ._-")[: UPLOAD_NAME_MOST - len(suffix)].rstrip(" ._-") or "upload"
    return stem + suffix


def create_exclusive(folder: Path, name: str, source: Path) -> Path:
    """`source` (a finished file in `folder`) given the name `name` without replacing anything: a
    hard link made exclusively (it fails when the name exists), then `source` removed. UsageError
    when the name is taken."""
    target = folder / name
    try:
        os.link(source, target)
    except FileExistsError:
        raise UsageError(f"{name} is already in {folder}: rename the file to add it again") from None
    except OSError:  # no hard links on this file system: an exclusive create and a copy
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except FileExistsError:
            raise UsageError(f"{name} is already in {folder}: rename the file to add it again") from None
        with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
            while block := src.read(1 << 20):
                out.write(block)
    os.unlink(source)
    return target
