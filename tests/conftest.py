"""Shared fixtures.

- Every test runs with its own corpus file, config and data dirs (RAGCLI_DB, XDG_*), but one model
  cache (RAGCLI_CACHE) for the whole session: exporting the embedding model to ONNX takes 30-60 s.
  Set RAGCLI_TEST_CACHE=DIR to keep that cache between sessions while you work.
- `template_db` ingests the sample book and the fixture PDFs once per session; `corpus_db` gives each
  test a copy of it (a file copy, not a re-ingest).
- hypothesis is derandomized (the same examples each run) unless HYPOTHESIS_PROFILE=explore.
- `cli` drives the Typer app in-process (stdout and stderr separate); `run_module` runs
  `python -m ragcli` in a real subprocess for exit codes.
- `fingerprint` hashes every row of every table of a corpus file, to assert "the database is
  unchanged" after a refused or interrupted command.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from conftest_llm import tiny_gguf  # noqa: F401  (the chat-model fixtures)

# Property tests draw the same examples on every run (a CI run must not turn red on an input no earlier
# run drew); `HYPOTHESIS_PROFILE=explore pytest ...` draws new ones, to look for counterexamples, which
# are then pinned with @example.
settings.register_profile("default", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SAMPLE_BOOK = ROOT / "corpus" / "cerebrovascular-neurosurgery-primer.pdf"
FIXTURE_PDFS = {
    "faa": FIXTURES / "faa-amt-handbook-sample.pdf",
    "malawi": FIXTURES / "malawi-quality-improvement-article.pdf",
    "heart": FIXTURES / "heart-failure-programmes-article.pdf",
}
BOOKS = {"primer": SAMPLE_BOOK, **FIXTURE_PDFS}  # book id -> file, as ingested into template_db
_ENV_DROP = ("RAGCLI_MODEL", "RAGCLI_CONFIG", "RAGCLI_DEBUG", "RAGCLI_EMBED_BACKEND", "RAGCLI_BUSY_TIMEOUT_MS")


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory) -> Path:
    """One RAGCLI_CACHE for the session (the exported ONNX embedding model lives here)."""
    keep = os.environ.get("RAGCLI_TEST_CACHE")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        return Path(keep)
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return tmp_path_factory.mktemp("ragcli-cache")
    # pytest-xdist: the workers share one cache in the run's common temp folder, and the first to
    # arrive exports the ONNX model while the others wait (an export takes ~30 s of a core)
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent / "ragcli-cache"
    with FileLock(str(shared) + ".lock"):
        shared.mkdir(exist_ok=True)
        default_embedder(shared)
    return shared


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path, model_cache):
    """Point every place ragcli keeps state at this test's temp dir (the model cache excepted)."""
    for var in _ENV_DROP:
        monkeypatch.delenv(var, raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("RAGCLI_DB", str(tmp_path / "corpus.db"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    monkeypatch.setenv("RAGCLI_CACHE", str(model_cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    yield


def default_embedder(model_cache: Path):
    """The real default embedder (all-MiniLM-L6-v2) from the test's model cache, loaded once per process."""
    from ragcli.models import embed

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAGCLI_CACHE", str(model_cache))
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.delenv("RAGCLI_EMBED_BACKEND", raising=False)
        return embed.get_embedder()


@pytest.fixture(scope="session")
def embedder(model_cache):
    """The real default embedder (all-MiniLM-L6-v2), loaded once per process."""
    return default_embedder(model_cache)


@pytest.fixture(scope="session")
def template_db(tmp_path_factory, embedder) -> dict:
    """The sample book and the three fixture PDFs, ingested once: {"path": Path, "results": {id: ...}}."""
    from ragcli.store import db
    from ragcli.ingest import pipeline as ingest

    path = tmp_path_factory.mktemp("template") / "corpus.db"
    conn = db.connect(path)
    results = {book_id: ingest.ingest_file(conn, pdf, embedder, book_id=book_id)
               for book_id, pdf in BOOKS.items()}
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return {"path": path, "results": results}


@pytest.fixture(scope="session")
def sample_db(tmp_path_factory, model_cache) -> Path:
    """The sample book alone, ingested once for the run (real pymupdf, embeddings, sqlite-vec). Shared:
    a test that writes to a corpus copies this file first."""
    from ragcli.store import db
    from ragcli.ingest import pipeline as ingest

    path = tmp_path_factory.mktemp("sample") / "corpus.db"
    conn = db.connect(path)
    ingest.ingest_file(conn, SAMPLE_BOOK, default_embedder(model_cache))  # its own book id, as `ragcli ingest` gives it
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # copies of the file must hold everything
    conn.close()
    return path


@pytest.fixture
def corpus_db(template_db, tmp_path) -> Path:
    """A private copy of the template corpus at $RAGCLI_DB (tmp_path/corpus.db)."""
    target = tmp_path / "corpus.db"
    shutil.copyfile(template_db["path"], target)
    return target


def _fingerprint(path: Path) -> str:
    """sha256 over the schema and every row of every real table (virtual tables are covered by
    their shadow tables). Opens the file read-only."""
    from ragcli.store.db import sqlite3

    conn = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True)
    try:
        h = hashlib.sha256()
        schema = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()
        h.update(repr(schema).encode())
        for kind, name, sql in schema:
            if kind != "table" or (sql or "").upper().startswith("CREATE VIRTUAL TABLE"):
                continue
            rows = sorted(repr(r) for r in conn.execute(f'SELECT * FROM "{name}"'))
            h.update(f"{name}:{len(rows)}".encode())
            for row in rows:
                h.update(row.encode())
        return h.hexdigest()
    finally:
        conn.close()


@pytest.fixture
def fingerprint():
    return _fingerprint


@pytest.fixture
def cli():
    """cli("search", "x", "--json") -> click Result with .exit_code, .stdout, .stderr (separate)."""
    from typer.testing import CliRunner

    from ragcli.cli import app

    runner = CliRunner()

    def invoke(*args: str, **kwargs):
        return runner.invoke(app, [str(a) for a in args], **kwargs)

    return invoke


@pytest.fixture
def run_module():
    """A real `python -m ragcli ...` subprocess with the test's environment."""

    def run(*args: str, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ragcli", *map(str, args)], capture_output=True,
                              text=True, cwd=ROOT, env=dict(os.environ), timeout=timeout, **kwargs)

    return run
