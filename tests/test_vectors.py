"""The quantised dense search (sign-bit codes -> float-vs-bits -> float16 rescoring) against exact
search, on real SQLite + sqlite-vec with a small synthetic clustered corpus; book filter; deletion;
the code backfill; and cold start: the CLI's light commands import nothing heavy."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragcli.store import db
from ragcli.store import corpus as store
from ragcli.store import vectors as vector_index

ROOT = Path(__file__).resolve().parent.parent
DIM = 384
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BOOKS = ("alpha", "beta", "gamma")
PER_BOOK = 1500  # 4,500 rows: above vector_index.EXACT_BELOW, so dense_search takes the quantised path


def _unit(x):
    x = np.asarray(x, dtype=np.float32)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _clustered(rng, n: int, centres) -> np.ndarray:
    which = rng.integers(0, len(centres), n)
    noise = _unit(rng.standard_normal((n, DIM))) * rng.uniform(0.7, 1.4, (n, 1))
    return _unit(_unit(centres[which] + noise) + 0.35 * centres[0])


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = np.random.default_rng(3)
    centres = _unit(rng.standard_normal((40, DIM)))
    conn = db.connect(tmp_path_factory.mktemp("vec") / "corpus.db")
    vectors, next_id = {}, 1
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        store.ensure_vector_tables(conn, MODEL, DIM)
        for book in BOOKS:
            conn.execute("INSERT INTO books(id, title, path, file_hash, page_count, ingested_at) "
                         "VALUES (?,?,?,?,?,?)", (book, book.title(), f"{book}.pdf", book, 10, store.now()))
            ids = list(range(next_id, next_id + PER_BOOK))
            next_id += PER_BOOK
            conn.executemany(
                "INSERT INTO passages(id, book_id, ordinal, kind, section_path, heading, page_start, page_end,"
                " text, text_hash, embed_hash) VALUES (?,?,?,'passage','[]','',1,1,?,?,?)",
                [(i, book, i, f"passage {i}", f"t{i}", f"e{i}") for i in ids])
            mat = _clustered(rng, PER_BOOK, centres)
            vector_index.add_vectors(conn, book, ids, mat)
            vectors.update(zip(ids, mat))
    queries = _clustered(np.random.default_rng(4), 25, centres)
    return conn, vectors, queries


def _exact(vectors: dict, q, k: int, keep=None) -> list[int]:
    ids = [i for i in vectors if keep is None or i in keep]
    sims = np.stack([vectors[i] for i in ids]) @ q
    return [ids[j] for j in np.argsort(-sims)[:k]]


def test_codes_have_sqlite_vec_bit_layout(corpus):
    conn, vectors, _ = corpus
    v = vectors[7]
    ours = vector_index.sign_codes(v[None, :])[0].tobytes()
    theirs = conn.execute("SELECT vec_quantize_binary(?)", (v.tobytes(),)).fetchone()[0]
    assert ours == bytes(theirs)


def test_quantised_top_k_matches_exact(corpus):
    conn, vectors, queries = corpus
    assert vector_index._coded_rows(conn, "passage_vec", None) == len(vectors) > vector_index.EXACT_BELOW
    recalls = []
    for q in queries:
        got = vector_index.dense_search(conn, q, 10)
        assert len(got) == 10
        exact = _exact(vectors, q, 10)
        recalls.append(len(set(exact) & {r for r, _ in got}) / 10)
        for rowid, sim in got:  # similarities are (float16-)exact cosines, best first
            assert sim == pytest.approx(float(vectors[rowid] @ q), abs=2e-3)
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    assert np.mean(recalls) >= 0.95


def test_quantised_agrees_with_sqlite_vec_exact_scan(corpus):
    conn, _, queries = corpus
    for q in queries[:5]:
        exact = [r for r, _ in vector_index.exact_search(conn, q, 10)]
        got = [r for r, _ in vector_index.quantised_search(conn, q, 10)]
        assert len(set(exact) & set(got)) >= 8


def test_book_filter(corpus):
    conn, vectors, queries = corpus
    in_beta = {r for (r,) in conn.execute("SELECT id FROM passages WHERE book_id = 'beta'")}
    for q in queries[:8]:
        got = vector_index.dense_search(conn, q, 10, book_ids=["beta"])
        assert len(got) == 10 and {r for r, _ in got} <= in_beta
        assert len(set(_exact(vectors, q, 10, in_beta)) & {r for r, _ in got}) >= 9
        both = vector_index.dense_search(conn, q, 10, book_ids=["alpha", "gamma"])
        assert not {r for r, _ in both} & in_beta
    assert vector_index.dense_search(conn, queries[0], 10, book_ids=["nope"]) == []


def test_rebuilding_codes_gives_the_same_results(corpus):
    conn, _, queries = corpus
    before = [vector_index.dense_search(conn, q, 10) for q in queries[:5]]
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        vector_index.rebuild_vector_codes(conn, "passage_vec")
    after = [vector_index.dense_search(conn, q, 10) for q in queries[:5]]
    assert [[r for r, _ in x] for x in before] == [[r for r, _ in x] for x in after]


def test_deleting_a_book_removes_its_vectors(corpus, tmp_path):
    conn, vectors, queries = corpus
    gamma = {r for (r,) in conn.execute("SELECT id FROM passages WHERE book_id = 'gamma'")}
    assert gamma
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        store.delete_book(conn, "gamma")
    assert conn.execute("SELECT COUNT(*) FROM vector_codes WHERE book_id = 'gamma'").fetchone()[0] == 0
    left_half = conn.execute("SELECT COUNT(*) FROM passage_vec_half").fetchone()[0]
    left_vec = conn.execute("SELECT COUNT(*) FROM passage_vec").fetchone()[0]
    assert left_half == left_vec == 2 * PER_BOOK
    for q in queries[:5]:
        assert not {r for r, _ in vector_index.dense_search(conn, q, 50)} & gamma
        assert not {r for r, _ in vector_index.exact_search(conn, q, 50)} & gamma


def test_small_corpus_uses_exact_scan_and_still_finds(tmp_path):
    rng = np.random.default_rng(5)
    conn = db.connect(tmp_path / "small.db")
    mat = _unit(rng.standard_normal((30, DIM)))
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        store.ensure_vector_tables(conn, MODEL, DIM)
        conn.execute("INSERT INTO books(id, title, path, file_hash, page_count, ingested_at) "
                     "VALUES ('b','B','b.pdf','h',1,'now')")
        conn.executemany("INSERT INTO passages(id, book_id, ordinal, kind, section_path, heading, page_start,"
                         " page_end, text, text_hash, embed_hash) VALUES (?,'b',?,'passage','[]','',1,1,'x','t','e')",
                         [(i + 1, i) for i in range(30)])
        vector_index.add_vectors(conn, "b", list(range(1, 31)), mat)
    got = vector_index.dense_search(conn, mat[4], 3)
    assert got[0][0] == 5 and got[0][1] == pytest.approx(1.0, abs=1e-5)
    assert [r for r, _ in vector_index.quantised_search(conn, mat[4], 3)][0] == 5


HEAVY = ("torch", "sentence_transformers", "transformers", "llama_cpp", "pymupdf", "numpy", "onnxruntime", "openai")


def _modules_after(code: str) -> list[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_cli_loads_nothing_heavy():
    loaded = _modules_after(f"import ragcli.cli, sys, json; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    assert loaded == []


def test_help_and_books_load_nothing_heavy(tmp_path):
    for args in (["--help"], ["books", "--db", str(tmp_path / "c.db")]):
        code = (f"import sys, json, runpy\nsys.argv = ['ragcli'] + {args!r}\n"
                f"try:\n    runpy.run_module('ragcli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
                f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
        assert _modules_after(code) == [], args


def test_search_loads_no_model_runtime(corpus_db):
    """`ragcli search` embeds the query with onnxruntime (numpy too), never torch or llama.cpp."""
    code = (f"import sys, json, runpy\nsys.argv = ['ragcli', 'search', 'nimodipine', '--db', {str(corpus_db)!r}, '--json']\n"
            f"try:\n    runpy.run_module('ragcli', run_name='__main__')\nexcept SystemExit as e:\n"
            f"    assert not e.code, e.code\n"
            f"print(json.dumps([m for m in ('torch', 'sentence_transformers', 'transformers', 'llama_cpp', 'openai')"
            f" if m in sys.modules]))")
    assert _modules_after(code) == []
