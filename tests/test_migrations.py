"""Schema migrations: a blank file gets every step, an older file is upgraded, `info --json` fields."""
from __future__ import annotations

import json

import pytest

from ragcli.store import db
from ragcli.store import migrations


def _applied(path):
    conn = db.sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute("SELECT name FROM migrations ORDER BY rowid")]
    finally:
        conn.close()


@pytest.mark.parametrize("blank", ["missing", "empty"])
def test_blank_file_gets_every_step(tmp_path, blank):
    path = tmp_path / "sub" / "corpus.db" if blank == "missing" else tmp_path / "corpus.db"
    if blank == "empty":
        path.write_bytes(b"")
    conn = db.connect(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert {"meta", "books", "pages", "sections", "figures", "passages", "passages_fts", "terms"} <= tables
    assert conn.execute("SELECT value FROM meta WHERE key='app'").fetchone()[0] == "ragcli"
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    names = [name for name, _ in migrations.STEPS]
    assert _applied(path) == names and db.schema_version() == len(names)
    db.connect(path).close()  # opening again applies nothing twice
    assert _applied(path) == names


def test_migration_names_are_unique_and_ordered():
    names = [name for name, _ in migrations.STEPS]
    assert len(set(names)) == len(names)
    assert names == sorted(names) and all(n.startswith("m") and n[1:4].isdigit() for n in names)


def test_upgrade_from_the_previous_schema(tmp_path, monkeypatch):
    if len(migrations.STEPS) < 2:
        pytest.skip("only one schema step so far")
    path = tmp_path / "corpus.db"
    with monkeypatch.context() as m:
        m.setattr(migrations, "STEPS", migrations.STEPS[:-1])
        db.connect(path).close()
    assert _applied(path) == [name for name, _ in migrations.STEPS[:-1]]
    db.connect(path).close()
    assert _applied(path) == [name for name, _ in migrations.STEPS]


def test_upgrade_keeps_an_ingested_corpus(template_db):
    assert _applied(template_db["path"]) == [name for name, _ in migrations.STEPS]


def test_info_json(corpus_db, cli):
    res = cli("info", "--json")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert {"corpus", "schema_version", "ragcli_schema_version", "embedding_model", "embedding_dim",
            "contents", "versions"} <= set(data)
    assert data["corpus"] == str(corpus_db)
    assert data["schema_version"] == data["ragcli_schema_version"] == len(migrations.STEPS)
    assert data["embedding_model"] == "sentence-transformers/all-MiniLM-L6-v2" and data["embedding_dim"] == 384
    assert data["contents"]["books"] == 4 and data["contents"]["passages"] > 100
    assert {"python", "sqlite", "sqlite-vec", "pymupdf"} <= set(data["versions"])


def test_info_human_and_empty(cli, tmp_path):
    from ragcli.store import db

    db.connect(tmp_path / "corpus.db").close()  # an empty corpus: `info` reads, never creates one
    res = cli("info")
    assert res.exit_code == 0 and "schema_version" in res.stdout
    data = json.loads(cli("info", "--json").stdout)
    assert data["embedding_model"] is None and data["contents"]["books"] == 0
    assert data["corpus"] == str(tmp_path / "corpus.db")  # $RAGCLI_DB from the autouse fixture


def test_db_flag_beats_environment(cli, tmp_path):
    from ragcli.store import db

    other = tmp_path / "elsewhere" / "x.db"
    db.connect(other).close()
    data = json.loads(cli("info", "--json", "--db", other).stdout)
    assert data["corpus"] == str(other) and other.exists()
