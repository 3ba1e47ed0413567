"""Progress of long corpus jobs (ingest, reembed): a rich bar on stderr, only on a terminal."""
from __future__ import annotations

from typing import Optional

from ragcli.render.console import Environment

PHASES = {"pages": "reading pages", "ocr": "reading pages (OCR)", "embed": "embedding passages"}


class Progress:
    """`with Progress(name, quiet) as update:` gives the callback `update(phase, done, total)` the
    core calls (None when quiet or stderr is not a terminal)."""

    def __init__(self, name: str, quiet: bool, env: Optional[Environment] = None):
        env = env or Environment()
        self.env, self.name, self.quiet = env, name, quiet or not env.stderr_isatty
        self.bar, self.tasks = None, {}

    def __enter__(self):
        if self.quiet:
            return None
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar

        self.bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), console=self.env.console(stderr=True), transient=True)
        self.bar.start()
        return self.update

    def update(self, phase: str, done: int, total: int) -> None:
        label = PHASES.get(phase, phase)
        if phase not in self.tasks:
            self.tasks[phase] = self.bar.add_task(f"{self.name}: {label}", total=total)
        if phase == "ocr":  # OCR is slow: say how fast it goes
            speed = next((t.speed for t in self.bar.tasks if t.id == self.tasks[phase]), None)
            label += f", {speed:.2f} pages/s" if speed else ""
        self.bar.update(self.tasks[phase], completed=done, total=total, description=f"{self.name}: {label}")

    def __exit__(self, *exc):
        if self.bar:
            self.bar.stop()
        return False
