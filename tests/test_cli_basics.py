"""The command line behaves as the best CLIs do: --version, global options before or after the
command, quiet SIGPIPE, help for every option, validation before any work, summary show/delete,
Markdown export."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import click
import typer

from conftest import ROOT


def test_version(cli):
    from ragcli import __version__

    res = cli("--version")
    assert res.exit_code == 0 and res.stdout.strip() == f"ragcli {__version__}"


def test_db_json_verbose_before_or_after_the_command(corpus_db, cli, tmp_path):
    other = tmp_path / "elsewhere.db"
    corpus_db.rename(other)
    before = cli("--db", other, "--json", "books")
    after = cli("books", "--db", other, "--json")
    assert before.exit_code == after.exit_code == 0, before.output
    assert json.loads(before.stdout) == json.loads(after.stdout)
    verbose = cli("--db", other, "--verbose", "search", "aneurysm", "-k", "1")
    assert verbose.exit_code == 0 and "score" in verbose.stdout


def test_search_json_into_head_exits_quietly(corpus_db, tmp_path):
    err = tmp_path / "err.txt"
    proc = subprocess.run(
        f"'{sys.executable}' -m ragcli search x -k 100 --json 2>'{err}' | head -1", shell=True, cwd=ROOT,
        env=dict(os.environ), capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip() == "["
    assert err.read_text() == ""  # no "BrokenPipeError", no internal error


def _commands(group: click.Group, prefix=()):
    for name, command in group.commands.items():
        yield (*prefix, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))


def test_every_option_is_described_and_no_flag_shows_a_type(cli):
    root = typer.main.get_command(__import__("ragcli.cli", fromlist=["app"]).app)
    undescribed = []
    for path, command in [((), root), *_commands(root)]:
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden and param.name != "help" \
                    and not (param.help or "").strip():
                undescribed.append(f"{' '.join(path)} {param.opts[0]}")
        res = cli(*path, "--help")
        assert res.exit_code == 0, path
        assert "<bool>" not in res.stdout and "<list[str]>" not in res.stdout, (path, res.stdout)
    assert undescribed == []


def test_an_empty_question_fails_before_any_work(cli, tmp_path):
    missing = tmp_path / "nothing.db"
    res = cli("ask", "   ", "--db", missing)
    assert res.exit_code == 2 and "question is empty" in res.stderr
    assert "book terms" not in res.stderr and not missing.exists()
    res = cli("search", "", "--db", missing)
    assert res.exit_code == 2 and "query is empty" in res.stderr


def test_summary_show_defaults_to_the_latest_and_delete_keeps_numbers(corpus_db, cli):
    for _ in range(3):
        assert cli("summary", "new", "aneurysms").exit_code == 0
    latest = cli("summary", "show", "aneurysms")
    assert latest.exit_code == 0 and "Summary #3" in latest.stdout
    res = cli("summary", "delete", "aneurysms", "2")
    assert res.exit_code == 0 and "deleted summary #2" in res.stderr
    listed = json.loads(cli("summary", "list", "aneurysms", "--json").stdout)
    assert [s["number"] for s in listed["summaries"]] == [1, 3]
    assert cli("summary", "delete", "aneurysms", "3").exit_code == 0
    assert json.loads(cli("summary", "new", "aneurysms", "--json").stdout)["number"] == 4  # 3 not given again
    gone = cli("summary", "show", "aneurysms", "2")
    assert gone.exit_code == 5 and "no summary #2" in gone.stderr
    assert cli("summary", "delete", "aneurysms", "9").exit_code == 5


def test_markdown_export_of_an_answer_and_a_summary(corpus_db, cli):
    res = cli("ask", "what is a craniotomy?", "--format", "markdown")
    assert res.exit_code == 0, res.output
    text = res.stdout
    assert text.startswith("# what is a craniotomy?") and "[^S1]" in text
    footnotes = [line for line in text.splitlines() if line.startswith("[^")]
    assert footnotes and all("p. " in line and "PDF page" in line for line in footnotes)
    assert "[S1]" not in text
    assert cli("summary", "new", "aneurysms").exit_code == 0
    md = cli("summary", "show", "aneurysms", "--format", "markdown").stdout
    assert md.startswith("# aneurysms") and "\n### " in md and "[^S" in md
    assert cli("ask", "x y", "--format", "pdf").exit_code == 2


def test_extractive_answers_are_quotes_not_supported_claims(corpus_db, cli):
    data = json.loads(cli("ask", "what is a craniotomy?", "--json").stdout)
    assert data["status"] == "extractive" and data["claims"]
    assert {c["support"] for c in data["claims"]} == {"quoted"}
    shown = cli("ask", "what is a craniotomy?").stdout
    assert "Quoted from the book" in shown and "✓ supported" not in shown


def test_model_none_quotes_the_books_whatever_model_is_configured(corpus_db, cli, monkeypatch, tmp_path, tiny_gguf):
    """`--model none` (any case) and RAGCLI_MODEL=none ask without a model: the extractive answer,
    though RAGCLI_MODEL or the config file's default names a real GGUF."""
    monkeypatch.setenv("RAGCLI_MODEL", str(tiny_gguf))
    with_model = json.loads(cli("ask", "what is a craniotomy?", "--json").stdout)
    assert with_model["status"] != "extractive"  # the configured model answered
    for flag in ("none", "None"):
        data = json.loads(cli("ask", "what is a craniotomy?", "--model", flag, "--json").stdout)
        assert data["status"] == "extractive" and data["answer"] and data["reason"] == "no_model"
        assert "(--model none)" in data["notice"] and "models pull" not in data["notice"]
    monkeypatch.setenv("RAGCLI_MODEL", "none")
    assert json.loads(cli("ask", "what is a craniotomy?", "--json").stdout)["status"] == "extractive"
    monkeypatch.delenv("RAGCLI_MODEL")
    config = tmp_path / "home" / "config" / "ragcli" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'default = "{tiny_gguf}"\n[model]\npath = "{tiny_gguf}"\n', encoding="utf-8")
    assert json.loads(cli("ask", "what is a craniotomy?", "--json").stdout)["status"] != "extractive"
    assert json.loads(cli("ask", "what is a craniotomy?", "--model", "none", "--json").stdout)["status"] == "extractive"
    # a chat model is what --rerank llm rates with: with none there is none, said in one line
    result = cli("ask", "what is a craniotomy?", "--model", "none", "--rerank", "llm")
    assert result.exit_code == 2 and "needs a chat model" in result.stderr and "Traceback" not in result.stderr
