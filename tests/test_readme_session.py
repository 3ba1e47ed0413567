"""The README's "A first session", run as written on a fresh machine: an empty home folder, the
commands read from the README itself, each a real `python -m ragcli` process that must exit 0.

The one thing put in place of the real world: the model the README names (`qwen2.5-coder-1.5b`) is
the tiny GGUF, served by a Hugging Face Hub on 127.0.0.1 (tests/hub_server.py) under that catalogue
name, and its words forced by a grammar in the config file ([model] grammar_file), so its answer and
its summary are sentences of the book (the tiny model's own words would be gibberish, never saved
as a summary). Then `--model NAME` and `models default NAME` after a pull from a plain web server."""
from __future__ import annotations

import hashlib
import http.server
import json
import os
import re
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from hub_server import FakeHub, write_catalogue
from tinymodel import write_tiny_gguf

ROOT = Path(__file__).resolve().parents[1]
FORCED = ("A craniotomy is the temporary removal of a bone flap from the skull to expose the brain [S1]. "
          "The flap is replaced at the end of the operation [S1].")


def first_session() -> list[str]:
    """The command lines of the README's "A first session" block, comments removed."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## A first session"):]
    block = section[section.index("```bash\n") + 8:]
    block = block[:block.index("```")]
    lines = []
    for line in block.splitlines():
        command = re.split(r"\s{2,}#", line)[0].strip()
        if command:
            lines.append(command)
    return lines


def _env(tmp_path: Path, **more) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RAGCLI_DB", "RAGCLI_CONFIG", "RAGCLI_MODEL", "XDG_", "HF_", "TRANSFORMERS_OFFLINE"))}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env.update(HOME=str(home), PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               COLUMNS="80", **more)
    return env


def _run(env, line: str, timeout=600) -> subprocess.CompletedProcess:
    args = shlex.split(line)
    assert args[0] == "ragcli", line
    return subprocess.run([sys.executable, "-m", "ragcli", *args[1:]], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=timeout)


def test_the_readmes_first_session_runs_as_written(tmp_path):
    from ragcli.models.grammars import forced_text_grammar

    lines = first_session()
    assert lines[0].startswith("ragcli ingest corpus/") and len(lines) >= 10  # the premise: the block was read
    pulled = [line.split()[-1] for line in lines if line.startswith("ragcli models pull ")]
    assert len(pulled) == 1, lines  # the README names one model to pull
    name = pulled[0]
    tiny = write_tiny_gguf(tmp_path / "tiny.gguf", seed=7).read_bytes()
    grammar = tmp_path / "forced.gbnf"
    grammar.write_text(forced_text_grammar(FORCED))
    env = _env(tmp_path, RAGCLI_CATALOG=str(write_catalogue(tmp_path / "catalog.toml", hashlib.sha256(tiny).hexdigest(), name,
                                                            f"the tiny test model in place of {name}")))
    config = Path(env["HOME"]) / ".config" / "ragcli" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[model]\ngrammar_file = {json.dumps(str(grammar))}\nn_ctx = 2048\n')
    outputs = {}
    with FakeHub({"tiny.gguf": tiny}) as hub:
        env["HF_ENDPOINT"] = hub.url
        for line in lines:
            res = _run(env, line)
            assert res.returncode == 0, f"{line}\nexit {res.returncode}\n{res.stderr}"
            outputs[line] = res
    # what the steps did, read from their output
    assert "default" in outputs[f"ragcli models pull {name}"].stderr
    assert config.read_text().startswith(f'default = "{name}"')
    answered = [json.loads(r.stdout) for line, r in outputs.items() if "--json" in line and line.startswith("ragcli ask")]
    assert answered and answered[0]["status"] == "answered" and "bone flap" in answered[0]["answer"]
    shown = [r.stdout for line, r in outputs.items() if line.startswith("ragcli summary show")]
    assert shown and "bone flap" in shown[0]
    assert name in outputs["ragcli models"].stdout


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _download_takes_any_url() -> bool:
    """Does `models pull URL` take a plain web server's URL (issue 47's download rewrite)?"""
    from ragcli.errors import RagcliError
    from ragcli.models import catalogue

    try:
        catalogue.target("http://127.0.0.1:9/files/model.gguf")
    except RagcliError:
        return False
    return True


@pytest.mark.skipif(not _download_takes_any_url(), reason="`models pull URL` from the URL's own host is not in "
                    "this build yet (issue 47, the download rewrite)")
def test_a_model_pulled_from_a_plain_web_server_is_used_and_made_default_by_name(tmp_path, corpus_db):
    served = tmp_path / "served"
    served.mkdir()
    tiny = write_tiny_gguf(served / "tiny-chat.gguf", seed=8)
    handler = lambda *a, **k: _Quiet(*a, directory=str(served), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = _env(tmp_path, RAGCLI_DB=str(corpus_db))
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/tiny-chat.gguf"
        sha = hashlib.sha256(tiny.read_bytes()).hexdigest()
        first = _run(env, f"ragcli models pull {url} --sha256 {sha} --json")
        assert first.returncode == 0, first.stderr
    finally:
        server.shutdown()
    made = json.loads(first.stdout)
    assert made["name"] == "tiny-chat" and made["default"] is True
    # by its name, with no path anywhere
    asked = _run(env, 'ragcli ask "what is a craniotomy?" --model tiny-chat --no-expand --max-tokens 8 --ctx 2048 --json')
    assert asked.returncode == 0, asked.stderr
    assert json.loads(asked.stdout)["model"]["path"].endswith("tiny-chat.gguf")
    other = write_tiny_gguf(tmp_path / "other.gguf", seed=9)
    assert _run(env, f"ragcli models add {other} --name other").returncode == 0
    assert _run(env, "ragcli models default other").returncode == 0
    assert _run(env, "ragcli models default tiny-chat").returncode == 0
    listed = json.loads(_run(env, "ragcli models --json").stdout)
    assert listed["selected"]["path"].endswith("tiny-chat.gguf")


def test_a_model_pulled_by_url_is_used_and_made_default_by_its_name(tmp_path, corpus_db):
    """A Hugging Face file URL on 127.0.0.1 (the Hub's own form; the hub server is also HF_ENDPOINT):
    the pulled file is `tiny-url` by name, for --model and for models default, with a default already set."""
    tiny = write_tiny_gguf(tmp_path / "tiny-url.gguf", seed=10).read_bytes()
    env = _env(tmp_path, RAGCLI_DB=str(corpus_db), RAGCLI_CATALOG=str(write_catalogue(tmp_path / "c.toml", "0" * 64, "x", "the tiny test model in place of x")))
    other = write_tiny_gguf(tmp_path / "mine.gguf", seed=11)
    assert _run(env, f"ragcli models add {other} --name mine").returncode == 0  # the default: mine
    with FakeHub({"tiny-url.gguf": tiny}) as hub:
        env["HF_ENDPOINT"] = hub.url
        pulled = _run(env, f"ragcli models pull {hub.url}/tiny-org/Tiny-GGUF/resolve/main/tiny-url.gguf")
    assert pulled.returncode == 0, pulled.stderr
    # a default was set: the pull says it stays, and how to use and choose this one by name
    assert "the default model stays mine" in pulled.stderr and "models default tiny-url" in pulled.stderr
    asked = _run(env, 'ragcli ask "what is a craniotomy?" --model tiny-url --no-expand --max-tokens 8 --json')
    assert asked.returncode == 0, asked.stderr
    assert json.loads(asked.stdout)["model"]["path"].endswith("tiny-url.gguf")
    made = _run(env, "ragcli models default tiny-url --json")
    assert made.returncode == 0 and json.loads(made.stdout)["default"] == "tiny-url"
    listed = json.loads(_run(env, "ragcli models --json").stdout)
    assert listed["selected"]["path"].endswith("tiny-url.gguf")
    assert [f["short_name"] for f in listed["files"] if f["selected"]] == ["tiny-url"]
    unknown = _run(env, "ragcli models default no-such-model")
    assert unknown.returncode == 6 and len(unknown.stderr.strip().splitlines()) == 1
    assert _run(env, "ragcli models --json").returncode == 0
    assert 'default = "tiny-url"' in (Path(env["HOME"]) / ".config/ragcli/config.toml").read_text()
