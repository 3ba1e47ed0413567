"""`ragcli sync --watch` as a real process: files copied in slowly, a burst of 50 files, a damaged
PDF, a file replaced while it may be being read; every file ingested once and complete, the watcher
alive to the end and stopped cleanly by Ctrl-C (SIGINT)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from test_sync import make_pdf

pytest.importorskip("watchfiles")
pymupdf = pytest.importorskip("pymupdf")

ROOT = Path(__file__).resolve().parents[1]


class Watcher:
    """`ragcli sync FOLDER --watch --json` with its NDJSON stdout read by a thread."""

    def __init__(self, folder: Path, settle: float = 0.6):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ragcli", "sync", str(folder), "--watch", "--json", "--settle", str(settle)],
            cwd=ROOT, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.events: list[dict] = []
        self.stderr: list[str] = []
        threading.Thread(target=self._read, args=(self.proc.stdout, True), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, False), daemon=True).start()

    def _read(self, stream, is_json: bool) -> None:
        for line in stream:
            if is_json:
                self.events.append(json.loads(line))
            else:
                self.stderr.append(line)

    def wait_for(self, check, timeout: float = 240.0, what: str = "") -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if check():
                return
            assert self.proc.poll() is None, f"watcher died: {''.join(self.stderr)}"
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}; stderr: {''.join(self.stderr)[-2000:]}")

    def done(self, name: str, action: str = "added") -> list[dict]:
        return [e for e in self.events if Path(e["path"]).name == name and e["action"] == action
                and e["status"] == "done"]


def slow_copy(source: Path, target: Path, chunks: int = 5, pause: float = 0.3) -> None:
    """Write `target` in chunks with pauses (each pause shorter than the settle time)."""
    data = source.read_bytes()
    step = len(data) // chunks + 1
    with open(target, "wb") as fh:
        for i in range(0, len(data), step):
            fh.write(data[i:i + step])
            fh.flush()
            os.fsync(fh.fileno())
            time.sleep(pause)


def test_watch_reads_every_file_once_complete_and_survives_a_damaged_pdf(tmp_path, embedder):
    folder, staging = tmp_path / "library", tmp_path / "staging"
    folder.mkdir()
    staging.mkdir()
    make_pdf(folder / "first.pdf", "first")
    watcher = Watcher(folder)
    try:
        watcher.wait_for(lambda: any("watching" in line for line in watcher.stderr), what="the first sync")
        # written just before the watcher started, so it may still be settling in the first round:
        # it is read in a later one, and only once (checked at the end)
        watcher.wait_for(lambda: watcher.done("first.pdf"), what="the first file")

        big = make_pdf(staging / "slow.pdf", "slow", pages=12)
        slow_copy(big, folder / "slow.pdf")  # 1.5 s of writing, pauses of 0.3 s < settle 0.6 s
        (folder / "broken.pdf").write_bytes(b"%PDF-1.7\n" + os.urandom(4000))
        for i in range(50):  # a burst
            make_pdf(staging / f"burst-{i:02d}.pdf", f"burst{i:02d}", pages=2)
        for i in range(50):
            os.replace(staging / f"burst-{i:02d}.pdf", folder / f"burst-{i:02d}.pdf")
        watcher.wait_for(lambda: len({e["path"] for e in watcher.events if e["action"] == "added"
                                      and e["status"] == "done"}) >= 52, what="the burst")
        failed = [e for e in watcher.events if e["status"] == "failed"]
        assert [Path(e["path"]).name for e in failed] == ["broken.pdf"]  # said once, not every round

        # replaced while it may be being read: the final content wins, never a mix
        target = folder / "replaced.pdf"
        make_pdf(target, "replaced", pages=8)
        time.sleep(0.7)
        make_pdf(staging / "replaced.pdf", "replaced", pages=8, changed_page=5, variant=", second version")
        os.replace(staging / "replaced.pdf", target)
        make_pdf(staging / "after.pdf", "after")
        time.sleep(1.5)
        os.replace(staging / "after.pdf", folder / "after.pdf")
        watcher.wait_for(lambda: watcher.done("after.pdf"), what="a file after the damaged one")
        time.sleep(2.5)  # the watcher settles everything pending
        assert watcher.proc.poll() is None
        watcher.proc.send_signal(signal.SIGINT)
        assert watcher.proc.wait(timeout=60) == 0
    finally:
        if watcher.proc.poll() is None:
            watcher.proc.kill()
    assert any("stopped" in line for line in watcher.stderr)
    assert "Traceback" not in "".join(watcher.stderr)

    for name in ["first.pdf", "slow.pdf", "after.pdf"] + [f"burst-{i:02d}.pdf" for i in range(50)]:
        assert len(watcher.done(name)) == 1, (name, [e for e in watcher.events if Path(e["path"]).name == name])
        assert not [e for e in watcher.events if Path(e["path"]).name == name and e["action"] == "changed"]

    from ragcli.store import db as dbmod
    from ragcli.store import corpus as store
    from ragcli.text import file_sha256

    conn = dbmod.connect(Path(os.environ["RAGCLI_DB"]), create=False)
    books = {Path(b.path).name: b for b in store.list_books(conn)}
    assert books["slow.pdf"].page_count == 12  # complete, not a half-copied file
    assert all(books[f"burst-{i:02d}.pdf"].page_count == 2 for i in range(50))
    assert books["replaced.pdf"].file_hash == file_sha256(target)  # the final bytes
    assert "broken.pdf" not in books and len(books) == 54
