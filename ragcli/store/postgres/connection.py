"""A PostgreSQL library: connect, the statement adapter, transactions with advisory locks, errors.

`PgConnection` speaks the small part of the DB-API that store/ uses (`execute`, `executemany`,
`fetchone`, `fetchall`, `lastrowid`, `rowcount`), so the statements shared with SQLite run unchanged:
`?` placeholders become psycopg's `%s`, and an INSERT into a table with an id returns it (RETURNING id)
as SQLite's lastrowid. The connection runs in autocommit; `transaction` opens BEGIN ... COMMIT (a
savepoint inside another) and, given a lock name, takes `pg_advisory_xact_lock` on it first: that is
what keeps summary numbers and conversation turns gapless and one file ingested once when several
machines write at once (SQLite's BEGIN IMMEDIATE gives the same by having one writer).

Errors: a server that cannot be reached, a refused password, a server without pgvector (or one too old
for iterative index scans), a library written by a newer ragcli: each is one CorpusError line that names
the address without its password.
"""
from __future__ import annotations

import re
import threading
from contextlib import contextmanager
from typing import Iterator, Optional
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ragcli.errors import CorpusError
from ragcli.store.address import redact

APP_ID = "ragcli"
DEFAULT_SCHEMA = "ragcli"
MIN_PGVECTOR = (0, 8, 0)  # hnsw.iterative_scan (filtered searches that return every hit they should)
MIN_SERVER = 130000  # GENERATED columns, websearch_to_tsquery, `CREATE ... IF NOT EXISTS` everywhere
CONNECT_TIMEOUT_S = 10
# HNSW candidates read per search, pgvector's most: at 1M passages recall@10 0.957 (400 gave 0.907, 800
# 0.943); at 100k and 300k 400 already gave 0.992 and 0.972 (D142, D153;
# bench/performance/team_library_scale.py)
EF_SEARCH = 1000
# tables whose INSERT returns the new row's id (SQLite's lastrowid)
ID_TABLES = frozenset({"sections", "figures", "passages", "terms", "summaries", "conversations",
                       "conversation_turns"})
_INSERT = re.compile(r"^\s*INSERT\s+INTO\s+(\w+)", re.IGNORECASE)
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def _psycopg():
    try:
        import psycopg
    except ImportError as exc:
        raise CorpusError('a PostgreSQL library needs psycopg: pip install "psycopg[binary]" pgvector') from exc
    return psycopg


def split_address(address: str) -> tuple[str, str]:
    """(the address libpq is given, the schema): `?schema=NAME` is ragcli's, not libpq's."""
    parts = urlsplit(address.strip())
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == "schema"), DEFAULT_SCHEMA) or DEFAULT_SCHEMA
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    if not _SCHEMA_NAME.match(schema):
        raise CorpusError(f"schema {schema!r} in {redact(address)}: use lower-case letters, digits and _")
    return urlunsplit((parts.scheme, parts.netloc, parts.path, rest, parts.fragment)), schema


def _qmarks(sql: str) -> str:
    """`?` -> `%s` and `%` -> `%%` outside quoted literals and identifiers."""
    out, quote = [], None
    for ch in sql:
        if quote:
            if ch == quote:
                quote = None
            out.append("%%" if ch == "%" else ch)
        elif ch in ("'", '"'):
            quote = ch
            out.append(ch)
        elif ch == "?":
            out.append("%s")
        elif ch == "%":
            out.append("%%")
        else:
            out.append(ch)
    return "".join(out)


class PgCursor:
    """The rows of one statement (read at once: the connection may go back to a pool), with SQLite's
    lastrowid for an INSERT into a table with an id."""

    def __init__(self, cur, returning: bool = False):
        rows = cur.fetchall() if cur.description else []
        self.lastrowid: Optional[int] = rows[0][0] if returning and rows else None
        self._rows = [] if returning else rows
        self._at = 0
        self.rowcount = cur.rowcount

    def fetchone(self):
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def fetchmany(self, size: int = 1000):
        part = self._rows[self._at:self._at + size]
        self._at += len(part)
        return part

    def fetchall(self):
        rest = self._rows[self._at:]
        self._at = len(self._rows)
        return rest

    def __iter__(self):
        return iter(self.fetchall())


class PgConnection:
    """One library connection. Without a pool: one server connection. With a pool (`serve`): shared by
    every thread; each statement borrows a server connection for itself, and a transaction keeps one
    for the thread until it ends."""

    dialect = "postgres"

    def __init__(self, raw, address: str, schema: str, pool=None):
        self._raw = raw
        self._pool = pool
        self._local = threading.local()
        self.address = redact(address)
        self.schema = schema
        self.server_version = raw.info.server_version if raw is not None else 0
        self.pgvector_version = ""

    @property
    def raw(self):
        """The server connection of this thread's open transaction, else the connection (no pool)."""
        return getattr(self._local, "tx", None) or self._raw

    @contextmanager
    def _borrowed(self):
        tx = getattr(self._local, "tx", None)
        if tx is not None or self._pool is None:
            yield tx or self._raw
            return
        with self._pool.connection() as raw:
            yield raw

    # -- statements ------------------------------------------------------------------------------
    def execute(self, sql: str, params=()):
        params = list(params) if params else None
        text = _qmarks(sql) if params else sql
        match = _INSERT.match(sql)
        returning = bool(match and match.group(1).lower() in ID_TABLES and "returning" not in sql.lower())
        if returning:
            text += " RETURNING id"
        with self._borrowed() as raw:
            cur = raw.cursor()
            try:
                cur.execute(text, params)
                return PgCursor(cur, returning)
            except Exception as exc:
                raise translate(exc, self.address) from exc

    def executemany(self, sql: str, rows) -> None:
        rows = [list(r) for r in rows]
        if not rows:
            return
        with self._borrowed() as raw:
            try:
                raw.cursor().executemany(_qmarks(sql), rows)
            except Exception as exc:
                raise translate(exc, self.address) from exc

    def next_ids(self, table: str, n: int) -> list[int]:
        """n new ids of a table with an identity id, in one round trip (rows then go in with executemany,
        pipelined, instead of one INSERT ... RETURNING each: a book's passages in one exchange)."""
        if table not in ID_TABLES:
            raise ValueError(f"no identity id in {table!r}")
        if n <= 0:
            return []
        rows = self.execute(f"SELECT nextval(pg_get_serial_sequence('{table}', 'id')) FROM generate_series(1, ?)",
                            (int(n),)).fetchall()
        return sorted(r[0] for r in rows)

    def copy_rows(self, table: str, columns: str, types: list[str], rows) -> None:
        """Binary COPY of rows (the vectors: numpy arrays, as pgvector's adapter writes them)."""
        with self._borrowed() as raw:
            try:
                with raw.cursor().copy(f"COPY {table} ({columns}) FROM STDIN WITH (FORMAT BINARY)") as copy:
                    copy.set_types(types)
                    for row in rows:
                        copy.write_row(row)
            except Exception as exc:
                raise translate(exc, self.address) from exc

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
        if self._raw is not None:
            self._raw.close()

    def commit(self) -> None:  # autocommit: statements outside `transaction` are committed already
        pass

    @property
    def in_transaction(self) -> bool:
        return getattr(self._local, "tx", None) is not None or (
            self._raw is not None and self._raw.info.transaction_status != 0)  # 0: IDLE

    @contextmanager
    def _transaction_conn(self):
        if self._pool is None or getattr(self._local, "tx", None) is not None:
            yield self.raw
            return
        with self._pool.connection() as raw:
            self._local.tx = raw
            try:
                yield raw
            finally:
                self._local.tx = None

    @contextmanager
    def transaction(self, lock: Optional[str] = None) -> Iterator["PgConnection"]:
        """BEGIN ... COMMIT (a savepoint when nested); ROLLBACK on any exception. `lock`: an advisory
        lock taken first and held to the end (writers of the same lock name go one at a time)."""
        try:
            with self._transaction_conn() as raw, raw.transaction():
                if lock:
                    self.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", (lock,))
                yield self
        except CorpusError:
            raise
        except _psycopg().Error as exc:  # a write the database refused: one line, as SQLite's transaction says it
            err = translate(exc, self.address)
            raise (err if err is not exc else CorpusError(f"{self.address}: {_first_line(exc)}")) from exc


def translate(exc: Exception, address: str) -> Exception:
    """A CorpusError for a database error about the library (connection, permission, read-only);
    the error itself for anything else (a bug)."""
    psycopg = _psycopg()
    errors = psycopg.errors
    if isinstance(exc, psycopg.OperationalError) and not isinstance(exc, errors.QueryCanceled):
        return CorpusError(f"the connection to {address} was lost: {_first_line(exc)}")
    if isinstance(exc, errors.InsufficientPrivilege):
        return CorpusError(f"{address}: permission denied ({_first_line(exc)}); this role can only read")
    if isinstance(exc, errors.ReadOnlySqlTransaction):
        return CorpusError(f"{address} is read-only (a standby or a read-only transaction)")
    if isinstance(exc, (errors.LockNotAvailable, errors.DeadlockDetected)):
        return CorpusError(f"{address} is locked by another writer; try again when it finishes")
    return exc


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _connect_error(exc: Exception, address: str) -> CorpusError:
    """One line for a failed connection; never the password (libpq's messages do not carry it, and the
    address is shown redacted)."""
    msg = str(exc)
    low = msg.lower()
    if "password authentication failed" in low or "no password supplied" in low:
        return CorpusError(f"cannot log in to {address}: the server refused the password "
                           f"(give it with PGPASSWORD or ~/.pgpass)")
    if "does not exist" in low and "database" in low:
        return CorpusError(f"cannot open {address}: the database does not exist (create it with createdb)")
    if "does not exist" in low and "role" in low:
        return CorpusError(f"cannot log in to {address}: the role does not exist")
    if "timeout" in low or "connection refused" in low or "could not connect" in low \
            or "no route" in low or "could not translate host" in low or "name or service" in low \
            or "connection to server" in low:
        reason = "connection refused" if "refused" in low else (
            "unknown host" if "translate host" in low or "name or service" in low else "no answer")
        return CorpusError(f"cannot reach the PostgreSQL server at {address} ({reason})")
    return CorpusError(f"cannot open {address}: {_first_line(exc)}")


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def connect(address: str, create: bool = True, pool_size: int = 0) -> PgConnection:
    """Open (and create or upgrade) the library in `address`'s schema. Raises CorpusError.
    `pool_size`: a connection shared by threads over a pool of at most that many server connections."""
    psycopg = _psycopg()
    shown = redact(address)
    libpq_address, schema = split_address(address)
    kwargs = dict(autocommit=True, connect_timeout=CONNECT_TIMEOUT_S, application_name="ragcli")
    try:
        raw = psycopg.connect(libpq_address, **kwargs)
    except psycopg.Error as exc:
        raise _connect_error(exc, shown) from None  # the cause may quote the address: not chained
    conn = PgConnection(raw, address, schema)
    try:
        _check_server(conn)
        from ragcli.store.postgres import schema as pg_schema

        pg_schema.migrate(conn, create)
        _configure(raw, schema)
    except BaseException:
        raw.close()
        raise
    if not pool_size:
        return conn
    raw.close()
    try:
        from psycopg_pool import ConnectionPool
    except ImportError as exc:
        raise CorpusError("serving a PostgreSQL library needs psycopg_pool: pip install psycopg_pool") from exc
    pool = ConnectionPool(libpq_address, min_size=1, max_size=pool_size, kwargs=kwargs, open=True,
                          configure=lambda c: _configure(c, schema), timeout=30)
    shared = PgConnection(None, address, schema, pool=pool)
    shared.server_version, shared.pgvector_version = conn.server_version, conn.pgvector_version
    return shared


def _configure(raw, schema: str) -> None:
    """Every server connection: the library's schema first, numpy vectors in binary, and the search
    settings: HNSW reads EF_SEARCH candidates and a filtered scan goes on through the graph until it has enough
    rows (pgvector >= 0.8)."""
    raw.execute(f'SET search_path TO "{schema}", public')
    try:
        from pgvector.psycopg import register_vector
    except ImportError as exc:
        raise CorpusError("a PostgreSQL library needs pgvector's Python package: pip install pgvector") from exc
    register_vector(raw)
    raw.execute(f"SET hnsw.ef_search = {int(EF_SEARCH)}")
    raw.execute("SET hnsw.iterative_scan = relaxed_order")


def _check_server(conn: PgConnection) -> None:
    if conn.server_version < MIN_SERVER:
        raise CorpusError(f"{conn.address}: PostgreSQL {conn.server_version // 10000} is too old; "
                          f"ragcli needs PostgreSQL 13 or newer with pgvector {'.'.join(map(str, MIN_PGVECTOR))}")
    row = conn.execute("SELECT default_version, installed_version FROM pg_available_extensions"
                       " WHERE name = 'vector'").fetchone()
    if row is None:
        raise CorpusError(f"{conn.address}: the server has no pgvector extension (install pgvector "
                          f"{'.'.join(map(str, MIN_PGVECTOR))} or newer on it)")
    have = row[1] or row[0]
    if _version_tuple(have) < MIN_PGVECTOR:
        raise CorpusError(f"{conn.address}: pgvector {have} is too old for filtered index scans; "
                          f"ragcli needs {'.'.join(map(str, MIN_PGVECTOR))} or newer (ALTER EXTENSION vector UPDATE)")
    conn.pgvector_version = have
