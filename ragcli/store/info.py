"""What `ragcli info` reports: location, contents, schema, embedding model, library versions."""
from __future__ import annotations

import platform
from importlib import metadata

from ragcli.store import db as dbmod
from ragcli.store import corpus as store


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def describe(conn) -> dict:
    model = store.embedding_model(conn)
    if getattr(conn, "dialect", "sqlite") == "postgres":
        from ragcli.store.postgres import info as pg_info

        path, server = conn.address, pg_info.server(conn)  # the address never carries its password
        engine = {"postgresql": server["server_version"], "pgvector": server["extensions"].get("vector", "")}
    else:
        path = conn.execute("PRAGMA database_list").fetchone()[2]
        sqlite_version, vec_version = conn.execute("SELECT sqlite_version(), vec_version()").fetchone()
        server, engine = {"backend": "sqlite"}, {"sqlite": sqlite_version, "sqlite-vec": vec_version}
    return {
        "corpus": path,
        "backend": server,
        "schema_version": len(conn.execute("SELECT name FROM migrations").fetchall()),
        "ragcli_schema_version": dbmod.schema_version(),
        "embedding_model": model[0] if model else None,
        "embedding_dim": model[1] if model else None,
        "embedding_source": store.embedding_source(conn),
        "contents": store.counts(conn),
        "books_with_warnings": [b.id for b in store.list_books(conn) if b.warnings],
        "versions": {
            "ragcli": _version("ragcli"), "python": platform.python_version(), **engine,
            "pymupdf": _version("pymupdf"),
            "sentence-transformers": _version("sentence-transformers"),
            "llama-cpp-python": _version("llama_cpp_python"), "onnxruntime": _version("onnxruntime"),
        },
    }
