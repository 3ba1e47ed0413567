"""The embedding stage: vectors embedded by an ingest (or reembed) whose book is not written yet.

A small SQLite file beside the corpus (`CORPUS-embedstage`), one row per embed hash (sha256 of model
name + embedded text) and its float32 vector, committed after every embedded batch. The corpus file
itself is never touched by it, so an interrupted ingest (Ctrl-C, a killed server, a crash) leaves the
corpus exactly as it was; the next run finds what was embedded here and does not embed it again.
Rows are a pure cache of (model, text) -> vector: a stale row can be wrong about nothing, only take
space. A book's rows are dropped once the book is committed; the file is removed when it is empty.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional

from ragcli.store.sql import DatabaseError, db_file, select_in, sqlite3

SUFFIX = "-embedstage"


def stage_path(conn) -> Optional[Path]:
    """Where the stage of this corpus lives (None for an in-memory corpus, and for a PostgreSQL library,
    whose ingest is one transaction on the server: a killed ingester's vectors are embedded again)."""
    if getattr(conn, "dialect", "sqlite") == "postgres":
        return None
    row = conn.execute("PRAGMA database_list").fetchone()
    return Path(row[2] + SUFFIX) if row and row[2] else None


class EmbeddingStage:
    def __init__(self, corpus_conn):
        self.path = stage_path(corpus_conn)
        self._corpus = db_file(corpus_conn)
        self._conn = None
        self._memory: dict[str, bytes] = {}  # an in-memory corpus: a stage for this process only

    def _open(self, create: bool):
        if self._conn is None and self.path is not None and (create or self.path.exists()):
            try:
                self._conn = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False)
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("CREATE TABLE IF NOT EXISTS stage (embed_hash TEXT PRIMARY KEY, vec BLOB NOT NULL)")
                self._conn.commit()
            except DatabaseError:  # no stage (a read-only folder): the ingest still runs, unstaged
                self._conn, self.path = None, None
        return self._conn

    def get(self, hashes: Iterable[str]) -> dict[str, bytes]:
        hashes = set(hashes)
        conn = self._open(create=False)
        if conn is None:
            return {h: self._memory[h] for h in hashes if h in self._memory}
        return {h: bytes(v) for h, v in select_in(conn, "SELECT embed_hash, vec FROM stage WHERE embed_hash IN {in}",
                                                   hashes)}

    def put(self, rows: list[tuple[str, bytes]]) -> None:
        """Commit one embedded batch."""
        conn = self._open(create=True)
        if conn is None:
            self._memory.update(rows)
            return
        with conn:
            conn.executemany("INSERT OR REPLACE INTO stage(embed_hash, vec) VALUES (?, ?)", rows)

    def drop(self, hashes: Iterable[str]) -> None:
        """Forget vectors now in the corpus; remove the file once it holds nothing."""
        hashes = list(set(hashes))
        for h in hashes:
            self._memory.pop(h, None)
        conn = self._open(create=False)
        if conn is None:
            return
        with conn:
            conn.executemany("DELETE FROM stage WHERE embed_hash = ?", ((h,) for h in hashes))
        if conn.execute("SELECT 1 FROM stage LIMIT 1").fetchone() is None:
            self.close()
            for suffix in ("", "-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)

    def clear(self) -> None:
        """Every staged vector (re-embedding everything with another model)."""
        self._memory.clear()
        conn = self._open(create=False)
        if conn is not None:
            with conn:
                conn.execute("DELETE FROM stage")
            self.drop([])

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
