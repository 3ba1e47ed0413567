"""`ragcli models pull` against a Hugging Face Hub on 127.0.0.1 (tests/hub_server.py, HF_ENDPOINT)
serving the tiny GGUF: a full pull into the Hugging Face cache, a transfer the server cuts and the
library resumes, a pull interrupted by Ctrl-C and resumed by the next one, wrong checksums refused, a
missing file and a refused connection each one line with its exit code (docs/exit-codes.md), and the
pulled model answering an ask that names no model.

Pulls run as real `python -m ragcli` processes: huggingface_hub reads HF_ENDPOINT and HF_HUB_OFFLINE
when it is imported, and the test session has it imported already (offline, by conftest)."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hub_server import COMMIT, FakeHub, write_catalogue
from tinymodel import write_tiny_gguf

REPO = "tiny-org/Tiny-GGUF"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tiny_bytes(tmp_path_factory) -> bytes:
    return write_tiny_gguf(tmp_path_factory.mktemp("hub") / "tiny.gguf", seed=5).read_bytes()


HUGE = '''
[[model]]
name = "huge"
title = "A model no machine holds"
repo = "tiny-org/Huge-GGUF"
file = "huge.gguf"
revision = "main"
size_gb = 900.0
memory_gb = 1000000.0
licence = "MIT"
measured = "not measured here"
'''


@pytest.fixture
def hub_env(tmp_path, tiny_bytes, monkeypatch):
    """(env for a ragcli process, the HF cache dir): HF_HOME and the catalogue in tmp_path."""
    sha = hashlib.sha256(tiny_bytes).hexdigest()
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("RAGCLI_CATALOG", str(write_catalogue(tmp_path / "catalog.toml", sha, extra=HUGE)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("TRANSFORMERS_OFFLINE", None)
    return env, tmp_path / "hf" / "hub"


def _pull(env, url, *args, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragcli", "models", "pull", *args], capture_output=True, text=True,
                          env=dict(env, HF_ENDPOINT=url), cwd=ROOT, timeout=timeout)


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".locks" not in p.parts) \
        if root.exists() else []


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def test_pull_a_catalogue_model_then_ask_without_model(hub_env, tiny_bytes, cli, corpus_db):
    env, cache = hub_env
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        res = _pull(env, hub.url, "tiny", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    snapshot = cache / f"models--tiny-org--Tiny-GGUF/snapshots/{COMMIT}/tiny.gguf"
    assert out["path"] == str(snapshot) and out["checked_against"] == "catalogue" and out["default"] is True
    assert hashlib.sha256(snapshot.read_bytes()).hexdigest() == out["sha256"] == hashlib.sha256(tiny_bytes).hexdigest()
    assert (cache / "models--tiny-org--Tiny-GGUF/refs/main").read_text() == COMMIT
    config = Path(out["config"]).read_text()
    assert config.startswith('default = "tiny"') and out["name"] == "tiny"  # the default by its name
    # `models` finds it in the Hugging Face cache and marks it as the one ask uses
    listed = json.loads(cli("models", "--json").stdout)
    found = [f for f in listed["files"] if f["source"] == "huggingface"]
    assert [(f["name"], f["selected"]) for f in found] == [(f"{REPO}/tiny.gguf", True)]
    # the pulled model answers an ask that names none
    ask = cli("ask", "what is a craniotomy?", "--json", "--no-expand", "--max-tokens", "8")
    assert ask.exit_code == 0, ask.output
    answer = json.loads(ask.stdout)
    assert answer["model"]["path"] == str(snapshot) and answer["status"] != "extractive"
    # a second pull finds it in the cache and leaves the configured default alone
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        again = _pull(env, hub.url, "tiny", "--json")
    assert json.loads(again.stdout)["already"] is True and json.loads(again.stdout)["default"] is False
    assert not [r for r in hub.requests if r[0] == "GET" and "/resolve/" in r[1]]


def test_a_transfer_cut_halfway_is_resumed_with_the_same_sha256(hub_env, tiny_bytes):
    env, cache = hub_env
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        hub.cut_at = len(tiny_bytes) // 2
        res = _pull(env, hub.url, f"{REPO}/tiny.gguf", "--json")
    assert res.returncode == 0, res.stderr
    ranges = [r[2] for r in hub.requests if r[0] == "GET" and "/resolve/" in r[1]]
    assert ranges[0] is None and ranges[1].startswith("bytes=") and int(ranges[1][6:-1]) > 0, ranges
    out = json.loads(res.stdout)
    assert out["checked_against"] == "hub" and out["sha256"] == hashlib.sha256(tiny_bytes).hexdigest()
    assert Path(out["path"]).read_bytes() == tiny_bytes


def test_ctrl_c_keeps_the_partial_file_and_the_next_pull_resumes_it(hub_env, tiny_bytes, cli):
    env, cache = hub_env
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        hub.stall_at = len(tiny_bytes) // 2
        # Ctrl-C as a shell's foreground program gets it: pytest started in the background (`... &`) ignores
        # SIGINT, and an ignored signal stays ignored across exec (Python then installs no KeyboardInterrupt)
        proc = subprocess.Popen([sys.executable, "-m", "ragcli", "models", "pull", "tiny"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=dict(env, HF_ENDPOINT=hub.url), cwd=ROOT,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert hub.stalled.wait(60), "the pull never started"
        partial = cache / "models--tiny-org--Tiny-GGUF" / "blobs" / (hashlib.sha256(tiny_bytes).hexdigest() + ".incomplete")
        for _ in range(600):  # the bytes sent before the stall reach the file (up to 60 s on a loaded machine)
            if partial.exists() and partial.stat().st_size >= 64 * 1024:
                break
            import time
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
        hub.release.set()
    assert proc.returncode == 130, stderr
    assert "run the same `ragcli models pull` again to resume it" in stderr.splitlines()[-1]
    kept = partial.stat().st_size
    assert 0 < kept <= len(tiny_bytes) // 2
    assert not (cache / "models--tiny-org--Tiny-GGUF" / "snapshots").exists()  # no half file where models looks
    assert not [f for f in json.loads(cli("models", "--json").stdout)["files"] if f["source"] == "huggingface"]
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        res = _pull(env, hub.url, "tiny", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["resumed_from"] == kept and out["downloaded"] == len(tiny_bytes) - kept
    assert [r[2] for r in hub.requests if r[0] == "GET" and "/resolve/" in r[1]] == [f"bytes={kept}-"]
    assert Path(out["path"]).read_bytes() == tiny_bytes and not partial.exists()


def test_a_wrong_sha256_is_refused_and_nothing_is_left(hub_env, tiny_bytes, tmp_path):
    env, cache = hub_env
    # the catalogue's checksum is not the file's: the Hub says so before any byte is sent
    wrong = "0" * 64
    env_wrong = dict(env, RAGCLI_CATALOG=str(write_catalogue(tmp_path / "wrong.toml", wrong)))
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        res = _pull(env_wrong, hub.url, "tiny")
    assert res.returncode == 7 and "the catalogue says" in _one_line(res.stderr)
    assert not [r for r in hub.requests if r[0] == "GET" and "/resolve/" in r[1]]
    # a server whose sha256 is not the bytes it sends: downloaded, checked, removed
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        hub.hub_sha = "f" * 64
        res = _pull(env, hub.url, f"{REPO}/tiny.gguf", "--json")  # --json: no progress lines
    line = _one_line(res.stderr)
    assert res.returncode == 7 and f"not the one {hub.url} reported" in line and "the file was removed" in line
    assert _files(cache) == ["CACHEDIR.TAG"] or _files(cache) == []


def test_missing_file_refused_connection_offline_and_no_disk_space_are_one_line(hub_env, tiny_bytes):
    env, cache = hub_env
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        missing = _pull(env, hub.url, f"{REPO}/nothing-here.gguf")
        nothing = _pull(env, hub.url, "no-such-catalogue-name")
        offline = _pull(dict(env, HF_HUB_OFFLINE="1"), hub.url, "tiny")
        hub.hub_size = 10**18  # an exabyte: no disk here has it free
        full = _pull(env, hub.url, "tiny")
    assert full.returncode == 7 and "not enough free disk space" in _one_line(full.stderr)
    assert not [r for r in hub.requests if r[0] == "GET" and "/resolve/" in r[1]]
    assert missing.returncode == 5 and "HTTP 404" in _one_line(missing.stderr)
    assert nothing.returncode == 5 and "no catalogue model" in _one_line(nothing.stderr)
    assert offline.returncode == 7 and "offline" in _one_line(offline.stderr)
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    refused = _pull(env, closed, "tiny")
    assert refused.returncode == 7 and f"cannot reach {closed}" in _one_line(refused.stderr)
    assert _files(cache) == []


def test_catalogue_listing_marks_what_fits_and_yes_takes_the_largest_that_fits(hub_env, tiny_bytes):
    env, cache = hub_env
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        listing = _pull(env, hub.url, "--json")
        data = json.loads(listing.stdout)
        assert [(m["name"], m["fits"]) for m in data["models"]] == [("tiny", True), ("huge", False)]
        assert data["physical_cores"] >= 1 and data["memory_total"] > 0
        text = _pull(env, hub.url)
        assert "fits" in text.stdout and "too big" in text.stdout
        assert "not measured here" in _pull(env, hub.url, "--verbose").stdout
        chosen = _pull(env, hub.url, "--yes")
    assert chosen.returncode == 0, chosen.stderr
    assert "pulling tiny" in chosen.stderr and "pulled tiny.gguf" in chosen.stderr


def test_a_repository_without_a_file_name_pulls_its_gguf(hub_env, tiny_bytes):
    env, cache = hub_env
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        res = _pull(env, hub.url, REPO, "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["file"] == "tiny.gguf"


def test_the_shipped_catalogue_is_complete_and_never_guesses(monkeypatch):
    """Every entry names its source; a sha256 is 64 hex digits with where it was read; the models this
    project ran carry their measured CERT figures, the others say they were not measured here."""
    from ragcli.models import catalogue

    monkeypatch.delenv("RAGCLI_CATALOG", raising=False)
    entries = {e.name: e for e in catalogue.entries()}
    assert {"qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "qwen2.5-1.5b", "qwen2.5-3b", "qwen2.5-7b",
            "llama3.2-3b"} <= set(entries)
    for e in entries.values():
        assert e.sha256 is None or e.sha256_source, e.name
        assert e.memory_gb > e.size_gb > 0 and e.licence and e.file.endswith(".gguf")
    assert "correct 8/28" in entries["qwen2.5-coder-1.5b"].measured
    assert "correct 5/28" in entries["qwen2.5-coder-0.5b"].measured
    assert entries["qwen2.5-coder-1.5b"].sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert entries["qwen2.5-7b"].measured == "not measured here"
