"""Models by name (models/names.py), the catalogue's "fits" (models/choice.py), a model's display name,
the config file's default rewritten in place, and the help and usage errors people read (issue 47)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ragcli.models.hardware import Hardware

ROOT = Path(__file__).resolve().parents[1]


def _entry(name, size_gb, memory_gb):
    from ragcli.models.catalogue import Entry

    return Entry(name, name, "org/repo", f"{name}.gguf", "rev", size_gb, memory_gb, "MIT", "not measured here")


def test_fits_weighs_memory_and_cores():
    from ragcli.models.choice import best, estimate

    two_cores = Hardware(25 * 10**9, 20 * 10**9, 2, 4, False)
    small, mid, big, huge = (_entry("small", 0.49, 1.5), _entry("mid", 1.12, 2.1), _entry("big", 4.68, 5.7),
                             _entry("huge", 40.0, 45.0))
    assert estimate(small, two_cores).fits and estimate(mid, two_cores).fits
    slow = estimate(big, two_cores)
    assert slow.fits_memory and not slow.fits and "slower than reading pace" in slow.why and "2 cores" in slow.why
    assert not estimate(huge, two_cores).fits_memory
    chosen, fit = best([small, big, mid, huge], two_cores)
    assert chosen.name == "mid" and "tokens/s on 2 cores (estimated)" in fit.why  # not the 7B that fits memory
    sixteen = Hardware(64 * 10**9, 60 * 10**9, 16, 32, False)
    assert best([small, big, mid, huge], sixteen)[0].name == "big"
    gpu = Hardware(64 * 10**9, 60 * 10**9, 2, 4, True)
    assert estimate(big, gpu).fits and estimate(big, gpu).tokens_per_s is None


def test_a_model_is_named_by_its_file_type_not_a_header_word():
    from ragcli.models.gguf import display_name

    assert display_name("Qwen2.5 Coder 0.5B Instruct AWQ", "Q4_K_M", "x") == "Qwen2.5 Coder 0.5B Instruct (Q4_K_M)"
    assert display_name("Llama 3.2 3B Instruct GGUF", "Q8_0", "x") == "Llama 3.2 3B Instruct (Q8_0)"
    assert display_name(None, "Q4_K_M", "my-model") == "my-model"


def test_short_names_catalogue_first_then_file_names_each_once():
    from ragcli.models.names import short_names

    files = [{"source": "huggingface", "name": "org/repo/small.gguf", "path": "/a/small.gguf"},
             {"source": "models-dir", "name": "Qwen2.5-1.5B-Instruct-Q4_K_M.gguf", "path": "/b/Qwen2.5-1.5B-Instruct-Q4_K_M.gguf"},
             {"source": "lm-studio", "name": "x/qwen2.5-1.5b-instruct-q4_k_m.gguf", "path": "/c/qwen2.5-1.5b-instruct-q4_k_m.gguf"},
             {"source": "ollama", "name": "llama3:latest", "path": "/d/blobs/sha256-1"},
             {"source": "models-dir", "name": "broken.gguf", "path": "/e/broken.gguf", "error": "not GGUF"}]
    named = [f["short_name"] for f in short_names(files, [_entry("small", 0.5, 1.5)])]
    assert named == ["small", "qwen2.5-1.5b-instruct-q4_k_m", None, "llama3:latest", None]


def test_models_default_replaces_the_default_and_keeps_the_tables(tmp_path, monkeypatch):
    from ragcli import config

    path = tmp_path / "config.toml"
    path.write_text('# mine\ndefault = "old"\nlog = false\n\n[models.team]\nurl = "http://127.0.0.1:9/v1"\n')
    monkeypatch.setenv("RAGCLI_CONFIG", str(path))
    config.set_default_model("new", note="test")
    config.add_profile("local", "/x/m.gguf")
    data = config.load_file_settings()
    assert data["default"] == "new" and data["log"] is False
    assert data["models"] == {"team": {"url": "http://127.0.0.1:9/v1"}, "local": {"path": "/x/m.gguf"}}
    assert path.read_text().count("default =") == 1 and "# mine" in path.read_text()


def test_a_bad_flag_is_one_line_and_help_states_the_real_defaults():
    def run(*args):
        return subprocess.run([sys.executable, "-m", "ragcli", *args], capture_output=True, text=True, cwd=ROOT,
                              env={**__import__("os").environ, "COLUMNS": "80"}, timeout=120)

    bad = run("ask", "--nosuch", "x")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    assert "No such option: --nosuch" in bad.stderr and "ragcli ask --help" in bad.stderr
    helped = run("ask", "--help")
    assert helped.returncode == 0
    lines = helped.stdout.splitlines()
    assert len(lines) < 100 and all(len(line) <= 80 for line in lines)
    text = " ".join(helped.stdout.split())
    assert "default 4096" not in text and "the model's trained context" in text  # config.UNSET_RULES
    assert "use-multilingual-v3" in text and "..." not in helped.stdout  # whole words, nothing cut
    assert "<int>" not in helped.stdout and "<str>" not in helped.stdout


def test_exported_footnotes_are_defined_only_where_the_label_stands():
    from types import SimpleNamespace

    from ragcli.render.markdown import conversation_markdown

    def source(label):
        return SimpleNamespace(label=label, cited=True, book_title="Book", book_id="b", section_path=["Ch 1"],
                               page_label="3", page_start=3, kind="passage", figure_number=None)

    turn = SimpleNamespace(number=1, question="q?", rewritten=False, stale=False, notice="", status="answered",
                           answer="The flap is lifted [S1].", sources=[source("S1"), source("S2")])
    talk = SimpleNamespace(title="q?", id=1, created_at="2026-11-28T10:00", turns=[turn], book_ids=[])
    text = conversation_markdown(talk)
    assert "lifted [^1-S1]." in text and "[^1-S1]: Book" in text
    assert "[^1-S2]" not in text and "- S2: Book" in text  # found by ragcli: listed, not an orphan footnote
