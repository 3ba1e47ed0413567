"""Progress of long corpus jobs (ingest, reembed) on stderr.

On a terminal: a rich bar (transient). Elsewhere (a pipe, a log file, `--json`): the rich bar would
write control codes or nothing, so OCR, the one phase slow enough to need it (seconds a page), gets
plain lines instead: `scan.pdf: OCR 12/227 pages, 0.31 pages/s` (every page read so far was OCR'd) or
`mixed.pdf: OCR 2 pages, at page 227/227, 0.05 pages/s` (a text PDF with a few scanned pages), at most
one every PLAIN_EVERY seconds, and one when the last page is read. The count is of the pages OCR'd.
Fast phases (text pages, embedding) print nothing there.

The core calls `update(phase, done, total)`: "pages" after each page read (`done` of the book's
`total`), then "ocr" with the number of pages OCR'd so far once any was, "embed" for passages.
"""
from __future__ import annotations

import time
from typing import Callable, Optional

from ragcli.render.console import Environment, terminal_safe

# rich.progress (about 40 ms) is imported when a bar is drawn: piped and --json runs never load it.

PHASES = {"pages": "reading pages", "embed": "embedding passages"}
PLAIN_EVERY = 15.0  # seconds between two plain progress lines


class Progress:
    """`with Progress(name, json_out) as update:` gives the callback `update(phase, done, total)` the
    core calls: a bar on a terminal (without --json), plain OCR lines otherwise."""

    def __init__(self, name: str, json_out: bool, env: Optional[Environment] = None,
                 clock: Callable[[], float] = time.monotonic):
        env = env or Environment()
        self.env, self.name, self.clock = env, name, clock
        self.plain = json_out or not env.stderr_isatty
        self.bar, self.tasks = None, {}
        self._start: Optional[float] = None
        self._last_line: Optional[float] = None
        self._read = 0  # pages read so far (the "pages" phase)

    def __enter__(self):
        if self.plain:
            return self.plain_update
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar

        self.bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), console=self.env.console(stderr=True), transient=True)
        self.bar.start()
        return self.update

    def update(self, phase: str, done: int, total: int) -> None:
        if phase == "ocr":  # the pages bar says how many were OCR'd (OCR is slow: and how fast)
            speed = next((t.speed for t in self.bar.tasks if t.id == self.tasks.get("pages")), None)
            rate = f", {speed:.2f} pages/s" if speed else ""
            self.bar.update(self.tasks["pages"], description=f"{self.name}: {PHASES['pages']} ({done} by OCR{rate})")
            return
        if phase not in self.tasks:
            self.tasks[phase] = self.bar.add_task(f"{self.name}: {PHASES.get(phase, phase)}", total=total)
        self.bar.update(self.tasks[phase], completed=done, total=total)

    def plain_update(self, phase: str, done: int, total: int) -> None:
        """The clock starts at the first page read (text pages of a mixed PDF count)."""
        now = self.clock()
        if phase == "pages":
            self._read = done
            self._start = now if self._start is None else self._start
        if phase != "ocr":
            return
        if self._last_line is None:
            self._last_line = self._start  # the first line after PLAIN_EVERY seconds, not at page 1
        if self._read < total and now - self._last_line < PLAIN_EVERY:
            return
        self._last_line = now
        elapsed = now - self._start
        rate = f", {done / elapsed:.2f} pages/s" if elapsed > 0 else ""
        count = f"{done}/{total} pages" if done == self._read else f"{done} pages, at page {self._read}/{total}"
        self.env.stderr.write(terminal_safe(f"{self.name}: OCR {count}{rate}", lines=False) + "\n")
        self.env.stderr.flush()

    def __exit__(self, *exc):
        if self.bar:
            self.bar.stop()
        return False


def _duration(seconds: Optional[float]) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def run_line(status) -> str:
    """One line over a whole ingest run (ingest.run.RunStatus)."""
    return (f"{status.files_done}/{status.files_total} files, {status.pages:,} pages, "
            f"{status.passages:,} passages, {status.rate:.0f} passages/s embedded, "
            f"ETA {_duration(status.eta)}")


class RunProgress(Progress):
    """Progress over a whole ingest run: one line for the run (files, pages, passages, passages/s,
    ETA by file size) above the current file's phases on a terminal; elsewhere the run line at most
    every PLAIN_EVERY seconds (and OCR lines as Progress prints them)."""

    def __init__(self, json_out: bool, env: Optional[Environment] = None,
                 clock: Callable[[], float] = time.monotonic):
        super().__init__("", json_out, env, clock)
        self._run_task = None
        self._last_run_line: Optional[float] = None
        self._file = ""

    def status(self, status) -> None:
        self.name = status.current
        if not self.plain and self.bar is None:
            return
        if self.plain:
            now = self.clock()
            if self._last_run_line is None:
                self._last_run_line = now
            if status.files_done == status.files_total or now - self._last_run_line >= PLAIN_EVERY:
                self._last_run_line = now
                if status.files_total > 1:
                    self.env.stderr.write(terminal_safe(f"ingest: {run_line(status)}", lines=False) + "\n")
                    self.env.stderr.flush()
            return
        if self.bar is None:
            return
        if self._run_task is None:
            self._run_task = self.bar.add_task("", total=status.files_total)
        if status.current != self._file:  # a new file: its phases start afresh
            for task in self.tasks.values():
                self.bar.remove_task(task)
            self.tasks, self._file = {}, status.current
        self.bar.update(self._run_task, completed=status.files_done, description=run_line(status))
