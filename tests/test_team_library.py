"""The team library (issue 43): the store's contract on both backends, and PostgreSQL's own promises.

- contract (SQLite and PostgreSQL, one parametrised fixture): ingest, books, search, transactions,
  summary and turn numbers, deletes, migrations and a newer library refused;
- PostgreSQL: dense results equal SQLite's on the same vectors, a filtered search returns k hits,
  connection failures are one line without the password, the CLI end to end, concurrent writers,
  kill -9 during an ingest.
Needs a PostgreSQL with pgvector (tests/conftest_pg.py): in CI these tests fail when none can start.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import BOOKS, ROOT, SAMPLE_BOOK
from conftest_pg import pg_library, pg_server, schema_address  # noqa: F401 (fixtures)
from ragcli.errors import CorpusError
from ragcli.store import backend
from ragcli.store import conversations as turn_store
from ragcli.store import corpus as store
from ragcli.store import summaries as summary_store
from ragcli.store import vectors as vector_index
from ragcli.store.sql import select_in, transaction
from ragcli.types import Summary, Turn


@pytest.fixture(params=["sqlite", "postgres"])
def library(request, tmp_path):
    """The address of an empty library on each backend."""
    if request.param == "sqlite":
        return str(tmp_path / "lib.db")
    return request.getfixturevalue("pg_library")


@pytest.fixture(scope="module")
def read_only_libraries(pg_server, embedder, tmp_path_factory):
    """One SQLite file and one PostgreSQL schema, each with the primer (its file kept) and the heart
    failure article ingested, for the tests that only read them: ingested once per module, not per test."""
    import secrets

    from ragcli.ingest import pipeline as ingest

    where = {"sqlite": str(tmp_path_factory.mktemp("read-only") / "lib.db"),
             "postgres": schema_address(pg_server, "r_" + secrets.token_hex(6))}
    for name, address in where.items():
        c = backend.connect(address)
        ingest.ingest_file(c, SAMPLE_BOOK, embedder, book_id="primer", keep_file=True)
        ingest.ingest_file(c, BOOKS["heart"], embedder, book_id="heart")
        with transaction(c):
            c.execute("INSERT INTO folders(path, added_at) VALUES ('/shelf', 'now')")
        c.close()
    return where


@pytest.fixture
def conn(library):
    c = backend.connect(library)
    yield c
    c.close()


def _books(c, n=5):
    with transaction(c):
        c.executemany("INSERT INTO books(id, title, path, file_hash, page_count, ingested_at) VALUES (?,?,?,?,?,?)",
                      [(f"b{i}", f"Book {i}", f"b{i}.pdf", f"h{i}", 1, store.now()) for i in range(n)])


def _summary(topic="Aneurysms") -> Summary:
    return Summary(topic=topic, topic_key=topic.lower(), number=0, text="t [S1]", sources=[], model=None,
                   created_at=store.now(), kind="extractive", params={}, claims=[], removed_citations=[])


# -- the contract, on both backends ---------------------------------------------------------------

def test_rows_in_lists_and_a_failed_transaction_changes_nothing(conn):
    _books(conn)
    rows = select_in(conn, "SELECT id FROM books WHERE id IN {in} ORDER BY id", ["b4", "b0", "zz"], size=2)
    assert sorted(r[0] for r in rows) == ["b0", "b4"]
    assert store.book_ids_present(conn, ["b1", "b2"]) and not store.book_ids_present(conn, ["b1", "zz"])
    with pytest.raises(CorpusError):
        with transaction(conn):
            store.set_meta(conn, "note", "written first")
            conn.execute("INSERT INTO books(id, title, path, file_hash, page_count, ingested_at) "
                         "VALUES ('b1', 't', 'p', 'h', 1, 'now')")  # b1 exists: the whole transaction goes
    assert store.get_meta(conn, "note") is None
    with pytest.raises(KeyboardInterrupt):
        with transaction(conn):
            store.set_meta(conn, "note", "interrupted")
            raise KeyboardInterrupt
    assert store.get_meta(conn, "note") is None
    store.set_meta(conn, "note", "kept")
    store.set_meta(conn, "note", "kept twice")
    assert store.get_meta(conn, "note") == "kept twice"


def test_summary_and_turn_numbers(conn):
    assert [summary_store.insert_summary(conn, _summary()) for _ in range(3)] == [1, 2, 3]
    assert summary_store.delete_summary(conn, "aneurysms", 3)
    assert summary_store.insert_summary(conn, _summary()) == 4  # a deleted number is never given again
    assert summary_store.numbers(conn, "aneurysms") == [1, 2, 4]
    assert [t["latest_number"] for t in summary_store.topics(conn)] == [4]
    turn = Turn(conversation_id=0, number=0, question="q1", standalone="q1", rewritten=False, rewrite={},
                answer="a", status="answered", sources=[], created_at=store.now())
    cid, n = turn_store.insert_turn(conn, turn, title="first")
    assert (cid, n) == (1, 1)
    turn.conversation_id = cid
    assert turn_store.insert_turn(conn, turn) == (1, 2)
    assert [t.number for t in turn_store.turns(conn, cid)] == [1, 2]
    assert turn_store.latest_id(conn) == cid
    assert turn_store.delete_conversation(conn, cid)
    assert turn_store.insert_turn(conn, Turn(conversation_id=0, number=0, question="q", standalone="q",
                                             rewritten=False, rewrite={}, answer="a", status="answered",
                                             sources=[], created_at=store.now()))[0] == 2  # ids not reused


def test_ingest_search_and_delete_a_book(library, embedder):
    from ragcli.ingest import pipeline as ingest
    from ragcli.search.options import SearchOptions
    from ragcli.search.pipeline import search

    c = backend.connect(library)
    try:
        result = ingest.ingest_file(c, SAMPLE_BOOK, embedder, book_id="primer")
        assert result.status == "added" and result.passages > 20
        again = ingest.ingest_file(c, SAMPLE_BOOK, embedder)
        assert again.status == "unchanged"
        [book] = store.list_books(c)
        assert (book.id, book.passages, book.figures) == ("primer", result.passages, result.figures)
        for mode in ("hybrid", "lexical", "dense"):
            hits = search(c, embedder if mode != "lexical" else None, "how is an aneurysm clipped",
                          SearchOptions(mode=mode, k=5)).hits
            assert len(hits) == 5 and all(h.book_id == "primer" for h in hits), mode
        assert store.term_in_corpus(c, "aneurysm") and not store.term_in_corpus(c, "zebrafish")
        assert store.document_frequency(c, "aneurysms") > 3
        ids = [h.passage_id for h in search(c, embedder, "clip", SearchOptions(k=3)).hits]
        assert set(vector_index.stored_vectors(c, "passage_vec", ids)) == set(ids)
        ingest.remove_book(c, "primer")
        assert store.list_books(c) == [] and store.counts(c)["passages"] == 0
        assert vector_index.dense_search(c, embedder.embed(["clip"])[0], 5) == []
    finally:
        c.close()


def test_a_library_of_a_newer_ragcli_is_refused(library):
    c = backend.connect(library)
    c.execute("INSERT INTO migrations(name, applied_at) VALUES ('m999_from_the_future', 'now')")
    c.close()
    with pytest.raises(CorpusError, match="newer ragcli"):
        backend.connect(library)


# -- PostgreSQL --------------------------------------------------------------------------------------

def test_dense_results_equal_sqlite_on_the_same_vectors(read_only_libraries, embedder):
    got = {}
    for name, where in read_only_libraries.items():  # each backend ingested the same two books
        c = backend.connect(where)
        q = embedder.embed(["what does an ACE inhibitor do in heart failure"])[0]
        got[name] = ([pid for pid, _ in vector_index.dense_search(c, q, 10)],
                     [pid for pid, _ in vector_index.dense_search(c, q, 10, ["primer"])])
        c.close()
    assert got["sqlite"] == got["postgres"]


def test_a_filtered_search_returns_k_hits(pg_library, monkeypatch):
    """Through the HNSW index (the exact path turned off): one book of 40 holds 60 of 2,400 vectors, and
    k=50 of them are asked for. Without the iterative scan the graph walk finds a few; with it, all 50."""
    import numpy as np

    from ragcli.store.postgres import search as pg_search
    from ragcli.store.postgres import vectors as pg_vectors
    from ragcli.store.postgres.connection import EF_SEARCH

    monkeypatch.setattr(pg_search, "EXACT_FILTERED", 0)
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(40, 384)).astype(np.float32)
    c = backend.connect(pg_library)
    with transaction(c):
        vector_index.create_tables(c, 384)
        for b in range(40):
            c.execute("INSERT INTO books(id, title, path, file_hash, page_count, ingested_at) VALUES (?,?,?,?,?,?)",
                      (f"b{b}", "t", "p", f"h{b}", 1, "now"))
            ids = [c.execute("INSERT INTO passages(book_id, ordinal, kind, section_path, heading, page_start,"
                             " page_end, text, text_hash, embed_hash) VALUES (?,?,?,?,?,?,?,?,?,?)",
                             (f"b{b}", i, "passage", "[]", "", 1, 1, "x", "h", "e")).lastrowid for i in range(60)]
            vecs = centres[b] + rng.normal(scale=0.6, size=(60, 384)).astype(np.float32)
            vector_index.add_vectors(c, f"b{b}", ids, vecs / np.linalg.norm(vecs, axis=1, keepdims=True))
    q = centres[0]  # near book b0: the filter keeps a far book's rows, which the graph walk reaches last
    far = "b17"
    # a table this small would be sorted without the graph: make the HNSW index the planner's only way
    c.execute("DROP INDEX passage_vec_book")
    c.execute("SET enable_seqscan = off")
    plan = " ".join(r[0] for r in c.execute("EXPLAIN SELECT id FROM passage_vec WHERE book_id = ANY(?) "
                                              f"ORDER BY {pg_vectors.hnsw_key(384)} <=> ?::halfvec(384) LIMIT 50",
                                              ([far], q)))
    assert pg_vectors.HNSW_INDEX in plan  # the search's ORDER BY is the halfvec graph's expression
    hits = vector_index.dense_search(c, q, 50, [far])
    assert len(hits) == 50 and len(set(h for h, _ in hits)) == 50
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    c.execute("SET hnsw.iterative_scan = off")  # what a plain filtered HNSW query gives: the test has teeth
    c.execute("SET hnsw.ef_search = 40")  # (pgvector's default: fewer candidates than this library's rows)
    assert len(pg_search._indexed(c, "passage_vec", q, 50, " AND book_id = ANY(?)", [[far]])) < 50
    assert len(vector_index.dense_search(c, q, 50, [far])) == 50  # short of k: scanned exactly instead
    c.execute("SET hnsw.iterative_scan = relaxed_order")
    c.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
    c.execute("SET enable_seqscan = on")
    monkeypatch.setattr(pg_search, "EXACT_FILTERED", 20_000)
    assert [h for h, _ in vector_index.dense_search(c, q, 50, [far])] == [h for h, _ in hits]
    c.close()


def test_m011_moves_an_existing_library_to_the_halfvec_graph(pg_library, monkeypatch):
    """A library written before m011 (its graph over the float32 vectors) is upgraded on open: the old
    graph dropped, the halfvec one built from the stored rows, the same top 10 found, the rows float32."""
    import numpy as np

    from ragcli.store import migrations
    from ragcli.store.postgres import schema as pg_schema
    from ragcli.store.postgres import vectors as pg_vectors

    old_steps = {k: v for k, v in pg_schema.STEPS.items() if k != "m011_halfvec_index"}
    rng = np.random.default_rng(3)
    vecs = rng.normal(size=(300, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    with monkeypatch.context() as m:
        m.setattr(migrations, "STEPS", migrations.STEPS[:-1])
        m.setattr(pg_schema, "STEPS", old_steps)
        c = backend.connect(pg_library)
        _books(c, 1)
        with transaction(c):
            ids = [c.execute("INSERT INTO passages(book_id, ordinal, kind, section_path, heading, page_start,"
                             " page_end, text, text_hash, embed_hash) VALUES (?,?,?,?,?,?,?,?,?,?)",
                             ("b0", i, "passage", "[]", "", 1, 1, "x", "h", "e")).lastrowid for i in range(300)]
            vector_index.create_tables(c, 384)
            c.execute(f"DROP INDEX {pg_vectors.HNSW_INDEX}")  # the graph m010's ragcli built
            c.execute("CREATE INDEX passage_vec_hnsw ON passage_vec USING hnsw (embedding vector_cosine_ops)")
            vector_index.add_vectors(c, "b0", ids, vecs)
        c.close()

    def indexes(conn):
        return {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = ?", (conn.schema,))}

    c = backend.connect(pg_library)  # opening applies m011
    assert [r[0] for r in c.execute("SELECT name FROM migrations ORDER BY rowid")][-1] == "m011_halfvec_index"
    assert pg_vectors.HNSW_INDEX in indexes(c) and "passage_vec_hnsw" not in indexes(c)
    assert pg_vectors.stored_dim(c) == 384
    q = vecs[7] + 0.1 * rng.normal(size=384).astype(np.float32)
    exact = np.argsort(-(vecs @ q))[:10]
    got = vector_index.dense_search(c, q, 10)
    assert [pid for pid, _ in got] == [ids[i] for i in exact]
    assert np.array_equal(vector_index.stored_vectors(c, "passage_vec", [ids[7]])[ids[7]], vecs[7])  # float32
    c.close()


def _password(address: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(address).password or ""


@pytest.mark.parametrize("case", ["wrong password", "unreachable host", "no pgvector"])
def test_connection_failures_are_one_line_without_the_password(case, pg_server, run_module, tmp_path):
    from urllib.parse import urlsplit

    parts = urlsplit(pg_server)
    secret = "s3cret-" + case.replace(" ", "-")
    if case == "wrong password":
        address = f"postgresql://{parts.username}:{secret}@{parts.hostname}:{parts.port}{parts.path}"
        expected = "refused the password"
    elif case == "unreachable host":
        with __import__("socket").socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # closed again: nothing listens there
        address = f"postgresql://{parts.username}:{secret}@127.0.0.1:{port}/ragcli"
        expected = "cannot reach"
    else:  # a database of this server where the vector extension cannot be found
        import psycopg

        import tempfile
        from pathlib import Path

        empty = Path(tempfile.mkdtemp(prefix="ragcli-no-extensions-"))  # readable by the server's user
        (empty / "extension").mkdir()
        empty.chmod(0o755)
        admin = psycopg.connect(pg_server, autocommit=True)
        name = "novector_" + os.urandom(3).hex()
        admin.execute(f"CREATE DATABASE {name}")
        admin.execute(f"ALTER DATABASE {name} SET extension_control_path = '{empty}'")
        admin.close()
        address = pg_server.rsplit("/", 1)[0] + "/" + name
        secret = _password(pg_server)
        expected = "no pgvector extension"
    res = run_module("books", "--db", address, timeout=120)
    assert res.returncode == 4, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0] and "Traceback" not in res.stderr
    assert secret not in res.stderr and secret not in res.stdout


def test_info_names_the_server_and_hides_the_password(pg_library, run_module):
    res = run_module("info", "--db", pg_library, timeout=120)
    assert res.returncode == 4 and "no ragcli library in schema" in res.stderr  # info never creates one
    backend.connect(pg_library).close()
    res = run_module("info", "--json", "--db", pg_library, timeout=120)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["backend"]["backend"] == "postgresql" and data["backend"]["extensions"]["vector"] >= "0.8"
    assert data["versions"]["postgresql"].startswith(("1", "2")) and data["versions"]["pgvector"]
    assert _password(pg_library) not in res.stdout and data["corpus"].startswith("postgresql://ragcli@")


def _cli_ok(cli):
    """The CLI in this process (the embedder loaded once, not once a command), exit 0 asserted."""
    def run(*args):
        res = cli(*args)
        assert res.exit_code == 0, (args, res.stderr, res.exception)
        return res

    return run


def test_cli_end_to_end_on_postgresql(pg_library, run_module, cli, tiny_gguf, tmp_path, monkeypatch):
    """`ragcli ingest` as a process of its own, then the other commands through the same CLI in this one."""
    from ragcli.models.grammars import forced_text_grammar

    monkeypatch.setenv("RAGCLI_DB", pg_library)  # the address from the environment, as a team sets it
    ingested = run_module("ingest", SAMPLE_BOOK, timeout=600)
    assert ingested.returncode == 0, ingested.stderr
    run = _cli_ok(cli)
    hits = json.loads(run("search", "how is an aneurysm clipped", "--json", "-k", "5").stdout)
    assert len(hits["hits"] if isinstance(hits, dict) else hits) == 5
    grammar = tmp_path / "g.gbnf"
    grammar.write_text(forced_text_grammar("An aneurysm is clipped across its neck [S1]."))
    model = ["--model", str(tiny_gguf), "--ctx", "2048", "--max-tokens", "48", "--grammar-file", str(grammar)]
    first = json.loads(run("ask", "how is an aneurysm clipped?", "-c", "--json", *model).stdout)
    assert first["model"]
    numbers = [json.loads(run("summary", "new", "Aneurysms", "--json", "--no-expand", "--keep-weak", "-k", "6", *model).stdout)["number"]
               for _ in range(2)]
    assert numbers == [1, 2]
    second = json.loads(run("ask", "and what are the risks of it?", "-c", "--json", *model).stdout)
    assert second["conversation_id"] == first["conversation_id"] and second["turn"] == 2
    shown = json.loads(run("conversations", "show", str(first["conversation_id"]), "--json").stdout)
    assert [t["turn"] for t in shown["turns"]] == [1, 2]
    back = tmp_path / "back.db"  # and the whole library back into a file
    copied = json.loads(run("copy", pg_library, back, "--json").stdout)
    assert copied["counts"]["summaries"] == 2 and copied["counts"]["conversation_turns"] == 2
    assert _password(pg_library) not in json.dumps(copied)
    for question in ("how is an aneurysm clipped", "what is vasospasm", "nimodipine"):
        on_pg = run("search", question, "--json", "-k", "8", "--mode", "dense").stdout
        on_file = run("search", question, "--json", "-k", "8", "--mode", "dense", "--db", back).stdout
        assert json.loads(on_pg) == json.loads(on_file)
    monkeypatch.setenv("RAGCLI_DB", str(back))
    assert json.loads(run("summary", "show", "Aneurysms", "--json").stdout)


def test_concurrent_writers_keep_every_book_whole_and_numbers_gapless(pg_library, embedder, tmp_path, monkeypatch):
    """4 ingest processes (one file twice: stored once) and 4 `summary new` of one topic, all at once."""
    from ragcli.ingest import pipeline as ingest

    c = backend.connect(pg_library)
    ingest.ingest_file(c, SAMPLE_BOOK, embedder, book_id="primer")  # something for the summaries to read
    monkeypatch.setenv("RAGCLI_DB", pg_library)
    env = dict(os.environ)
    cmd = [sys.executable, "-m", "ragcli"]
    files = [BOOKS["faa"], BOOKS["malawi"], BOOKS["heart"], BOOKS["heart"]]
    procs = [subprocess.Popen(cmd + ["ingest", str(f), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=ROOT, env=env) for f in files]
    procs += [subprocess.Popen(cmd + ["summary", "new", "aneurysm treatment", "--json", "--no-expand"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
              for _ in range(4)]
    outs = [p.communicate(timeout=900) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, [err for _, err in outs]
    statuses = sorted(_first(json.loads(out))["status"] for out, _ in outs[:4])
    assert statuses == ["added", "added", "added", "unchanged"]
    assert sorted(json.loads(out)["number"] for out, _ in outs[4:]) == [1, 2, 3, 4]
    books = {b.id: b for b in store.list_books(c)}
    assert len(books) == 4
    for b in books.values():  # whole: every passage and figure caption has its vector
        n_rows = c.execute("SELECT count(*) FROM passages WHERE book_id = ?", (b.id,)).fetchone()[0]
        n_vecs = c.execute("SELECT count(*) FROM passage_vec WHERE book_id = ?", (b.id,)).fetchone()[0]
        assert n_rows == n_vecs == b.passages + b.figures and b.passages > 0
    assert summary_store.numbers(c, "aneurysm treatment") == [1, 2, 3, 4]
    c.close()


def _first(data):
    """The one file's result of `ingest --json` (a list of results, or an object holding them)."""
    if isinstance(data, list):
        return data[0]
    return data["results"][0] if "results" in data else data


def _kill_9_at_its_write(proc, libpq: str, holder, statement: str, what: str) -> None:
    """Wait until `proc` (a ragcli process) waits on a lock at `statement` (a row `holder`'s open
    transaction holds), SIGKILL it there, release the holder, and wait until the server has ended the
    killed client's backend (it does when it sees the socket close)."""
    import psycopg

    watcher = psycopg.connect(libpq, autocommit=True)
    try:
        try:
            deadline, waiting = time.monotonic() + 300, None
            while time.monotonic() < deadline and proc.poll() is None:
                waiting = watcher.execute("SELECT pid FROM pg_stat_activity WHERE application_name = 'ragcli' "
                                          "AND wait_event_type = 'Lock' AND query ILIKE %s",
                                          (statement + "%",)).fetchone()
                if waiting:
                    break
                time.sleep(0.05)
            assert proc.poll() is None, f"{what} ended before it reached its last write"
            assert waiting, f"{what} never reached its last write"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            holder.rollback()
            holder.close()
        for _ in range(300):
            if not watcher.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", waiting).fetchone():
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"the server kept the killed {what}'s backend")
    finally:
        watcher.close()


def test_kill_9_during_the_write_of_a_book_leaves_nothing(pg_library, embedder, tmp_path, monkeypatch):
    """The ingester is stopped inside its write transaction: its last statement (the file's row) waits
    on a row this test holds, after the book, its passages and its vectors were written. kill -9 there."""
    import shutil

    import psycopg

    from ragcli.ingest import pipeline as ingest
    from ragcli.store.postgres.connection import split_address

    book = tmp_path / "book.pdf"
    shutil.copyfile(SAMPLE_BOOK, book)
    backend.connect(pg_library).close()  # the library exists
    libpq, schema = split_address(pg_library)
    holder = psycopg.connect(libpq)  # not autocommit: its transaction stays open
    holder.execute(f'SET search_path TO "{schema}", public')
    holder.execute("INSERT INTO books(id, title, path, file_hash, page_count, ingested_at) "
                   "VALUES ('holder', 't', 'p', 'h', 1, 'now')")
    holder.execute("INSERT INTO files(path, book_id, size, mtime_ns, file_hash) VALUES (%s, 'holder', 0, 0, 'h')",
                   (str(book.resolve()),))
    monkeypatch.setenv("RAGCLI_DB", pg_library)
    proc = subprocess.Popen([sys.executable, "-m", "ragcli", "ingest", str(book)], cwd=ROOT, env=dict(os.environ),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _kill_9_at_its_write(proc, libpq, holder, "INSERT INTO files", "the ingester")
    c = backend.connect(pg_library)
    assert store.list_books(c) == [] and store.counts(c)["passages"] == 0 and store.counts(c)["figures"] == 0
    assert not vector_index.has_vectors(c)  # even the vector tables, created in that transaction, are gone
    assert ingest.ingest_file(c, book, embedder).status == "added"  # and the next ingest runs whole
    c.close()


def test_the_address_comes_from_the_flag_the_environment_or_the_config_file(tmp_path, monkeypatch):
    from ragcli import config
    from ragcli.store.address import redact

    monkeypatch.delenv("RAGCLI_DB")
    cfg = tmp_path / "config.toml"
    cfg.write_text('db = "postgresql://team@db.example:5433/library?schema=lab"\n')
    monkeypatch.setenv("RAGCLI_CONFIG", str(cfg))
    assert config.db_path() == "postgresql://team@db.example:5433/library?schema=lab"
    monkeypatch.setenv("RAGCLI_DB", "postgres://me:pw@h/x")
    assert config.db_path() == "postgres://me:pw@h/x"
    assert config.db_path(str(tmp_path / "a.db")) == tmp_path / "a.db"
    assert redact("postgresql://me:pa:ss@h:5/x?sslmode=require&password=zz") == \
        "postgresql://me@h:5/x?sslmode=require&password=***"
    assert redact("postgresql://h/x") == "postgresql://h/x" and redact("/a/b.db") == "/a/b.db"


def test_serve_shares_a_pool_of_connections(read_only_libraries, embedder):
    """`serve` on a PostgreSQL library: one pooled connection for every thread, at most POOL_SIZE
    server connections, the same hits from each thread as from one."""
    from concurrent.futures import ThreadPoolExecutor

    from ragcli.serve.library import POOL_SIZE, Library

    lib = Library(read_only_libraries["postgres"], embedder)
    assert lib.conn() is lib.conn() and lib.conn()._pool is not None
    one = lib.search("how is an aneurysm clipped", k=5)
    with ThreadPoolExecutor(12) as pool:
        many = list(pool.map(lambda _: lib.search("how is an aneurysm clipped", k=5), range(24)))
    assert all(m == one for m in many) and len(one) == 5
    assert lib.conn()._pool.get_stats()["pool_size"] <= POOL_SIZE
    lib.conn().close()


# -- the source files kept in the library (m010_file_copies) --------------------------------------

def test_a_postgresql_library_keeps_the_file_and_shows_its_pages_without_it(pg_library, run_module, cli, tmp_path,
                                                                             monkeypatch):
    """ingest keeps a copy of the file by default; `open` and `show --image` use the local file while it
    has the same bytes, the library's copy when it is gone or changed; `copy` carries the copies."""
    import shutil

    from ragcli.store import files as file_store

    book = tmp_path / "shelf" / "primer.pdf"
    book.parent.mkdir()
    shutil.copyfile(SAMPLE_BOOK, book)
    monkeypatch.setenv("RAGCLI_DB", pg_library)
    monkeypatch.setenv("RAGCLI_VIEWER", "true {file} {page}")  # a viewer that opens nothing

    ingested = run_module("ingest", book, timeout=600)  # a process of its own; the rest in this one
    assert ingested.returncode == 0, ingested.stderr
    run = _cli_ok(cli)
    c = backend.connect(pg_library)
    [row] = c.execute("SELECT file_hash, name, size FROM file_copies").fetchall()
    assert row == (store.list_books(c)[0].file_hash, "primer.pdf", SAMPLE_BOOK.stat().st_size)
    assert file_store.copy_bytes(c, row[0])[1] == SAMPLE_BOOK.read_bytes()
    c.close()
    pid = json.loads(run("search", "how is an aneurysm clipped", "--json", "-k", "1").stdout)
    pid = (pid["hits"] if isinstance(pid, dict) else pid)[0]["passage_id"]
    assert json.loads(run("open", pid, "--json").stdout)["opened"] == str(book.resolve())  # the local file first
    book.write_bytes(b"%PDF-1.4 not the same bytes")  # changed on disk: its pages are not the book's any more
    opened = json.loads(run("open", pid, "--json").stdout)["opened"]
    assert opened.endswith(f"{row[0]}.pdf") and opened != str(book.resolve())
    book.unlink()
    png = tmp_path / "page.png"
    shown = json.loads(run("show", pid, "--image", png, "--json").stdout)
    assert png.stat().st_size > 1000 and shown["image"]["found"] >= 1
    back = tmp_path / "back.db"  # the copies travel with `copy`, and a file library uses them the same way
    copied = json.loads(run("copy", pg_library, back, "--json").stdout)
    assert copied["counts"]["file_copies"] == 1
    png.unlink()
    run("show", pid, "--image", png, "--db", back)
    assert png.stat().st_size > 1000


def test_no_keep_file_keeps_none_and_the_page_then_needs_the_file(pg_library, run_module, tmp_path, monkeypatch):
    import shutil

    book = tmp_path / "primer.pdf"
    shutil.copyfile(SAMPLE_BOOK, book)
    monkeypatch.setenv("RAGCLI_DB", pg_library)
    assert run_module("ingest", book, "--no-keep-file", timeout=600).returncode == 0
    c = backend.connect(pg_library)
    assert c.execute("SELECT count(*) FROM file_copies").fetchone()[0] == 0
    pid = c.execute("SELECT min(id) FROM passages").fetchone()[0]
    c.close()
    book.unlink()
    res = run_module("show", pid, "--image", tmp_path / "p.png")
    assert res.returncode == 3 and len(res.stderr.strip().splitlines()) == 1
    assert "keeps no copy" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize("stored_hash", ["../../outside", "/tmp/abs", "A" * 64, "0" * 63 + "/"])
def test_a_kept_copy_is_written_only_under_a_sha256_name(conn, tmp_path, monkeypatch, stored_hash):
    """A shared library is written by others: a kept copy whose hash is not 64 hex digits (or whose name
    carries a path or an odd suffix) never becomes part of a path in the cache folder."""
    from ragcli.store import files

    monkeypatch.setenv("RAGCLI_CACHE", str(tmp_path / "cache"))
    with transaction(conn):
        files.keep_copy(conn, stored_hash, "../../evil.pdf", b"%PDF-1.4 not a book")
    assert files._cached_copy(conn, stored_hash, "/shelf/book.pdf") is None
    assert not (tmp_path / "cache").exists() and not (tmp_path / "outside").exists()
    good = "ab" * 32
    with transaction(conn):
        files.keep_copy(conn, good, "book.pd\u00e9", b"%PDF-1.4 bytes")
    written = files._cached_copy(conn, good, "/shelf/book.pdf")
    assert written == str(tmp_path / "cache" / "files" / good)  # the name's suffix is not ASCII: none


def test_a_copy_is_shared_by_books_of_the_same_bytes_and_goes_with_the_last(library, embedder):
    """Both backends: SQLite keeps a copy only when asked (keep_file=True), PostgreSQL by default."""
    from ragcli.ingest import pipeline as ingest

    c = backend.connect(library)
    try:
        keep = None if backend.is_postgres(c) else True
        assert ingest.ingest_file(c, BOOKS["malawi"], embedder, book_id="one", keep_file=keep).status == "added"
        assert ingest.ingest_file(c, BOOKS["malawi"], embedder, book_id="two", keep_file=keep).status == "added"
        count = "SELECT count(*) FROM file_copies"
        assert c.execute(count).fetchone()[0] == 1
        ingest.remove_book(c, "one")
        assert c.execute(count).fetchone()[0] == 1
        ingest.remove_book(c, "two")
        assert c.execute(count).fetchone()[0] == 0
        if not backend.is_postgres(c):  # a file library keeps none by default
            ingest.ingest_file(c, BOOKS["malawi"], embedder, book_id="three")
            assert c.execute(count).fetchone()[0] == 0
    finally:
        c.close()


def test_a_file_over_the_size_limit_is_refused_in_one_line(pg_library, embedder, monkeypatch):
    """The limit is lowered for the test (the real one is 256 MB): the ingest is refused before anything
    is embedded or written, and names --no-keep-file."""
    from ragcli.errors import UsageError
    from ragcli.ingest import pipeline as ingest
    from ragcli.store import files as file_store

    monkeypatch.setattr(file_store, "KEEP_MAX_BYTES", 100_000)
    c = backend.connect(pg_library)
    try:
        with pytest.raises(UsageError, match="--no-keep-file") as refused:
            ingest.ingest_file(c, SAMPLE_BOOK, embedder, book_id="big")
        assert "\n" not in str(refused.value)
        assert store.list_books(c) == []
    finally:
        c.close()


def test_a_killed_copy_leaves_the_destination_empty_and_a_second_copy_runs_whole(pg_library, read_only_libraries):
    """`copy` is atomic: it writes the destination in one transaction. The copy is held inside that
    transaction (its insert into `folders` waits on a row this test holds, after the books, passages,
    vectors and file copies were written) and killed there with SIGKILL."""
    import psycopg

    from ragcli.store import copy as library_copy
    from ragcli.store.postgres.connection import split_address

    src = read_only_libraries["sqlite"]  # the primer's file kept, a folder registered: copy only reads it
    c = backend.connect(src, create=False)
    before = library_copy.table_counts(c)
    c.close()
    backend.connect(pg_library).close()  # the destination library exists, empty
    libpq, schema = split_address(pg_library)
    holder = psycopg.connect(libpq)  # not autocommit: its transaction stays open
    holder.execute(f'SET search_path TO "{schema}", public')
    holder.execute("INSERT INTO folders(path, added_at) VALUES ('/shelf', 'now')")
    proc = subprocess.Popen([sys.executable, "-m", "ragcli", "copy", str(src), pg_library], cwd=ROOT,
                            env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _kill_9_at_its_write(proc, libpq, holder, "INSERT INTO folders", "the copy")
    dst = backend.connect(pg_library)
    try:
        after_kill = library_copy.table_counts(dst)
        assert set(after_kill.values()) == {0}, after_kill
        source = backend.connect(src, create=False)
        library_copy.copy_library(source, dst)
        assert library_copy.table_counts(dst) == before and before["file_copies"] == 1
        source.close()
    finally:
        dst.close()
