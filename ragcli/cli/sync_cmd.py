"""sync: keep the corpus in line with folders (once, or --watch)."""
from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated, Optional

import typer

from ragcli.cli.common import (DbOpt, EmbedOpt, JsonOpt, app, console, embedder_for, err, escape, handle_errors,
                               info, open_db, warn)
from ragcli.errors import InputError, UsageError

# The library is imported inside the commands: `ragcli --help` imports every cli module and loads none of it.


@app.command()
@handle_errors
def sync(
    folders: Annotated[Optional[list[str]], typer.Argument(
        help="Folders to keep in line (searched recursively); remembered in the corpus. None: the "
             "folders synced before.", show_default=False)] = None,
    prune: Annotated[bool, typer.Option("--prune", help="Remove the books whose files are gone from the "
                                        "folders (without it they are reported and kept).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would change; change nothing.")] = False,
    watch: Annotated[bool, typer.Option("--watch", help="Keep running: sync again whenever files change "
                                        "(Ctrl-C stops after the file being read).")] = False,
    settle: Annotated[float, typer.Option("--settle", metavar="SECONDS", help="--watch: read a file once it "
                                          "has not changed for this long (a copy in progress is left "
                                          "alone).")] = 1.0,
    db: DbOpt = None,
    json_out: JsonOpt = False,
    embed_model: EmbedOpt = None,
) -> None:
    """Bring the corpus in line with folders: new files ingested, changed ones re-read, moved ones
    followed, gone ones reported (removed with --prune)."""
    from ragcli.ingest import sync as core
    from ragcli.render.data import change_data, print_json, sync_data
    from ragcli.render.library import change_line, summary_line

    if watch and dry_run:
        raise UsageError("--watch and --dry-run do not go together")
    for f in folders or []:
        p = Path(f).expanduser()
        if p.exists() and not p.is_dir():
            raise UsageError(f"{f} is a file, not a folder: `ragcli ingest {f}` adds one file")
    conn = open_db(db, create=bool(folders) and not dry_run)
    roots = core.folder_paths(folders) if folders else core.remembered(conn)
    if not roots:
        raise UsageError("no folder to sync: give one (`ragcli sync FOLDER`); it is remembered for next time")
    embedder = _lazy_embedder(conn, embed_model)
    out = console()

    def on_change(change) -> None:
        if change.status == "failed":
            err(escape(change.error) + (" (tried again when the file changes)" if watch else ""))
        if json_out:
            if watch:
                print_json_line(change_data(change))
            return
        line = change_line(change, dry_run, prune)
        if line:
            out.print(line, highlight=False)

    progress_for = _progress(json_out)
    if watch:
        missing = [r for r in roots if not os.path.isdir(r)]
        if missing:
            raise InputError(f"{missing[0]}: no such folder; nothing to watch there")
        return _watch(conn, roots, embedder, prune, on_change, progress_for, settle, json_out)
    report = core.sync(conn, roots, embedder, prune=prune, dry_run=dry_run, on_change=on_change,
                       progress_for=progress_for)
    for note in report.skipped:  # symlinks leaving the folders, folders reached twice
        warn(escape(note))
    for folder in report.missing_folders:
        err(escape(f"{folder}: no such folder; nothing recorded from it was changed"))
    if json_out:
        print_json(sync_data(report))
    else:
        info(summary_line(report))
    if report.missing_folders:
        raise typer.Exit(InputError.exit_code)
    if report.failed:
        raise typer.Exit(report.failed[0].exit_code)


def print_json_line(data: dict) -> None:
    """One JSON object on one line (`--watch --json` prints a stream of them)."""
    import json

    sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _lazy_embedder(conn, name):
    """The embedding model, loaded the first time a file has to be read (an unchanged library never
    loads it)."""
    loaded: list = []

    def get():
        if not loaded:
            loaded.append(embedder_for(conn, name, bulk=True))
        return loaded[0]

    return get


def _progress(json_out: bool):
    from ragcli.render.progress import Progress

    return lambda name: Progress(name, json_out)


def _watch(conn, roots, embedder, prune, on_change, progress_for, settle, json_out) -> None:
    """Run the watcher; the first Ctrl-C stops it after the change being applied, a second one
    abandons that change (its transaction is rolled back)."""
    from ragcli.ingest import watch as core
    from ragcli.render.library import summary_line

    stop = threading.Event()

    def on_sigint(signum, frame):
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        info("stopping after the file being read (Ctrl-C again to abandon it)")

    previous = signal.signal(signal.SIGINT, on_sigint)
    term = signal.signal(signal.SIGTERM, on_sigint)

    said: set[str] = set()

    def on_round(report) -> None:
        for note in report.skipped:
            if note not in said:
                said.add(note)
                warn(escape(note))
        if not json_out and any(c.status != "kept" for c in report.changes):
            info(summary_line(report))

    def on_ready() -> None:
        names = ", ".join(roots)
        info(f"watching {escape(names)} (Ctrl-C to stop)")

    def on_folder(event: str, folder: str) -> None:
        if event == "missing":
            err(escape(f"{folder}: the folder is gone; its books are kept, and it is synced again when it "
                       f"comes back"))
        else:
            info(escape(f"{folder}: the folder is back; syncing it"))
        if json_out:
            print_json_line({"action": "folder", "status": event, "path": folder})

    try:
        core.watch(conn, roots, embedder, stop=stop, prune=prune, on_change=on_change, on_round=on_round,
                   on_ready=on_ready, on_folder=on_folder, progress_for=progress_for, settle=settle)
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, term)
    info("stopped; every change so far is saved")
