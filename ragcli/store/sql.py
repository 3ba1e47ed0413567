"""The SQLite driver and the helpers every statement of store/ uses.

- `sqlite3`: a SQLite that can load extensions (pysqlite3-binary where installed, else the stdlib);
- the connection `db.connect` returns turns SQLite errors that describe the file (locked, read-only,
  not a database, malformed, disk, cannot open) into `CorpusError` at whichever statement meets them,
  so no caller, the CLI included, needs to know sqlite3's exceptions or read their messages;
- `transaction`: BEGIN IMMEDIATE ... COMMIT, rolled back on any exception (Ctrl-C too); any
  `DatabaseError` inside it becomes `CorpusError` (a write the file refused);
- `placeholders` / `in_filter` / `select_in`: `IN (?,?,...)` lists, chunked for long lists.
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence

from ragcli.errors import CorpusError

try:  # a SQLite that can load extensions; many Python builds cannot (pyenv, macOS system Python)
    import pysqlite3.dbapi2 as sqlite3  # type: ignore
except ImportError:  # pragma: no cover - depends on the platform
    import sqlite3  # type: ignore

DatabaseError = sqlite3.DatabaseError
OperationalError = sqlite3.OperationalError

IN_CHUNK = 500  # values per IN list (SQLite allows 32,766 variables since 3.32, 999 before)
_FILE_PROBLEMS = ("readonly", "read-only", "locked", "busy", "not a database", "malformed", "disk",
                  "unable to open")


def describe(exc: Exception, path) -> str:
    """One line for a SQLite error about the corpus file."""
    msg = str(exc)
    if "not a database" in msg or "malformed" in msg:
        return f"{path} is not a ragcli corpus (not a SQLite database)"
    if "readonly" in msg or "read-only" in msg:
        return f"{path} is read-only: cannot write to it (check its permissions)"
    if "locked" in msg or "busy" in msg:
        return f"{path} is locked by another process; try again when it finishes"
    if "unable to open" in msg:
        return f"cannot open {path}: check the path and its permissions"
    return f"{path}: {msg}"


def db_file(conn) -> Path:
    """The corpus file behind a connection (for messages; a PostgreSQL library: its address without
    the password)."""
    if getattr(conn, "dialect", "sqlite") == "postgres":
        return conn.address
    try:
        row = conn.execute("PRAGMA database_list").fetchone()
    except (DatabaseError, CorpusError):  # the file is past reading: say so without its name
        row = None
    return Path(row[2] if row and row[2] else "the corpus file")


def _file_problem(exc: DatabaseError, conn) -> Exception:
    """CorpusError for an error about the file; the error itself for anything else (a bug)."""
    if isinstance(exc, DatabaseError) and any(word in str(exc) for word in _FILE_PROBLEMS):
        return CorpusError(describe(exc, db_file(conn)))
    return exc


def _guarded(name: str):
    """sqlite3.Cursor's method `name`, with file-level errors raised as CorpusError."""
    plain = getattr(sqlite3.Cursor, name)

    def method(self, *args, **kwargs):
        try:
            return plain(self, *args, **kwargs)
        except DatabaseError as exc:
            raise _file_problem(exc, self.connection) from exc

    method.__name__ = name
    return method


class Cursor(sqlite3.Cursor):
    """A cursor whose file-level SQLite errors are CorpusErrors (see the module docstring)."""

    execute, executemany, fetchone, fetchmany, fetchall, __next__ = (
        _guarded(name) for name in ("execute", "executemany", "fetchone", "fetchmany", "fetchall", "__next__"))


class Connection(sqlite3.Connection):
    """`conn.execute` and friends go through `Cursor`."""

    def cursor(self, factory=Cursor):
        return super().cursor(factory)


@contextmanager
def transaction(conn, lock: Optional[str] = None) -> Iterator:
    """BEGIN IMMEDIATE (the write lock first: numbers and replacements are decided inside it) ...
    COMMIT; ROLLBACK on any exception, so a failed or interrupted write leaves the file as it was.

    `lock` names what the transaction decides (a topic's next number, a file's ingest): on PostgreSQL,
    where writers do not queue for one file lock, an advisory lock of that name is taken first; SQLite's
    BEGIN IMMEDIATE already lets one writer in at a time."""
    if getattr(conn, "dialect", "sqlite") == "postgres":
        with conn.transaction(lock) as tx:
            yield tx
        return
    try:
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            yield conn
    except DatabaseError as exc:
        raise CorpusError(describe(exc, db_file(conn))) from exc


def placeholders(n: int) -> str:
    """"?,?,?" for n values."""
    return ",".join("?" * n)


def in_filter(column: str, values: Optional[Sequence], prefix: str = " AND ") -> tuple[str, list]:
    """(" AND column IN (?,?)", values) for a short list such as book ids; ("", []) when empty."""
    if not values:
        return "", []
    return f"{prefix}{column} IN ({placeholders(len(values))})", list(values)


def select_in(conn, sql: str, values: Iterable, size: int = IN_CHUNK) -> list:
    """Rows of `sql`, whose `{in}` stands for "(?,?,...)", for every value, `size` values a query
    (the rows of each chunk follow those of the chunk before)."""
    values = list(values)
    rows: list = []
    for start in range(0, len(values), size):
        part = values[start:start + size]
        rows += conn.execute(sql.replace("{in}", f"({placeholders(len(part))})"), part).fetchall()
    return rows
