"""Ingest over many files (issue 29): parsing in worker processes, one writer, whole-run progress."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

NOTES = {
    "bleeding.md": "# Bleeding\n\nApply firm pressure to the wound with a dressing.\n\n## Tourniquet\n\n"
                   "A tourniquet is the last resort for a limb that keeps bleeding.",
    "fractures.md": "# Fractures\n\nSplint a broken bone where it lies; pad the splint.\n\n## Moving\n\n"
                    "Do not move a casualty with a spine injury unless in danger.",
    "heat.md": "# Heat\n\nHeat stroke: cool the casualty at once with water and shade.\n\n## Cramps\n\n"
               "Heat cramps ease with rest and salted water.",
}


@pytest.fixture
def notes(tmp_path) -> list[Path]:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return [folder / name for name in sorted(NOTES)]


def _passages(path: Path) -> set:
    conn = sqlite3.connect(path)
    try:
        return set(conn.execute("SELECT book_id, ordinal, text_hash, embed_hash FROM passages"))
    finally:
        conn.close()


def test_workers_give_the_same_corpus_in_order(notes, tmp_path, embedder):
    from ragcli.ingest.pipeline import FileOptions
    from ragcli.ingest.run import ingest_run
    from ragcli.store import db

    seen = []
    for workers, name in ((0, "w0.db"), (2, "w2.db")):
        conn = db.connect(tmp_path / name)
        results = list(ingest_run(conn, notes, embedder, FileOptions(), workers=workers,
                                  on_status=lambda s: seen.append((s.files_done, s.passages, s.eta))))
        conn.close()
        assert [Path(r.path).name for r in results] == sorted(NOTES)  # the files' order
        assert [r.status for r in results] == ["added"] * 3
    assert _passages(tmp_path / "w0.db") == _passages(tmp_path / "w2.db")
    assert seen[-1][0] == 3 and seen[-1][1] > 0 and seen[-1][2] == 0.0  # the run's end: nothing left


def test_a_bad_file_among_many_is_reported_and_the_run_goes_on(notes, tmp_path, cli):
    bad = notes[0].parent / "broken.pdf"
    bad.write_bytes(b"%PDF-1.4 not really a pdf")
    res = cli("ingest", notes[0], bad, notes[1], notes[2], "--workers", "2", "--json")
    assert res.exit_code == 3, res.stderr
    rows = json.loads(res.stdout)
    assert [r["status"] for r in rows] == ["added", "failed", "added", "added"]
    assert "broken.pdf" in rows[1]["error"] and "Traceback" not in res.stderr
    again = cli("ingest", *notes, "--workers", "2", "--json")  # unchanged files: nothing parsed again
    assert [r["status"] for r in json.loads(again.stdout)] == ["unchanged"] * 3


def test_interrupted_run_resumes_without_embedding_again(notes, tmp_path, embedder, fingerprint):
    from ragcli.ingest import pipeline, run
    from ragcli.store import db

    path = tmp_path / "c.db"
    conn = db.connect(path)
    pipeline.ingest_file(conn, notes[0], embedder)
    before = fingerprint(path)

    class Dies:
        name, dim = embedder.name, embedder.dim

        def __init__(self):
            self.calls = 0

        def embed(self, texts):
            self.calls += 1
            if self.calls > 1:  # the passages embedded, then the vocabulary terms: killed
                raise KeyboardInterrupt
            return embedder.embed(texts)

    with pytest.raises(KeyboardInterrupt):
        list(run.ingest_run(conn, notes[1:2], Dies(), pipeline.FileOptions()))
    assert fingerprint(path) == before  # the corpus is as it was; the vectors are staged beside it
    assert Path(str(path) + "-embedstage").exists()
    result = next(run.ingest_run(conn, notes[1:2], embedder, pipeline.FileOptions()))
    assert result.status == "added" and result.embedded == 0 and result.reused == result.passages
    assert not Path(str(path) + "-embedstage").exists()
    conn.close()
