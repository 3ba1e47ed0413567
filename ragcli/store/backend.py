"""The backend seam: a library's address picks its database, and everything dialect-specific lives behind it.

A library is a SQLite file (a path: the default) or a schema in a PostgreSQL database with pgvector (an
address `postgresql://user@host:port/dbname`, optionally `?schema=NAME`, default `ragcli`). `connect`
opens either; the connection it returns answers `conn.dialect` ("sqlite" | "postgres"), and the few
store functions whose SQL differs between the two (transactions with an optional lock, lexical and
dense search, the vector tables, migrations, info) ask it which backend to run. Every other statement
of store/ is written once, in the SQL both engines share, and the rest of ragcli calls store functions
without knowing which database is behind them.

| concern        | SQLite (store/db.py, sql.py, vectors.py)     | PostgreSQL (store/postgres/)                     |
|----------------|----------------------------------------------|--------------------------------------------------|
| connect        | the file, WAL, sqlite-vec loaded             | psycopg 3, search_path = the library's schema    |
| transaction    | BEGIN IMMEDIATE (one writer: the lock)       | BEGIN + pg_advisory_xact_lock(lock) when given   |
| lexical        | FTS5 BM25 (external-content table)           | full-text search, GIN index over a tsvector      |
| dense          | sign-bit codes + float16 rescoring / vec0    | pgvector HNSW (cosine), iterative scan / exact   |
| migrations     | store/migrations.py                          | store/postgres/schema.py, the same step names    |
| info           | sqlite and sqlite-vec versions               | server and extension versions                    |
"""
from __future__ import annotations

from pathlib import Path
from typing import Union

from ragcli.store.address import SCHEMES, is_address, redact  # noqa: F401 (the seam's names)


def dialect(conn) -> str:
    """"postgres" or "sqlite" (a plain sqlite3 connection counts as SQLite)."""
    return getattr(conn, "dialect", "sqlite")


def is_postgres(conn) -> bool:
    return dialect(conn) == "postgres"


def connect(target: Union[str, Path], create: bool = True, pool_size: int = 0):
    """Open the library at `target`: a PostgreSQL address or a SQLite file path. `pool_size` (a
    PostgreSQL library served to many threads): one connection object shared by every thread, over a
    pool of at most that many server connections (psycopg_pool); SQLite ignores it."""
    if is_address(target):
        from ragcli.store.postgres import connection

        return connection.connect(str(target), create=create, pool_size=pool_size)
    from ragcli.store import db

    return db.connect(Path(target), create=create)


def location(conn) -> str:
    """Where the library is, for messages: the file, or the address without its password."""
    if is_postgres(conn):
        return conn.address
    from ragcli.store.sql import db_file

    return str(db_file(conn))
