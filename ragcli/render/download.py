"""`ragcli models pull` on screen: the catalogue with what fits marked, the download's progress, the
pulled file.

Progress goes to stderr. On a terminal: a rich bar with bytes, speed and time left (transient). In a
pipe or a log: one line per tenth of the file (`12.3% ...` would flood a log; ten lines do not), and
nothing at all with --json (the script reads the result object on stdout).
"""
from __future__ import annotations

import time
from typing import Callable, Optional

from rich.markup import escape

from ragcli.render.console import Environment

# rich.progress is imported when a bar is drawn: piped and --json pulls never load it.

STEPS = 10  # plain lines per file


def catalog_view(out, entries, fits: dict, hw, verbose: bool = False) -> None:
    """The catalogue: on a terminal a table of name, size, memory, estimated speed and whether it fits
    (80 columns hold it; --verbose adds a paragraph a model: its title, licence, why it fits or
    not, what was measured); piped, one tab-separated line a model under a header line."""
    header = (f"models ragcli can pull (this machine: {hw.memory_total / 1e9:.1f} GB of memory, "
              f"{hw.physical_cores} core{'s' if hw.physical_cores != 1 else ''}"
              f"{', GPU offload' if hw.gpu_offload else ''})")

    def speed(fit) -> str:
        return "GPU" if fit.tokens_per_s is None else f"~{fit.tokens_per_s:.0f} tok/s" if fit.tokens_per_s >= 1 \
            else f"~{fit.tokens_per_s:.1f} tok/s"

    def mark(fit) -> str:
        return "fits" if fit.fits else "too slow" if fit.fits_memory else "too big"

    if not out.is_terminal:
        cols = ["name", "size_gb", "memory_gb", "tokens_per_s_estimated", "fits"]
        cols += ["title", "licence", "measured"] if verbose else []
        out.print(header, highlight=False)
        out.print("\t".join(cols), highlight=False)
        for e in entries:
            fit = fits[e.name]
            row = [e.name, f"{e.size_gb:.2f}", f"{e.memory_gb:.1f}",
                   "" if fit.tokens_per_s is None else f"{fit.tokens_per_s:.1f}", mark(fit)]
            row += [e.title, e.licence, e.measured] if verbose else []
            out.print("\t".join(row), markup=False, highlight=False)
        return
    from rich.table import Table

    table = Table(title=header, title_justify="left", show_edge=False, box=None, pad_edge=False)
    table.add_column("name", no_wrap=True)
    for col in ("size", "memory", "speed"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("fits", no_wrap=True)
    for e in entries:
        fit = fits[e.name]
        style = "green" if fit.fits else "dim"
        table.add_row(f"[bold]{escape(e.name)}[/]", f"{e.size_gb:.2f} GB", f"{e.memory_gb:.1f} GB", speed(fit),
                      f"[{style}]{mark(fit)}[/]")
    out.print(table)
    if verbose:  # the details are long: a paragraph a model, wrapped at whole words
        for e in entries:
            out.print(f"\n[bold]{escape(e.name)}[/]: {escape(e.title)}; licence: {escape(e.licence)}; "
                      f"{escape(fits[e.name].why)}; {escape(e.measured)}", highlight=False)
    else:
        out.print("[dim]speed: estimated from the model's size and this machine's cores; --verbose: titles, "
                  "licences, what was measured[/]", highlight=False)


def pulled_line(p, made_default: Optional[str]) -> str:
    how = ("already in the cache" if p.already else
           f"downloaded{f' (resumed at {p.resumed_from / 1e6:.1f} MB)' if p.resumed_from else ''} "
           f"in {p.seconds:.1f}s")
    if p.checked_against == "computed":  # nothing to check against: the sha256 shown, to give next time
        check = f"sha256 {p.sha256}, nothing to check it against (pass --sha256 to check it)"
    else:
        whose = {"catalogue": "the catalogue's", "given": "the one given with --sha256"}.get(p.checked_against,
                                                                                           "the Hub's")
        check = f"sha256 {p.sha256[:12]}... matches {whose}"
    line = f"[green]pulled[/] {escape(p.file)} ({p.size / 1e6:.1f} MB, {how}, {check}): {escape(p.path)}"
    if made_default:
        line += f"\nnow the default model (written to {escape(made_default)}): `ragcli ask` uses it"
    return line


class PullProgress:
    """`with PullProgress(name, json_out) as report:` gives the callback `report(done, total)` that
    models/download.pull calls with the bytes on disk."""

    def __init__(self, name: str, json_out: bool, env: Optional[Environment] = None,
                 clock: Callable[[], float] = time.monotonic):
        self.env, self.name, self.clock = env or Environment(), name, clock
        self.quiet = json_out
        self.plain = not self.env.isatty(stderr=True)
        self.bar = self.task = None
        self._next_step = 0
        self._start: Optional[float] = None
        self._first = 0

    def __enter__(self):
        if self.quiet:
            return lambda done, total: None
        if self.plain:
            return self.line
        from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                                   TransferSpeedColumn)

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                            TimeRemainingColumn(), console=self.env.console(stderr=True), transient=True)
        self.bar.start()
        self.task = self.bar.add_task(escape(self.name), total=None)
        return self.update

    def update(self, done: int, total: Optional[int]) -> None:
        self.bar.update(self.task, completed=done, total=total)

    def line(self, done: int, total: Optional[int]) -> None:
        """One line at the start and at each tenth of the file (by the bytes on disk)."""
        now = self.clock()
        if self._start is None:
            self._start, self._first = now, done
        if not total:
            return
        step = int(done * STEPS // total)
        if step < self._next_step:
            return
        self._next_step = step + 1
        elapsed = now - self._start
        speed = (done - self._first) / elapsed if elapsed > 0 else 0.0
        rate = f", {speed / 1e6:.1f} MB/s" if speed else ""
        left = f", {((total - done) / speed):.0f}s left" if speed and done < total else ""
        self.env.console(stderr=True).print(
            f"{escape(self.name)}: {done / 1e6:.1f} of {total / 1e6:.1f} MB ({100 * done // total}%){rate}{left}",
            highlight=False)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()
        return False
