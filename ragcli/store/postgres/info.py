"""What `ragcli info` reports about a PostgreSQL library: where (no password), the server and extensions."""
from __future__ import annotations


def server(conn) -> dict:
    version = conn.execute("SHOW server_version").fetchone()[0]
    extensions = dict(conn.execute("SELECT extname, extversion FROM pg_extension ORDER BY extname").fetchall())
    size = conn.execute("SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c "
                        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ? AND c.relkind = 'r'",
                        (conn.schema,)).fetchone()[0]
    return {"backend": "postgresql", "schema": conn.schema, "server_version": version,
            "extensions": extensions, "size_bytes": int(size)}
