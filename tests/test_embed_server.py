"""Embeddings from an OpenAI-compatible server (issue 29): llama-cpp-python's real server on loopback
serving an embedding GGUF the tests write, and a tiny server that answers 429 / 5xx for a while."""
from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from conftest_http import start_llama_cpp_server
from ragcli.errors import ModelError

TEXTS = ["Apply firm pressure to the wound.", "The heart pumps blood through the arteries.",
         "Elevate the injured limb above the heart.", "a", "Splint the fracture before moving the casualty.",
         "Nimodipine is given after subarachnoid haemorrhage."] * 3


@pytest.fixture(scope="session")
def embed_gguf(tmp_path_factory) -> Path:
    from tinyembed import write_embed_gguf

    return write_embed_gguf(tmp_path_factory.mktemp("embed") / "tiny-embed.gguf")


def _serve(model: Path, log: Path):
    return start_llama_cpp_server(model, log, "--embedding", "true", "--n_batch", "2048", "--n_ubatch", "2048")


@pytest.fixture(scope="session")
def embed_server(embed_gguf, tmp_path_factory):
    proc, url = _serve(embed_gguf, tmp_path_factory.mktemp("esrv") / "server.log")
    yield url
    proc.terminate()
    proc.wait(10)


def test_server_vectors_equal_the_same_model_in_process(embed_server, embed_gguf):
    from ragcli.models.embed_factory import LlamaCppEmbedder
    from ragcli.models.embed_http import HttpEmbedder

    remote = HttpEmbedder(embed_server, batch_size=4, parallel=3)
    assert remote.name == "tiny" and remote.dim == 64  # the only model listed; dimension from a reply
    local = LlamaCppEmbedder(embed_gguf)
    a, b = remote.embed(TEXTS), local.embed(TEXTS)
    assert a.shape == b.shape == (len(TEXTS), 64)
    cosines = np.einsum("ij,ij->i", a, b)
    assert cosines.min() >= 0.999, cosines
    assert remote.stats["requests"] >= 5  # batched: 18 texts in batches of 4 (+ the probe)
    assert not np.allclose(a[0], a[1])  # different texts, different vectors, in input order


def _write_doc(path: Path, paragraphs: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    # words of one to three tokens in the tiny model's vocabulary: quick to embed
    words = "the a on in he her one tea ten net tent hen inn wound splint".split()
    paras = [" ".join(rng.choice(words, 40)) + f" number {i}." for i in range(paragraphs)]
    path.write_text("\n\n".join(paras), encoding="utf-8")
    return path


def test_corpus_records_the_server_and_queries_use_it(embed_gguf, tmp_path, cli):
    proc, url = _serve(embed_gguf, tmp_path / "server.log")
    db = tmp_path / "c.db"
    doc = _write_doc(tmp_path / "notes.txt", 30)
    try:
        res = cli("ingest", doc, "--db", db, "--embed-model", url, "--json")
        assert res.exit_code == 0, res.stderr
        info = json.loads(cli("info", "--db", db, "--json").stdout)
        assert info["embedding_model"] == "tiny" and info["embedding_dim"] == 64
        conn = sqlite3.connect(db)
        source = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'embedding_source'").fetchone()[0])
        conn.close()
        assert source == {"backend": "openai-http", "model": "tiny", "url": url}
        hits = cli("search", "splint fracture", "--db", db, "--json", "--mode", "dense")
        assert hits.exit_code == 0 and json.loads(hits.stdout), hits.stderr
        other = cli("search", "splint", "--db", db, "--embed-model", "all-MiniLM-L6-v2")
        assert other.exit_code == 4 and "tiny" in other.stderr  # another model is refused
    finally:
        proc.kill()
        proc.wait(10)
    gone = cli("search", "splint fracture", "--db", db, "--mode", "dense")
    assert gone.exit_code == 6, gone.stderr
    lines = gone.stderr.strip().splitlines()
    assert len(lines) == 1 and "tiny" in lines[0] and url.split("//")[1].split("/")[0] in lines[0]
    assert "Traceback" not in gone.stderr


def _rows(db: Path, sql: str) -> int:
    if not db.exists():
        return 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def test_server_killed_mid_ingest_leaves_the_corpus_and_the_next_run_resumes(embed_gguf, tmp_path, fingerprint):
    import os

    db = tmp_path / "c.db"
    first = _write_doc(tmp_path / "first.txt", 5, seed=1)
    big = _write_doc(tmp_path / "big.txt", 800, seed=2)  # about 400 passages: two staged chunks of 256
    env = {**os.environ, "RAGCLI_DB": str(db)}
    proc, url = _serve(embed_gguf, tmp_path / "server1.log")
    try:
        done = subprocess.run([sys.executable, "-m", "ragcli", "ingest", str(first), "--embed-model", url],
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        books = _rows(db, "SELECT count(*) FROM books")
        before = fingerprint(db)
        stage = Path(str(db) + "-embedstage")
        ingest = subprocess.Popen([sys.executable, "-m", "ragcli", "ingest", str(big), "--json"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 240
        while _rows(stage, "SELECT count(*) FROM stage") < 256 and time.time() < deadline \
                and ingest.poll() is None:
            time.sleep(0.05)
        proc.kill()  # the server dies mid-ingest
        proc.wait(10)
        out, err = ingest.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert ingest.returncode == 6, err  # a model error, one line, no traceback
    assert "Traceback" not in err and "cannot reach the embedding server" in err
    staged = _rows(stage, "SELECT count(*) FROM stage")
    assert staged >= 256
    assert fingerprint(db) == before  # the corpus is as it was
    assert _rows(db, "SELECT count(*) FROM books") == books
    # a restarted server (another port): the corpus's profile-less URL moved, so name the new one
    proc, url2 = _serve(embed_gguf, tmp_path / "server2.log")
    try:
        again = subprocess.run([sys.executable, "-m", "ragcli", "ingest", str(big), "--embed-model", url2, "--json"],
                               env=env, capture_output=True, text=True, timeout=300)
    finally:
        proc.kill()
        proc.wait(10)
    assert again.returncode == 0, again.stderr
    result = json.loads(again.stdout)[0]
    assert result["status"] == "added"
    assert result["reused"] >= staged  # what the killed run embedded is not embedded again
    assert result["embedded"] + result["reused"] >= result["passages"] and result["embedded"] < result["passages"]
    assert not stage.exists()  # every staged vector is in the corpus now: the stage is gone


class StormServer:
    """An /v1/embeddings server that answers 429 (or 503) to the first `storm` requests, then
    vectors made from each text's hash (so order and content are checkable)."""

    def __init__(self, storm: int, status: int = 429, retry_after: str = "0.05", dim: int = 8):
        self.storm, self.status, self.retry_after, self.dim = storm, status, retry_after, dim
        self.calls, self.lock = 0, threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _json(self, code, data, headers=()):
                body = json.dumps(data).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self._json(200, {"object": "list", "data": [{"id": "storm-embed", "object": "model"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with outer.lock:
                    outer.calls += 1
                    stormy = outer.calls <= outer.storm
                if stormy:
                    headers = [("Retry-After", outer.retry_after)] if outer.retry_after else []
                    return self._json(outer.status, {"error": {"message": "slow down"}}, headers)
                if body["input"] == ["bad"]:
                    return self._json(400, {"error": {"message": "input is too long"}})
                data = [{"index": i, "embedding": vector(t, outer.dim).tolist()} for i, t in enumerate(body["input"])]
                self._json(200, {"object": "list", "data": data[::-1], "model": body["model"]})  # any order

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def vector(text: str, dim: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dim)
    return v / np.linalg.norm(v)


@pytest.mark.parametrize("status,retry_after", [(429, "0.05"), (503, None)])
def test_a_storm_of_429_or_503_is_ridden_out(status, retry_after):
    from ragcli.models.embed_http import HttpEmbedder

    server = StormServer(storm=12, status=status, retry_after=retry_after)
    try:
        texts = [f"passage {i}" for i in range(300)]
        emb = HttpEmbedder(server.url, batch_size=16, parallel=4, retry_seconds=60)
        out = emb.embed(texts)
        assert emb.name == "storm-embed" and emb.dim == 8
        expected = np.stack([vector(t, 8) for t in texts])
        assert np.allclose(out, expected, atol=1e-6)  # every vector, in input order
        assert emb.stats["retries"] >= 12
    finally:
        server.close()


def test_a_refused_request_and_a_storm_that_does_not_end_fail_in_one_line():
    from ragcli.models.embed_http import HttpEmbedder

    server = StormServer(storm=0)
    try:
        with pytest.raises(ModelError, match="HTTP 400: input is too long"):
            HttpEmbedder(server.url).embed(["bad"])
        server.storm = 10 ** 6
        with pytest.raises(ModelError, match="kept answering HTTP 429.*gave up") as exc:
            HttpEmbedder(server.url, retry_seconds=0.5).embed(["x"])
        assert "\n" not in str(exc.value)
    finally:
        server.close()


def test_an_unreachable_server_is_one_line_and_no_fallback(tmp_path, cli):
    from conftest_http import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    doc = _write_doc(tmp_path / "notes.txt", 3)
    res = cli("ingest", doc, "--embed-model", url)
    assert res.exit_code == 6 and "cannot reach the embedding server" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_key_from_the_environment_never_in_errors(monkeypatch):
    from ragcli.models.embed_factory import connect

    server = StormServer(storm=10 ** 6, status=500, retry_after=None)
    monkeypatch.setenv("EMBED_KEY", "sk-secret-123")
    try:
        emb = connect(server.url, api_key_env="EMBED_KEY", retry_seconds=0.3)
        assert emb._http.headers["Authorization"] == "Bearer sk-secret-123"
        with pytest.raises(ModelError) as exc:
            emb.embed(["x"])
        assert "sk-secret" not in str(exc.value) and "sk-secret" not in json.dumps(emb.source)
    finally:
        server.close()


def test_a_config_profile_names_the_server(tmp_path, monkeypatch, cli):
    server = StormServer(storm=0, dim=16)
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[models.embedder]\nurl = "{server.url}"\nname = "storm-embed"\nbatch_size = 8\n'
                   f'parallel = 2\n', encoding="utf-8")
    monkeypatch.setenv("RAGCLI_CONFIG", str(cfg))
    doc = _write_doc(tmp_path / "notes.txt", 12)
    try:
        res = cli("ingest", doc, "--embed-model", "embedder", "--json")
        assert res.exit_code == 0, res.stderr
        conn = sqlite3.connect(tmp_path / "corpus.db")
        source = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'embedding_source'").fetchone()[0])
        conn.close()
        assert source["profile"] == "embedder" and source["model"] == "storm-embed"
        hits = cli("search", "wound", "--mode", "dense", "--json")  # the profile, from the corpus
        assert hits.exit_code == 0, hits.stderr
    finally:
        server.close()
