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
- Hidden entries may be left out (sync: a copy in progress is often written as `.book.pdf.part`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable


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
    while stack:
        here = stack.pop()
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
        subdirs = []
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
                    subdirs.append(entry.path)
                elif entry.is_file():
                    out.files.append((entry.path, entry.stat()))
            except OSError:  # vanished between listing and stat, or a dangling link
                continue
        stack.extend(reversed(subdirs))
    out.files.sort(key=lambda f: f[0])
    return out
