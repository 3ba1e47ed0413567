"""Open the corpus file: pragmas, sqlite-vec loaded, migrations applied, foreign files refused."""
from __future__ import annotations

import datetime as _dt
import importlib.util
import os
from pathlib import Path

from ragcli.errors import CorpusError
from ragcli.store import migrations
from ragcli.store.sql import (  # noqa: F401 (DatabaseError, describe: for callers of db)
    Connection, DatabaseError, OperationalError, describe, sqlite3, transaction,
)

APP_ID = "ragcli"
BUSY_TIMEOUT_MS = 10_000  # default; RAGCLI_BUSY_TIMEOUT_MS overrides it


def schema_version() -> int:
    return len(migrations.STEPS)


def busy_timeout_ms() -> int:
    """How long a write waits for another process's lock: $RAGCLI_BUSY_TIMEOUT_MS, else 10 s."""
    raw = os.environ.get("RAGCLI_BUSY_TIMEOUT_MS", "").strip()
    if not raw:
        return BUSY_TIMEOUT_MS
    try:
        return max(0, int(raw))
    except ValueError:
        raise CorpusError(f"RAGCLI_BUSY_TIMEOUT_MS must be a whole number of milliseconds, not {raw!r}")


def _writable(path: Path) -> bool:
    return os.access(path, os.W_OK)


def _vec_path() -> str:
    """sqlite-vec's loadable library, found without importing the package (its __init__ imports
    numpy: 0.1-0.5 s of every command)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise CorpusError("sqlite-vec is not installed: pip install sqlite-vec")
    return os.path.join(list(spec.submodule_search_locations)[0], "vec0")


def _load_vec(conn) -> None:
    if not hasattr(conn, "enable_load_extension"):
        raise CorpusError("this Python's sqlite3 cannot load extensions; install pysqlite3-binary")
    conn.enable_load_extension(True)
    conn.load_extension(_vec_path())
    conn.enable_load_extension(False)


def _applied(conn, path: Path = Path("the corpus file")) -> list[str]:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if not tables:
        return []
    if "migrations" not in tables or "meta" not in tables:
        raise CorpusError(f"{path} is not a ragcli corpus (a SQLite file with other tables); "
                          f"give another file with --db")
    row = conn.execute("SELECT value FROM meta WHERE key='app'").fetchone()
    if not row or row[0] != APP_ID:
        raise CorpusError(f"{path} is not a ragcli corpus (no ragcli mark in its meta table)")
    return [r[0] for r in conn.execute("SELECT name FROM migrations ORDER BY rowid")]


def _migrate(conn, path: Path) -> None:
    applied = _applied(conn, path)
    unknown = [name for name in applied if name not in migrations.known_names()]
    if unknown:
        raise CorpusError(
            f"{path} was written by a newer ragcli (schema version {len(applied)}, this ragcli knows "
            f"{schema_version()}); upgrade ragcli to use it"
        )
    todo = migrations.pending(applied)
    if not todo:
        return
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    with transaction(conn):
        if not applied:
            conn.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        for name, fn in migrations.pending(_applied_in_tx(conn)):
            fn(conn)
            if name == "m001_initial":
                conn.execute("INSERT INTO meta(key, value) VALUES ('app', ?)", (APP_ID,))
            conn.execute("INSERT INTO migrations(name, applied_at) VALUES (?, ?)", (name, now))


def _applied_in_tx(conn) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM migrations ORDER BY rowid")]


def connect(path: Path, create: bool = True):
    """Open (and create or upgrade) the corpus at `path`. Raises CorpusError with a clear message.

    A file this process cannot write is opened read-only (`?mode=ro`): reading works, and the first
    write fails with "read-only" instead of half-working. A foreign file is refused before anything
    (not even the journal mode) is written to it."""
    path = Path(path)
    if not path.exists():
        if not create:
            raise CorpusError(f"no corpus at {path}: run `ragcli ingest BOOK.pdf` first")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CorpusError(f"cannot create {path.parent}: {exc.strerror}") from exc
    elif path.is_dir():
        raise CorpusError(f"{path} is a directory, not a corpus file")
    timeout = busy_timeout_ms()
    readonly = path.exists() and not _writable(path)
    target = f"file:{path.resolve()}?mode=ro" if readonly else str(path)
    try:
        conn = sqlite3.connect(target, timeout=timeout / 1000, isolation_level=None,
                               check_same_thread=False, uri=readonly, factory=Connection)
    except DatabaseError as exc:
        raise CorpusError(describe(exc, path)) from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {timeout}")
        conn.execute("PRAGMA foreign_keys = ON")
        _applied(conn, path)  # refuses a foreign file before anything is written to it
        if not readonly:
            _set_wal(conn)
        _load_vec(conn)
        _migrate(conn, path)
    except (DatabaseError, CorpusError) as exc:
        conn.close()
        cause = exc.__cause__ if isinstance(exc.__cause__, DatabaseError) else exc
        if isinstance(cause, CorpusError):
            raise
        raise CorpusError(describe(cause, path)) from cause  # the path as the user gave it
    return conn


def _set_wal(conn) -> None:
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    if mode != "wal":
        try:
            conn.execute("PRAGMA journal_mode = WAL")
        except (OperationalError, CorpusError):
            pass  # read-only file: reading still works in its current mode
    conn.execute("PRAGMA synchronous = NORMAL")

