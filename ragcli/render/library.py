"""Terminal views of a folder sync (one line per change, a summary line) and of one passage with
the text around it (`ragcli show`)."""
from __future__ import annotations

import re

from rich.markup import escape
from rich.text import Text

from ragcli.render.console import terminal_safe
from ragcli.render.links import gone_note, linked


def _escape(text: str) -> str:
    """Untrusted one-line text (a title, a name, a question) for markup: escapes shown, one line."""
    return escape(terminal_safe(text, lines=False))


def change_line(c, dry_run: bool = False, prune: bool = False) -> str | None:
    """The line a change gets (None for a failed one: its error is said on stderr)."""
    if c.status == "failed":
        return None
    would = "[dim](dry run)[/] " if dry_run else ""
    book, path = f"[bold]{_escape(c.book_id)}[/]" if c.book_id else "", _escape(c.path)
    if c.action == "added":
        if dry_run:
            return f"{would}[green]add[/] {path}"
        return (f"[green]added[/] {book} {path}: {c.passages} passages "
                f"({c.embedded} vectors computed) in {c.seconds:.1f}s")
    if c.action == "changed":
        if dry_run:
            return f"{would}[yellow]re-read[/] {book} {path} (its content changed)"
        return (f"[yellow]changed[/] {book} {path}: {c.passages} passages, {c.embedded} re-embedded, "
                f"{c.reused} kept their vectors, in {c.seconds:.1f}s")
    if c.action == "moved":
        return f"{would}[cyan]moved[/] {book} {_escape(c.old_path)} → {path} (same bytes: nothing re-read)"
    if c.action == "linked":
        return f"{would}[cyan]linked[/] {path} → {book} (same bytes as a book already in the corpus)"
    if c.action == "gone":
        if c.status == "removed" or (dry_run and prune):
            return f"{would}[red]removed[/] {book} {path} (gone from the folder)"
        if c.status == "done":
            return f"[red]gone[/] {path} (its book {book} stays: another file holds the same bytes)"
        return f"{would}[red]gone[/] {book} {path} (kept in the corpus; --prune removes it)"
    return None


def summary_line(report) -> str:
    """`synced 1 folder: 1 added, 1 changed, 1 moved, 1 removed, 996 unchanged (3 files hashed) in 0.4s`"""
    n = len(report.folders) - len(report.missing_folders)
    parts = []
    for action in ("added", "changed", "moved", "linked"):
        count = report.count(action)
        if count:
            parts.append(f"{count} {action}")
    gone = [c for c in report.changes if c.action == "gone" and c.status != "failed"]
    removed = len(gone) if report.dry_run and report.prune else sum(1 for c in gone if c.status == "removed")
    if removed:
        parts.append(f"{removed} removed")
    kept = len(gone) - removed
    if kept:
        parts.append(f"{kept} gone" + ("" if report.prune else " (kept; --prune removes)"))
    if report.failed:
        parts.append(f"[red]{len(report.failed)} failed[/]")
    parts.append(f"{report.unchanged} unchanged")
    verb = "would sync" if report.dry_run else "synced"
    line = (f"{verb} {n} folder{'s' if n != 1 else ''}: " + ", ".join(parts)
            + f" ({report.hashed} file{'s' if report.hashed != 1 else ''} hashed) in {report.seconds:.1f}s")
    if report.busy:
        line += f"; {len(report.busy)} still being written, left for later"
    if report.stopped:
        line += "; stopped: the rest is left for the next sync"
    if report.dry_run:
        line += " (dry run: nothing changed)"
    return line


# -- show ----------------------------------------------------------------------------------------

def print_passage(console, hit, before, after, quote: str = "") -> None:
    """The passage (the quote in it highlighted), the passages before and after it dimmed, and a
    header line linking to the page."""
    where = f"Figure {hit.figure_number}, " if hit.kind == "figure" else ""
    head = linked(f"[bold]{_escape(hit.book_title)}[/] — {_escape(hit.section_str)}, {where}p. {hit.page_label} "
                  f"(pdf {hit.page_start})", hit.path, hit.page_start)
    console.print(f"{head} [dim]· passage {hit.passage_id}[/]{gone_note(hit.path)}", highlight=False)
    for h in before:
        console.print(_context(h), highlight=False)
    console.print(marked(hit.text, quote))
    for h in after:
        console.print(_context(h), highlight=False)


def _context(h) -> str:
    return f"[dim]{_escape(' '.join(h.text.split()))}[/] [dim italic](p. {_escape(h.page_label)})[/]"


def marked(text: str, quote: str = ""):
    """The passage as rich Text; `quote` (the sentence an answer rests on) in reverse bold wherever it
    occurs, spaces and line breaks allowed to differ. Without a quote the whole passage is bold."""
    text = " ".join(terminal_safe(text).split())
    out = Text(text)
    if not quote.strip():
        out.stylize("bold")
        return out
    pattern = r"\s+".join(re.escape(w) for w in quote.split())
    found = False
    for m in re.finditer(pattern, text, flags=re.I):
        out.stylize("bold reverse", m.start(), m.end())
        found = True
    if not found:
        out.stylize("bold")
    return out
