"""The cited page one step away: OSC 8 links on source lines in a terminal (none in a pipe), `--json`
carrying the file and page, `ragcli open` through $RAGCLI_VIEWER, `ragcli show` with the text around
the passage, and what they say when the book's file moved or is gone."""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

import pytest

import terminal
from conftest import SAMPLE_BOOK

OSC8 = re.compile(r"\x1b\]8;[^;]*;([^\x1b\x07]*)(?:\x1b\\|\x07)")


def _search_json(cli, query="craniotomy bone flap"):
    res = cli("search", query, "--json", "-k", "3")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_search_json_carries_the_file_and_the_page_to_open(corpus_db, cli):
    hits = _search_json(cli)
    top = hits[0]
    assert top["book_id"] == "primer" and top["file"] == str(SAMPLE_BOOK.resolve())
    assert top["file_url"] == SAMPLE_BOOK.resolve().as_uri() + f"#page={top['page']}"
    assert top["file_status"] == "ok"


def test_source_lines_are_osc8_links_in_a_terminal_and_plain_in_a_pipe(corpus_db):
    pytest.importorskip("pyte")
    screen = terminal.run(["search", "craniotomy bone flap", "-k", "3"], columns=100)
    assert screen.returncode == 0, screen.screen
    # one target a line (rich opens the link again for each styled part; a closing one has no target)
    per_line = [list(dict.fromkeys(u for u in OSC8.findall(line) if u)) for line in screen.raw.splitlines()]
    per_line = [targets for targets in per_line if targets]
    assert len(per_line) == 3 and all(len(t) == 1 for t in per_line), per_line
    targets = [t[0] for t in per_line]
    hits = json.loads(terminal.run(["search", "craniotomy bone flap", "-k", "3", "--json"], pipe_stdout=True).stdout)
    assert targets == [h["file_url"] for h in hits]  # each link: the hit's file at the hit's page
    assert "primer · p." in screen.screen  # the text shows as before, the link is invisible
    piped = terminal.run(["search", "craniotomy bone flap", "-k", "3"], pipe_stdout=True)
    assert "\x1b]8;" not in piped.stdout and "primer · p." in piped.stdout


def _viewer(tmp_path) -> tuple[str, Path]:
    log = tmp_path / "viewer.log"
    script = tmp_path / "viewer.py"
    script.write_text(f"import sys, json\nopen({str(log)!r}, 'w').write(json.dumps(sys.argv[1:]))\n")
    return f"{sys.executable} {script} --page={{page}} {{file}}", log


def test_open_runs_the_viewer_with_the_file_and_the_page(corpus_db, cli, tmp_path, monkeypatch):
    top = _search_json(cli)[0]
    template, log = _viewer(tmp_path)
    monkeypatch.setenv("RAGCLI_VIEWER", template)
    res = cli("open", top["passage_id"], "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["page"] == top["page"] and data["file"] == top["file"]
    for _ in range(100):
        if log.exists() and log.read_text():  # the viewer creates the file, then writes it
            break
        time.sleep(0.1)
    assert json.loads(log.read_text()) == [f"--page={top['page']}", top["file"]]


def test_open_and_show_refuse_clearly(corpus_db, cli):
    assert cli("open", "999999").exit_code == 5
    s2 = cli("open", "S2")  # no saved answer in this corpus (2 without conversation tables, 5 with none saved)
    assert s2.exit_code in (2, 5) and "passage id" in s2.stderr and "Traceback" not in s2.output
    assert cli("show", "nope").exit_code == 2


def test_show_prints_the_passage_between_its_neighbours_with_the_quote_marked(corpus_db, cli):
    top = _search_json(cli)[0]
    res = cli("show", top["passage_id"], "--json")
    data = json.loads(res.stdout)
    assert data["passage_id"] == top["passage_id"] and data["text"] == top["text"]
    assert len(data["before"]) + len(data["after"]) >= 1
    quote = " ".join(top["text"].split()[3:12])
    plain = cli("show", top["passage_id"], "--quote", quote)
    assert plain.exit_code == 0 and quote in " ".join(plain.stdout.split())
    pytest.importorskip("pyte")
    screen = terminal.run(["show", top["passage_id"], "--quote", quote], columns=100)
    assert "\x1b[1;7m" in screen.raw or "\x1b[7;1m" in screen.raw  # reverse bold: the quote
    assert OSC8.search(screen.raw)


def test_a_book_whose_file_moved_or_is_gone_says_so(cli, tmp_path, embedder, monkeypatch):
    book = tmp_path / "books" / "primer.pdf"
    book.parent.mkdir()
    shutil.copyfile(SAMPLE_BOOK, book)
    assert cli("ingest", book).exit_code == 0
    top = _search_json(cli)[0]
    book.unlink()
    assert _search_json(cli)[0]["file_status"] == "gone"
    monkeypatch.setenv("RAGCLI_VIEWER", "true {file}")
    opened = cli("open", top["passage_id"])
    assert opened.exit_code == 3 and "moved or is gone" in opened.stderr and str(book) in opened.stderr
    shown = cli("show", top["passage_id"])
    assert shown.exit_code == 0 and "moved or is gone" in shown.stdout


def test_answer_sources_carry_the_file_and_are_links_on_a_terminal(corpus_db, cli, monkeypatch):
    monkeypatch.setenv("RAGCLI_MODEL", "")  # the extractive answer: no model, the same source lines
    res = cli("ask", "what is a craniotomy?", "--json", "--book", "primer")
    assert res.exit_code == 0, res.output
    sources = json.loads(res.stdout)["sources"]
    assert sources and all(s["file"] == str(SAMPLE_BOOK.resolve()) for s in sources)
    assert all(s["file_url"].endswith(f"#page={s['page']}") and s["file_status"] == "ok" for s in sources)
    pytest.importorskip("pyte")
    env = {**os.environ, "RAGCLI_MODEL": ""}
    screen = terminal.run(["ask", "what is a craniotomy?", "--book", "primer"], columns=120, env=env)
    assert screen.returncode == 0, screen.screen
    lines = [line for line in screen.raw.splitlines() if re.search(r"\[[SF]\d+\]", line) and "p. " in line]
    linked = [line for line in lines if OSC8.search(line)]
    assert linked and len(linked) == len(lines)  # every source line is a link
    assert {u for line in linked for u in OSC8.findall(line) if u} <= {s["file_url"] for s in sources}


def test_show_image_writes_the_page_with_the_passage_highlighted(corpus_db, cli, tmp_path):
    top = _search_json(cli)[0]
    out = tmp_path / "page.png"
    res = cli("show", top["passage_id"], "--image", out, "--json")
    assert res.exit_code == 0, res.output
    image = json.loads(res.stdout)["image"]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert top["page"] <= image["page"] <= top["page_end"] and image["found"] >= 1
    assert image["found"] >= image["sentences"] * 0.5  # bench/robustness/bench_show_image.py: 94-98% on 4 books
    quote = " ".join(top["text"].split()[:8])
    quoted = json.loads(cli("show", top["passage_id"], "--image", out, "--quote", quote, "--json").stdout)["image"]
    assert quoted["sentences"] == 1 and quoted["found"] == 1


def test_open_and_show_s2_take_a_source_of_the_latest_saved_answer(corpus_db, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCLI_MODEL", "")  # extractive: no model, the turn is still saved
    asked = cli("ask", "what is a craniotomy?", "-c", "--json", "--book", "primer")
    assert asked.exit_code == 0, asked.output
    s2 = next(s for s in json.loads(asked.stdout)["sources"] if s["label"] == "S2")
    shown = json.loads(cli("show", "S2", "--json").stdout)
    assert shown["passage_id"] == s2["passage_id"] and shown["page"] == s2["page"]
    template, log = _viewer(tmp_path)
    monkeypatch.setenv("RAGCLI_VIEWER", template)
    opened = cli("open", "[S2]", "--json")
    assert opened.exit_code == 0, opened.output
    assert json.loads(opened.stdout)["passage_id"] == s2["passage_id"]
    for _ in range(100):
        if log.exists() and log.read_text():  # the viewer creates the file, then writes it
            break
        time.sleep(0.1)
    assert json.loads(log.read_text()) == [f"--page={s2['page']}", s2["file"]]
    missing = cli("open", "S99")
    assert missing.exit_code == 5 and "no source S99" in missing.stderr
