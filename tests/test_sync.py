"""`ragcli sync`: a folder of small PDFs made here with pymupdf, synced; then one file changed, one
renamed, one deleted, one added: exactly those four changes, re-embedding only the changed
passages; a second sync does nothing. kill -9 during a sync leaves every book as before or as after."""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pymupdf = pytest.importorskip("pymupdf")

ROOT = Path(__file__).resolve().parents[1]
TOPICS = ["tourniquet", "splint", "burn", "airway", "fracture", "shock", "bleeding", "hypothermia", "dressing",
          "poison", "seizure", "sprain", "wound", "fever", "stretcher", "bandage"]


def page_text(name: str, n: int, variant: str = "") -> str:
    """A page of plain sentences, different for every file and page (no running header to strip)."""
    topic = TOPICS[(sum(map(ord, name)) + n) % len(TOPICS)]
    return (f"Chapter {n} of the {name} manual explains the {topic} in the field{variant}. "
            f"The {topic} procedure for {name} starts with checking the casualty and calling for help. "
            f"Each step of page {n} names the equipment, the position of the casualty and the signs to watch. "
            f"When the {topic} is done, record the time on the casualty card for {name} page {n}.")


def make_pdf(path: Path, name: str, pages: int = 3, changed_page: int = 0, variant: str = "") -> Path:
    with pymupdf.open() as doc:
        for n in range(1, pages + 1):
            page = doc.new_page()
            page.insert_textbox(pymupdf.Rect(72, 100, 520, 700),
                                page_text(name, n, variant if n == changed_page else ""), fontsize=11)
        doc.save(path)
    return path


def sync(cli, *args):
    res = cli("sync", *args, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def passage_hashes(db: Path, book_id: str) -> set[str]:
    from ragcli.store.db import sqlite3

    conn = sqlite3.connect(db)
    try:
        return {r[0] for r in conn.execute("SELECT text_hash FROM passages WHERE book_id = ?", (book_id,))}
    finally:
        conn.close()


def test_four_changes_are_exactly_four_and_only_changed_passages_are_embedded(cli, tmp_path, embedder):
    folder = tmp_path / "library"
    folder.mkdir()
    for name in ("alpha", "bravo", "charlie", "delta", "echo"):
        make_pdf(folder / f"{name}.pdf", name)
    db = Path(os.environ["RAGCLI_DB"])

    first = sync(cli, folder)
    assert first["counts"]["added"] == 5 and first["unchanged"] == 0
    assert {c["book_id"] for c in first["changes"]} == {"alpha", "bravo", "charlie", "delta", "echo"}
    before = passage_hashes(db, "charlie")

    make_pdf(folder / "charlie.pdf", "charlie", changed_page=2, variant=", as revised in the second edition")
    (folder / "delta.pdf").rename(folder / "delta-renamed.pdf")
    (folder / "echo.pdf").unlink()
    make_pdf(folder / "foxtrot.pdf", "foxtrot")

    second = sync(cli, folder, "--prune")
    by_action = {c["action"]: c for c in second["changes"]}
    assert sorted(by_action) == ["added", "changed", "gone", "moved"] and len(second["changes"]) == 4
    assert second["counts"] == {"added": 1, "changed": 1, "moved": 1, "linked": 0, "gone": 1, "removed": 1,
                                "failed": 0}
    assert second["unchanged"] == 2  # alpha, bravo: not even hashed
    assert second["hashed"] == 3  # charlie (new mtime), delta-renamed and foxtrot (new paths)
    changed = by_action["changed"]
    after = passage_hashes(db, "charlie")
    new_texts = len(after - before)
    assert 1 <= new_texts < changed["passages"]  # one page's passage changed, the others did not
    assert changed["embedded"] == new_texts and changed["reused"] == changed["passages"] - new_texts
    moved = by_action["moved"]
    assert moved["book_id"] == "delta" and moved["old_path"].endswith("delta.pdf")
    assert moved["path"].endswith("delta-renamed.pdf") and moved["embedded"] == 0
    assert by_action["gone"]["book_id"] == "echo" and by_action["gone"]["status"] == "removed"
    books = {b["id"]: b for b in json.loads(cli("books", "--json").stdout)}
    assert sorted(books) == ["alpha", "bravo", "charlie", "delta", "foxtrot"]
    assert books["delta"]["path"].endswith("delta-renamed.pdf")

    third = sync(cli)  # no folder: the one remembered
    assert third["folders"] == [str(folder.resolve())]
    assert third["changes"] == [] and third["unchanged"] == 5 and third["hashed"] == 0


def test_dry_run_changes_nothing_and_gone_files_are_kept_without_prune(cli, tmp_path, embedder, fingerprint):
    folder = tmp_path / "library"
    folder.mkdir()
    make_pdf(folder / "alpha.pdf", "alpha")
    make_pdf(folder / "bravo.pdf", "bravo")
    sync(cli, folder)
    db = Path(os.environ["RAGCLI_DB"])
    (folder / "bravo.pdf").unlink()
    make_pdf(folder / "charlie.pdf", "charlie")
    fp = fingerprint(db)
    dry = sync(cli, folder, "--dry-run", "--prune")
    assert dry["dry_run"] and {c["action"] for c in dry["changes"]} == {"added", "gone"}
    assert fingerprint(db) == fp
    kept = sync(cli, folder)
    gone = [c for c in kept["changes"] if c["action"] == "gone"]
    assert gone[0]["status"] == "kept" and "bravo" in {b["id"] for b in json.loads(cli("books", "--json").stdout)}
    screen = cli("sync", folder)
    assert "gone" in screen.stdout and "--prune removes it" in screen.stdout


def test_a_missing_folder_is_an_error_and_prunes_nothing(cli, tmp_path, embedder):
    folder = tmp_path / "library"
    folder.mkdir()
    make_pdf(folder / "alpha.pdf", "alpha")
    sync(cli, folder)
    shutil.rmtree(folder)  # an unmounted disk looks like this
    res = cli("sync", "--prune")
    assert res.exit_code == 3 and "no such folder" in res.stderr and "Traceback" not in res.output
    assert [b["id"] for b in json.loads(cli("books", "--json").stdout)] == ["alpha"]
    file_given = cli("sync", ROOT / "corpus" / "cerebrovascular-neurosurgery-primer.pdf")
    assert file_given.exit_code == 2 and "not a folder" in file_given.stderr


def test_copies_of_one_file_are_one_book_and_a_damaged_file_does_not_stop_the_others(cli, tmp_path, embedder):
    folder = tmp_path / "library"
    folder.mkdir()
    make_pdf(folder / "alpha.pdf", "alpha")
    shutil.copyfile(folder / "alpha.pdf", folder / "alpha-copy.pdf")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\n" + os.urandom(2000))
    make_pdf(folder / "bravo.pdf", "bravo")
    res = cli("sync", folder, "--json")
    assert res.exit_code == 3, res.output
    data = json.loads(res.stdout)
    assert data["counts"]["added"] == 2 and data["counts"]["linked"] == 1 and data["counts"]["failed"] == 1
    assert "broken.pdf" in res.stderr and "Traceback" not in res.stderr
    again = cli("sync", folder, "--json")  # the broken file is tried again (it is not recorded)
    assert json.loads(again.stdout)["counts"]["failed"] == 1
    books = {b["id"]: b for b in json.loads(cli("books", "--json").stdout)}
    assert sorted(books) == ["alpha-copy", "bravo"]  # the first copy in name order gave the id
    (folder / "alpha-copy.pdf").unlink()  # one copy gone: the book stays, held by the other
    pruned = cli("sync", folder, "--prune", "--json")
    gone = [c for c in json.loads(pruned.stdout)["changes"] if c["action"] == "gone"]
    assert pruned.exit_code == 3 and gone[0]["status"] == "done"
    books = {b["id"]: b for b in json.loads(cli("books", "--json").stdout)}
    assert sorted(books) == ["alpha-copy", "bravo"] and books["alpha-copy"]["path"] == str(folder / "alpha.pdf")


# -- kill -9 ----------------------------------------------------------------------------------------

def book_states(db: Path) -> dict[str, tuple]:
    """Per book: (file hash, path, sorted passage text hashes, vectors stored for its passages)."""
    from ragcli.store.db import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        out = {}
        for book_id, file_hash, path in conn.execute("SELECT id, file_hash, path FROM books"):
            hashes = tuple(sorted(r[0] for r in conn.execute(
                "SELECT text_hash FROM passages WHERE book_id = ?", (book_id,))))
            vectors = conn.execute("SELECT COUNT(*) FROM passage_vec_half h JOIN passages p ON p.id = h.id "
                                   "WHERE p.book_id = ?", (book_id,)).fetchone()[0]
            fts = conn.execute("SELECT COUNT(*) FROM passages_fts f JOIN passages p ON p.id = f.rowid "
                               "WHERE p.book_id = ?", (book_id,)).fetchone()[0]
            out[book_id] = (file_hash, path, hashes, vectors == len(hashes) == fts)
        return out
    finally:
        conn.close()


def test_kill_9_during_a_sync_leaves_every_book_as_before_or_as_after(cli, tmp_path, embedder):
    """Three kills at spread moments here (bench/robustness/bench_sync.py kill does twenty on the shared PDFs)."""
    folder = tmp_path / "library"
    folder.mkdir()
    for name in ("alpha", "bravo", "charlie"):
        make_pdf(folder / f"{name}.pdf", name, pages=4)
    sync(cli, folder)
    db = Path(os.environ["RAGCLI_DB"])
    make_pdf(folder / "alpha.pdf", "alpha", pages=4, changed_page=3, variant=", revised")
    (folder / "bravo.pdf").rename(folder / "bravo-2.pdf")
    (folder / "charlie.pdf").unlink()
    for name in ("delta", "echo", "foxtrot", "golf"):
        make_pdf(folder / f"{name}.pdf", name, pages=4)
    pristine = tmp_path / "before.db"
    shutil.copyfile(db, pristine)
    before = book_states(pristine)
    env = {**os.environ, "RAGCLI_DB": str(db)}
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "ragcli", "sync", "--prune"], env=env, cwd=ROOT, check=True,
                   capture_output=True, timeout=300)
    full = time.monotonic() - start
    after = book_states(db)
    assert set(after) == {"alpha", "bravo", "delta", "echo", "foxtrot", "golf"}
    rng = random.Random(27)
    for delay in (full * 0.5, full * 0.8, full * rng.uniform(0.6, 0.95)):
        shutil.copyfile(pristine, db)
        for extra in ("-wal", "-shm"):
            Path(str(db) + extra).unlink(missing_ok=True)
        proc = subprocess.Popen([sys.executable, "-m", "ragcli", "sync", "--prune"], env=env, cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        now = book_states(db)
        for book_id in set(before) | set(after):
            assert now.get(book_id) in (before.get(book_id), after.get(book_id)), (book_id, delay)
        assert all(state[3] for state in now.values())
        sync(cli, "--prune")  # the next sync finishes the job
        assert book_states(db) == after
