"""Source lines that open the book at the page: OSC 8 hyperlinks (`file:///.../book.pdf#page=N`).

rich writes the link only where it writes styles (a terminal); in a pipe or a file the same markup
prints as plain text, so piped output carries no escape codes. A file that is no longer where it was
read from gets no link, and the line says so."""
from __future__ import annotations

import os
from pathlib import Path


def file_uri(path: str, page: int = 0) -> str:
    """`file:///abs/book.pdf#page=N` (the fragment PDF viewers open at); "" for a relative path."""
    if not path or not os.path.isabs(path):
        return ""
    uri = Path(path).as_uri()
    return f"{uri}#page={page}" if page and path.lower().endswith(".pdf") else uri


def file_state(path: str) -> str:
    """ok | gone (recorded, no longer there) | unknown (no absolute path recorded)."""
    if not path or not os.path.isabs(path):
        return "unknown"
    return "ok" if os.path.exists(path) else "gone"


def linked(markup: str, path: str, page: int = 0) -> str:
    """`markup` as a hyperlink to the file at the page; unchanged when there is no file to open."""
    uri = file_uri(path, page) if file_state(path) == "ok" else ""
    if not uri:
        return markup
    return f"[link={uri.replace(']', '%5D')}]{markup}[/link]"


def gone_note(path: str) -> str:
    """` (file moved or gone: PATH)` after a source whose file is not where it was read from."""
    if file_state(path) != "gone":
        return ""
    from rich.markup import escape

    return f" [yellow](the book's file moved or is gone: {escape(path)}; `ragcli sync` finds a moved one)[/]"
