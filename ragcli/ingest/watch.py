"""`ragcli sync --watch`: sync the folders, then again whenever files in them change, until stopped.

Rules:
- A file is read only once it has been still for `settle` seconds (its modification time that old):
  a file being copied in is read once, complete, not once per chunk. Until then it is "busy" and the
  watcher looks again every `tick` seconds.
- A file that fails (a damaged PDF, a file replaced while it was read) is reported once and left
  alone until its size or modification time change; then it is tried again. Nothing a file does
  stops the watcher.
- `stop` (a threading.Event, set by Ctrl-C) is checked between two changes and while waiting: every
  change is one transaction, so stopping never leaves one half done.
- Events only say "look again": each round is a full plan of the folders (one `stat` a file), so an
  event lost while a round ran is caught by the next round, and by the periodic `rescan`.
- A watched folder that disappears (deleted, unmounted) is said once; its books are kept (never
  pruned for it) and the watcher looks for it every `tick`; when it is back (or replaced by a new
  folder of that name) it is synced at once and watched again. The watcher never exits for it.
"""
from __future__ import annotations

import os
import stat
import threading
import time
from typing import Callable, Optional

from ragcli.ingest import sync as sync_core

# watchfiles is imported when watching starts: `sync` without --watch never loads it.


def watch(conn, folders: list[str], embedder: sync_core.Embedder, *, stop: threading.Event,
          prune: bool = False, on_change: Optional[Callable[[sync_core.Change], None]] = None,
          on_round: Optional[Callable[[sync_core.SyncReport], None]] = None,
          on_ready: Optional[Callable[[], None]] = None,
          on_folder: Optional[Callable[[str, str], None]] = None, progress_for=None, settle: float = 1.0,
          tick: float = 0.25, rescan: float = 30.0, **ingest_options) -> int:
    """Watch until `stop` is set; returns the number of rounds run. `on_folder("missing" | "back",
    folder)` when a watched folder disappears (nothing recorded from it changes meanwhile) and when it
    is there again (a round syncs it at once, and it is watched again)."""
    import watchfiles

    failed: dict[str, tuple[int, int]] = {}  # path -> (size, mtime) when it failed
    said_gone: set[str] = set()  # gone files kept in the corpus (no prune): said once, not every round

    def tell(change: sync_core.Change) -> None:
        if change.status == "kept":
            if change.path in said_gone:
                return
            said_gone.add(change.path)
        else:
            said_gone.discard(change.path)
        if on_change:
            on_change(change)

    def one_round(first: bool = False) -> sync_core.SyncReport:
        report = sync_core.sync(conn, folders, embedder, prune=prune, on_change=tell,
                                should_stop=stop.is_set, progress_for=progress_for, settle=settle,
                                skip=failed, remember=first, **ingest_options)
        for c in report.changes:
            if c.status == "failed":
                failed[c.path] = (c.size, c.mtime_ns)
            elif c.status != "skipped":
                failed.pop(c.path, None)
        if on_round:
            on_round(report)
        return report

    said_missing: set[str] = set()

    def folders_now() -> dict[str, tuple[int, int]]:
        """The folders there now, by (device, inode): a folder deleted and made again is another one."""
        out = {}
        for f in folders:
            try:
                st = os.stat(f)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                out[f] = (st.st_dev, st.st_ino)
        return out

    def note_folders(present: dict) -> bool:
        """Say which folders went and which came back; True when one came back."""
        back = False
        for f in folders:
            if f not in present and f not in said_missing:
                said_missing.add(f)
                if on_folder:
                    on_folder("missing", f)
            elif f in present and f in said_missing:
                said_missing.discard(f)
                back = True
                if on_folder:
                    on_folder("back", f)
        return back

    rounds = 1
    report = one_round(first=True)
    if on_ready:
        on_ready()
    last = time.monotonic()
    while not stop.is_set():
        present = folders_now()
        if note_folders(present):
            report = one_round()
            rounds += 1
            last = time.monotonic()
        if not present:  # nothing to watch: look for the folders again every tick
            stop.wait(tick)
            continue
        watcher = watchfiles.watch(*present, stop_event=stop, debounce=int(tick * 1000), step=50,
                                   rust_timeout=int(tick * 1000), yield_on_timeout=True, raise_interrupt=False,
                                   watch_filter=None)
        try:
            for events in watcher:
                if stop.is_set():
                    break
                if folders_now() != present:  # one went, came back or was replaced: watch again
                    break
                due = bool(events) or bool(report.busy) or bool(_acted(report)) or time.monotonic() - last > rescan
                if not due:
                    continue
                report = one_round()
                rounds += 1
                last = time.monotonic()
        except (OSError, RuntimeError):  # the watcher lost its folder: the loop looks again
            stop.wait(tick)
        finally:
            watcher.close()
    return rounds


def _acted(report: sync_core.SyncReport) -> list:
    """Changes of the last round that wrote something: look once more (events may have come meanwhile)."""
    return [c for c in report.changes if c.status in ("done", "removed")]
