"""`ragcli models`: GGUF files laid out as Ollama, LM Studio, the Hugging Face cache and ~/models
keep them (a temporary HOME), profiles, the model `ask` would use; `info` names it too."""
from __future__ import annotations

import json
import os
import shutil

from conftest_http import FaultServer
from tinymodel import write_tiny_gguf


def _home(tmp_path, monkeypatch):
    home = tmp_path / "fakehome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("OLLAMA_MODELS", "HF_HOME", "HF_HUB_CACHE"):
        monkeypatch.delenv(var, raising=False)
    return home


def _ollama_layout(home, gguf) -> None:
    """manifests/registry.ollama.ai/library/<model>/<tag> -> blobs/sha256-<hex>, as Ollama stores them."""
    root = home / ".ollama" / "models"
    digest = "a" * 64
    (root / "blobs").mkdir(parents=True)
    shutil.copy(gguf, root / "blobs" / f"sha256-{digest}")
    (root / "blobs" / f"sha256-{'b' * 64}").write_text("{{ .Prompt }}")  # the template layer
    manifest = root / "manifests" / "registry.ollama.ai" / "library" / "tinyllm" / "latest"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": [
        {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}", "size": 1},
        {"mediaType": "application/vnd.ollama.image.template", "digest": f"sha256:{'b' * 64}", "size": 1}]}))


def test_models_finds_ollama_lmstudio_hf_and_home_models(tmp_path, monkeypatch, cli, tiny_gguf):
    home = _home(tmp_path, monkeypatch)
    _ollama_layout(home, tiny_gguf)
    lms = home / ".lmstudio" / "models" / "someone" / "Tiny-GGUF"
    lms.mkdir(parents=True)
    shutil.copy(tiny_gguf, lms / "tiny-f32.gguf")
    snap = home / ".cache" / "huggingface" / "hub" / "models--org--tiny-GGUF" / "snapshots" / "rev1"
    snap.mkdir(parents=True)
    write_tiny_gguf(snap / "tiny-other.gguf", seed=2)
    (home / "models").mkdir()
    mine = write_tiny_gguf(home / "models" / "mine.gguf", seed=3)
    (home / "models" / "broken.gguf").write_bytes(b"not gguf at all, really")
    monkeypatch.setenv("RAGCLI_MODEL", str(mine))
    result = cli("models", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    by_source = {(f["source"], f["name"]): f for f in data["files"]}
    assert ("ollama", "tinyllm:latest") in by_source
    assert ("lm-studio", "someone/Tiny-GGUF/tiny-f32.gguf") in by_source
    assert ("huggingface", "org/tiny-GGUF/tiny-other.gguf") in by_source
    assert ("models-dir", "mine.gguf") in by_source
    ollama = by_source[("ollama", "tinyllm:latest")]
    assert ollama["architecture"] == "llama" and ollama["quantization"] == "F32" and ollama["parameters"] > 10_000
    assert ollama["context_length"] == 2048 and ollama["size_bytes"] == os.path.getsize(tiny_gguf)
    assert "error" in by_source[("models-dir", "broken.gguf")]
    assert [f["name"] for f in data["files"] if f["selected"]] == ["mine.gguf"]
    assert data["selected"]["backend"] == "llama.cpp"
    monkeypatch.setenv("COLUMNS", "200")
    text = cli("models")
    assert text.exit_code == 0 and "tinyllm:latest" in text.stdout and "ask uses" in text.stdout


def test_models_lists_profiles_and_what_servers_serve(tmp_path, monkeypatch, cli, corpus_db):
    _home(tmp_path, monkeypatch)
    with FaultServer() as server:
        server.models = ["alpha", "beta"]
        config = tmp_path / "config.toml"
        config.write_text(f'default = "team"\n\n[models.team]\nurl = "{server.url}"\nname = "beta"\n\n'
                          f'[models.gone]\nurl = "http://127.0.0.1:9/v1"\n\n[models.local]\npath = "/x/m.gguf"\n')
        monkeypatch.setenv("RAGCLI_CONFIG", str(config))
        data = json.loads(cli("models", "--json").stdout)
        info = json.loads(cli("info", "--json").stdout)
    rows = {p["name"]: p for p in data["profiles"]}
    assert rows["team"]["selected"] and rows["team"]["server"]["models"] == ["alpha", "beta"]
    assert rows["gone"]["server"]["reachable"] is False and not rows["gone"]["selected"]
    assert rows["local"]["backend"] == "llama.cpp"
    assert data["selected"] == {"backend": "openai-http", "url": server.url, "name": "beta", "profile": "team"}
    assert info["chat_model"] == data["selected"]


def test_unknown_profile_and_bad_profile_keys(tmp_path, monkeypatch, cli, corpus_db):
    config = tmp_path / "config.toml"
    config.write_text('[models.typo]\nurl = "http://127.0.0.1:9/v1"\ntemprature = 0.1\n')
    monkeypatch.setenv("RAGCLI_CONFIG", str(config))
    bad = cli("ask", "what is a craniotomy?", "--model", "typo", "--no-expand")
    assert bad.exit_code == 2 and "temprature" in bad.stderr
    nothing = cli("ask", "what is a craniotomy?", "--model", "nosuchprofile", "--no-expand")
    assert nothing.exit_code == 6 and "not a file, a server URL or a profile" in nothing.stderr


def test_light_commands_import_no_model_client(tmp_path, run_module, corpus_db):
    """`--help`, `books` and `search` import neither openai nor llama_cpp (cold start)."""
    import subprocess
    import sys

    for args in (["--help"], ["books"], ["search", "craniotomy", "-k", "2"]):
        code = ("import sys, json, runpy\n"
                f"sys.argv = ['ragcli'] + {args!r}\n"
                "try:\n    runpy.run_module('ragcli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
                "print(json.dumps([m for m in ('openai', 'llama_cpp', 'httpx2') if m in sys.modules]))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
        assert json.loads(out.stdout.strip().splitlines()[-1]) == [], (args, out.stderr[-500:])
