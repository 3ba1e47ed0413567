"""`ragcli chat` as a person uses it: in a pseudo-terminal that is its controlling terminal (pyte draws
the screen; Ctrl-C is a real SIGINT), with the tiny real llama.cpp model forced by a grammar to write a
known answer. A follow-up, the standalone question shown, `/sources`, `/show`, the arrow-key history,
a multi-line paste, Ctrl-C at the prompt and while an answer streams, Ctrl-D and `/exit`."""
from __future__ import annotations

import sqlite3

import pytest

import terminal

pytest.importorskip("pyte")
pytest.importorskip("prompt_toolkit")

SHORT = "A craniotomy removes a bone flap of the skull [S1]."
# about 400 tokens of the tiny model (about one a character): 2 s of streaming, still going when Ctrl-C
# arrives after "Step 2:". Every sentence its own words: the same sentence three times (digits aside) is
# a loop, which ends the answer (answer/health.py) before Ctrl-C could stop it.
LONG = " ".join(f"Step {i}: {act} [S1]." for i, act in enumerate([
    "wash both hands with soap", "shave the scalp along the incision line", "mark the planned skin flap",
    "inject local anaesthetic into the scalp", "incise the skin and the galea", "reflect the temporalis muscle",
    "drill two burr holes through bone", "join the holes with a craniotome", "lift the bone flap away gently",
    "wrap the flap in moist gauze", "open the dura in a curve"], 1))


def _chat(tiny_gguf, tmp_path, text: str, max_tokens: int = 64):
    from ragcli.models.grammars import forced_text_grammar

    grammar = tmp_path / "answer.gbnf"
    grammar.write_text(forced_text_grammar(text))
    return ["chat", "--model", tiny_gguf, "--ctx", "2048", "--grammar-file", grammar, "--no-expand",
            "--max-tokens", str(max_tokens)]


def _turns(path):
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT conversation_id, number, question, standalone FROM conversation_turns"
                            " ORDER BY conversation_id, number").fetchall()
    finally:
        conn.close()


def test_chat_follow_up_sources_history_paste_and_ctrl_d(corpus_db, tiny_gguf, tmp_path):
    s = terminal.Session(_chat(tiny_gguf, tmp_path, SHORT))
    try:
        seen = s.wait_for("/help lists the commands")
        seen = s.wait_for("›", line_start=True)
        s.send("what is a craniotomy?\r")
        seen = s.wait_for("conversation 1, turn 1 saved", after=seen)
        assert "removes a bone flap of the skull" in s.text and "Sources" in s.text

        s.send("/sources\r")
        seen = s.wait_for("The last answer's passages", after=seen)
        s.send("/show S1\r")
        seen = s.wait_for("Passage S1 · ", after=seen)
        s.send("/show S99\r")
        seen = s.wait_for("no source 'S99' in the last answer", after=seen)

        s.send("and what are its risks?\r")  # a follow-up: shown as the standalone question it became
        seen = s.wait_for("→ ", after=seen)
        seen = s.wait_for("conversation 1, turn 2 saved", after=seen)
        assert any("→" in line and "craniotomy" in line.lower() for line in s.text.splitlines())

        # the up arrow walks back through every line typed, commands included (as a shell does), to
        # the first question; checked on the line being edited, not on earlier output
        for line in ["and what are its risks?", "/show S99", "/show S1", "/sources", "what is a craniotomy?"]:
            s.send("\x1b[A")
            s.wait_for_cursor_line("› " + line)
        s.send("\x03")  # Ctrl-C at the prompt: the line is dropped, the session goes on
        seen = s.wait_for("›", after=seen, line_start=True)

        s.send("\x1b[200~what is an arteriovenous\nmalformation?\x1b[201~\r")  # a pasted question over two lines
        seen = s.wait_for("conversation 1, turn 3 saved", after=seen)

        s.send("/help\r")
        seen = s.wait_for("/show S2", after=seen)
        # Ctrl-D only once the prompt is drawn: before it the terminal is in cooked mode and its line
        # discipline takes ^D as end-of-file, so the program would never read it as a key
        s.wait_for_cursor_line("›")
        s.send("\x04")  # Ctrl-D leaves
        s.wait_for("bye", after=seen)
        assert s.close() == 0
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
    turns = _turns(corpus_db)
    assert [(c, n, q) for c, n, q, _ in turns] == [
        (1, 1, "what is a craniotomy?"), (1, 2, "and what are its risks?"),
        (1, 3, "what is an arteriovenous malformation?")]
    assert "craniotomy" in turns[1][3].lower() and turns[2][3] == turns[2][2]


def test_ctrl_c_while_an_answer_streams_stops_it_keeps_the_session_and_saves_nothing(corpus_db, tiny_gguf, tmp_path):
    s = terminal.Session(_chat(tiny_gguf, tmp_path, LONG, max_tokens=500))
    try:
        seen = s.wait_for("›", line_start=True)
        s.send("what is a craniotomy?\r")
        seen = s.wait_for("Step 2:", after=seen)  # streaming
        s.send("\x03")
        seen = s.wait_for("stopped: this answer is not saved", after=seen)
        assert "Step 11:" not in s.text  # stopped before the end
        seen = s.wait_for("›", after=seen, line_start=True)
        s.send("/sources\r")  # nothing was answered
        seen = s.wait_for("no answer yet", after=seen)
        s.send("/exit\r")
        s.wait_for("bye", after=seen)
        assert s.close() == 0
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
    assert _turns(corpus_db) == []
