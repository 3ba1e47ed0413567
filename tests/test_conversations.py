"""Conversations (issue 25): `ask --continue` / `--conversation` across real processes, the saved rows,
stale turns, the Markdown export, concurrent `ask -c` on one conversation (gapless turn numbers), bad
or missing conversation ids (clear error, exit code, nothing written). The interactive `ragcli chat`
is in tests/test_chat_screen.py.

Uses conftest.py's `corpus_db` (the sample book "primer" + fixture PDFs at $RAGCLI_DB), `cli`,
`run_module`, `fingerprint`, `tiny_gguf`."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ragcli.store import db

ROOT = Path(__file__).resolve().parents[1]
FIRST = "what is a craniotomy?"
FOLLOW_UP = "what are its risks?"


def _turn(run, *args):
    res = run("ask", *args, "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _rows(path, sql, *args):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def test_continue_across_two_processes_saves_each_turn_with_its_sources(corpus_db, run_module, monkeypatch):
    monkeypatch.setenv("RAGCLI_MODEL", "")  # extractive: no model configured
    first = _turn(run_module, FIRST, "-c")
    assert (first["conversation_id"], first["turn"], first["rewritten"]) == (1, 1, False)
    assert first["question"] == first["standalone_question"] == FIRST
    second = _turn(run_module, FOLLOW_UP, "--continue")
    assert (second["conversation_id"], second["turn"], second["rewritten"]) == (1, 2, True)
    assert second["question"] == FOLLOW_UP
    assert "craniotomy" in second["standalone_question"].lower()  # the subject carried without a model
    assert second["rewrite"]["method"] == "carried" and "'its'" in second["rewrite"]["reason"]
    # retrieval ran on the standalone question: the answer's sources are about craniotomy
    assert any("craniotomy" in s["text"].lower() for s in second["sources"])

    turns = _rows(corpus_db, "SELECT conversation_id, number, question, standalone, rewritten, answer, status, model"
                             " FROM conversation_turns ORDER BY number")
    assert [(t[0], t[1], t[2]) for t in turns] == [(1, 1, FIRST), (1, 2, FOLLOW_UP)]
    assert turns[1][3] == second["standalone_question"] and turns[1][4] == 1
    assert turns[1][5] == second["answer"] and turns[1][6] == second["status"] == "extractive"
    assert turns[1][7] is None  # no model
    sources = _rows(corpus_db, "SELECT s.label, s.passage_id, s.book_id, s.page_start, s.text_hash, s.text, s.cited"
                               " FROM turn_sources s JOIN conversation_turns t ON t.id = s.turn_id"
                               " WHERE t.number = 2 ORDER BY s.rowid")
    assert [s[0] for s in sources] == [s["label"] for s in second["sources"]]
    passages = dict(_rows(corpus_db, "SELECT id, text_hash FROM passages"))
    for label, passage_id, book, page, text_hash, text, cited in sources:
        assert passages[passage_id] == text_hash and book and page >= 1 and text
    assert {s[0] for s in sources if s[6]} == set(second["citations"])

    shown = json.loads(run_module("conversations", "show", "1", "--json").stdout)
    assert [t["turn"] for t in shown["turns"]] == [1, 2] and shown["stale"] is False
    assert shown["turns"][1]["standalone_question"] == second["standalone_question"]
    listed = json.loads(run_module("conversations", "list", "--json").stdout)
    assert [(c["id"], c["turn_count"], c["title"]) for c in listed] == [(1, 2, FIRST)]


def test_a_no_log_ask_saves_nothing_and_continue_starts_a_conversation(corpus_db, cli, fingerprint, monkeypatch):
    monkeypatch.setenv("RAGCLI_MODEL", "")
    before = fingerprint(corpus_db)
    assert cli("ask", FIRST, "--json", "--no-log").exit_code == 0
    assert fingerprint(corpus_db) == before
    res = cli("ask", FIRST, "-c")
    assert res.exit_code == 0, res.output
    assert "starts one" in res.stderr and "conversation 1, turn 1 saved" in res.stderr


def test_every_ask_is_a_turn_that_ask_c_continues(corpus_db, cli, fingerprint, monkeypatch, tmp_path):
    """A plain ask is saved as a one-turn conversation; `ask -c` makes the follow-up its turn 2, whose
    standalone question names the first's subject (llm's `-c`). --no-log and `log = false` save nothing."""
    monkeypatch.setenv("RAGCLI_MODEL", "")
    first = json.loads(cli("ask", FIRST, "--json").stdout)
    assert "conversation_id" not in first and first["status"] == "extractive"  # the answer's shape, unchanged
    assert "ragcli models pull" in first["notice"]  # no model: the next step is named
    listed = json.loads(cli("conversations", "list", "--json").stdout)
    assert [(c["id"], c["turn_count"], c["title"]) for c in listed] == [(1, 1, FIRST)]
    follow = json.loads(cli("ask", FOLLOW_UP, "-c", "--json").stdout)
    assert (follow["conversation_id"], follow["turn"]) == (1, 2)
    assert follow["rewritten"] and "craniotomy" in follow["standalone_question"].lower()
    before = fingerprint(corpus_db)
    assert cli("ask", FIRST, "--no-log").exit_code == 0
    config = tmp_path / "home" / "config" / "ragcli" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("log = false\n")
    assert cli("ask", FIRST, "--json").exit_code == 0
    assert fingerprint(corpus_db) == before
    config.write_text('log = "no"\n')
    bad = cli("ask", FIRST)
    assert bad.exit_code == 2 and "log in" in bad.stderr


def test_a_follow_up_with_no_earlier_turn_says_so_in_one_line(corpus_db, cli, monkeypatch):
    monkeypatch.setenv("RAGCLI_MODEL", "")
    alone = cli("ask", "and what do I do about it?", "-c")
    assert alone.exit_code == 0
    lines = [x for x in alone.stderr.splitlines() if "refers back" in x]
    assert len(lines) == 1 and "(opens with 'and')" in lines[0] and "no earlier turn" in lines[0], alone.stderr
    plain = cli("ask", "what are its risks?", "--json", "--no-log")
    assert [x for x in plain.stderr.splitlines() if "refers back" in x and "ragcli ask -c" in x], plain.stderr
    json.loads(plain.stdout)  # stdout stays the answer
    assert not [x for x in cli("ask", FIRST).stderr.splitlines() if "refers back" in x]


def test_conversations_delete_all(corpus_db, cli, monkeypatch):
    monkeypatch.setenv("RAGCLI_MODEL", "")
    for q in (FIRST, "what is an arteriovenous malformation?"):
        assert cli("ask", q).exit_code == 0
    both = cli("conversations", "delete", "1", "--all")
    assert both.exit_code == 2 and "not both" in both.stderr
    neither = cli("conversations", "delete")
    assert neither.exit_code == 2
    unasked = cli("conversations", "delete", "--all")  # no terminal to ask on: refused, nothing deleted
    assert unasked.exit_code == 2 and "--yes" in unasked.stderr
    assert len(json.loads(cli("conversations", "list", "--json").stdout)) == 2
    res = cli("conversations", "delete", "--all", "--yes", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout) == {"deleted": {"conversations": 2}}
    assert json.loads(cli("conversations", "list", "--json").stdout) == []
    assert cli("ask", FIRST, "-c", "--json").exit_code == 0
    assert [c["id"] for c in json.loads(cli("conversations", "list", "--json").stdout)] == [3]  # ids never reused


def test_standalone_question_is_shown_and_a_standalone_one_is_left_alone(corpus_db, cli, monkeypatch):
    monkeypatch.setenv("RAGCLI_MODEL", "")
    assert cli("ask", FIRST, "-c").exit_code == 0
    follow = cli("ask", FOLLOW_UP, "-c")
    assert follow.exit_code == 0 and "→ What are the craniotomy's risks?" in follow.stderr, follow.stderr
    alone = cli("ask", "What is an arteriovenous malformation?", "-c", "--json")
    data = json.loads(alone.stdout)
    assert data["rewritten"] is False and data["standalone_question"] == "What is an arteriovenous malformation?"
    assert data["turn"] == 3 and "→" not in alone.stderr


def test_stale_turn_after_the_book_is_removed_and_markdown_export(corpus_db, cli, monkeypatch):
    monkeypatch.setenv("RAGCLI_MODEL", "")
    assert cli("ask", FIRST, "-c").exit_code == 0
    assert cli("ask", FOLLOW_UP, "-c").exit_code == 0
    md = cli("conversations", "export", "1", "--format", "markdown")
    assert md.exit_code == 0, md.output
    text = md.stdout
    assert text.startswith(f"# {FIRST}\n") and f"## 1. {FIRST}" in text and f"## 2. {FOLLOW_UP}" in text
    assert "*Read as: What are the craniotomy's risks?*" in text
    cited = json.loads(cli("conversations", "show", "1", "--json").stdout)["turns"][1]["citations"]
    for label in cited:  # each turn's labels footnoted by turn: [^2-S1]
        assert f"[^2-{label}]: " in text
    assert "Stale" not in text

    assert cli("books", "remove", "primer").exit_code == 0
    shown = json.loads(cli("conversations", "show", "1", "--json").stdout)
    assert shown["stale"] is True
    for turn in shown["turns"]:
        assert turn["stale"] is True and turn["stale_sources"]
        assert {s["reason"] for s in turn["sources"] if s["status"] == "gone"} == {"book removed"}
    human = cli("conversations", "show", "1")
    assert human.exit_code == 0 and "stale:" in human.stdout and "book removed" in human.stdout
    assert "> **Stale:**" in cli("conversations", "export", "1").stdout


def test_bad_or_missing_conversation_id_is_a_clear_error_and_writes_nothing(corpus_db, cli, fingerprint, monkeypatch):
    monkeypatch.setenv("RAGCLI_MODEL", "")
    assert cli("ask", FIRST, "-c").exit_code == 0
    before = fingerprint(corpus_db)
    for args, code, words in [
        (("ask", FOLLOW_UP, "--conversation", "abc"), 2, "'abc' is no conversation id"),
        (("ask", FOLLOW_UP, "--conversation", "0"), 2, "no conversation id"),
        (("ask", FOLLOW_UP, "--conversation", "7"), 5, "no conversation 7"),
        (("chat", "--conversation", "7"), 5, "no conversation 7"),
        (("conversations", "show", "x1"), 2, "no conversation id"),
        (("conversations", "show", "9"), 5, "no conversation 9"),
        (("conversations", "export", "9"), 5, "no conversation 9"),
        (("conversations", "export", "1", "--format", "pdf"), 2, "unknown format"),
        (("conversations", "delete", "9"), 5, "no conversation 9"),
    ]:
        res = cli(*args)
        assert res.exit_code == code, (args, res.output)
        assert words in res.stderr and "Traceback" not in res.output, (args, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert fingerprint(corpus_db) == before


def test_delete_keeps_ids_unique(corpus_db, cli, monkeypatch):
    monkeypatch.setenv("RAGCLI_MODEL", "")
    assert cli("ask", FIRST, "-c").exit_code == 0
    assert cli("conversations", "delete", "1").exit_code == 0
    assert _rows(corpus_db, "SELECT COUNT(*) FROM conversation_turns") == [(0,)]
    assert _rows(corpus_db, "SELECT COUNT(*) FROM turn_sources") == [(0,)]
    data = json.loads(cli("ask", FIRST, "-c", "--json").stdout)
    assert data["conversation_id"] == 2 and data["turn"] == 1  # a deleted id is never given again
    assert "no conversations" not in cli("conversations", "list").stderr


def test_concurrent_ask_continue_on_one_conversation_gets_gapless_turn_numbers(corpus_db, run_module):
    env = {**os.environ, "RAGCLI_MODEL": ""}
    assert _turn(run_module, FIRST, "-c")["turn"] == 1
    questions = ["what are its risks?", "how long does it take?", "what happens after it?", "who needs it?"]
    procs = [subprocess.Popen([sys.executable, "-m", "ragcli", "ask", q, "--conversation", "1", "--json",
                               "--db", str(corpus_db)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for q in questions]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0] * len(procs), [e for _, e in outs]
    numbers = sorted(json.loads(out)["turn"] for out, _ in outs)
    assert numbers == [2, 3, 4, 5]
    saved = _rows(corpus_db, "SELECT number, question FROM conversation_turns WHERE conversation_id = 1 ORDER BY number")
    assert [n for n, _ in saved] == [1, 2, 3, 4, 5]
    assert sorted(q for _, q in saved[1:]) == sorted(questions)


def test_the_schema_refuses_a_duplicate_turn_number(corpus_db, monkeypatch, cli):
    monkeypatch.setenv("RAGCLI_MODEL", "")
    assert cli("ask", FIRST, "-c").exit_code == 0
    conn = db.connect(corpus_db)
    try:
        with pytest.raises(Exception):
            conn.execute("INSERT INTO conversation_turns(conversation_id, number, question, standalone, rewritten,"
                         " rewrite, answer, status, claims, removed_citations, timings, created_at)"
                         " SELECT conversation_id, number, question, standalone, rewritten, rewrite, answer, status,"
                         " claims, removed_citations, timings, created_at FROM conversation_turns")
    finally:
        conn.close()


def test_a_turn_with_the_real_tiny_model_records_the_model_and_the_rewrite_time(corpus_db, cli, tiny_gguf, tmp_path):
    from ragcli.models.grammars import forced_text_grammar

    grammar = tmp_path / "g.gbnf"
    grammar.write_text(forced_text_grammar("A craniotomy removes a bone flap of the skull [S1]."))
    base = ["--model", tiny_gguf, "--ctx", "2048", "--max-tokens", "64", "--grammar-file", grammar, "--json"]
    first = json.loads(cli("ask", FIRST, "-c", *base).stdout)
    assert first["model"] and first["rewrite"]["method"] == ""
    res = cli("ask", FOLLOW_UP, "-c", *base)
    assert res.exit_code == 0, res.output
    second = json.loads(res.stdout)
    # random weights write no usable question, so the subject is carried; the call was made and timed
    assert second["rewritten"] and second["rewrite"]["method"] in ("model", "carried")
    assert second["rewrite"]["seconds"] > 0 and second["timings"]["standalone"] > 0
    saved = json.loads(cli("conversations", "show", "1", "--json").stdout)["turns"][1]
    assert saved["model"]["name"] and saved["timings"]["standalone"] > 0
