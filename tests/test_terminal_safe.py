"""Untrusted text never acts on the terminal (issue 44): a question, a book's heading and text, a file
name holding ESC sequences (`ESC]0;...BEL` retitles the window, `ESC[2J` clears the screen), C1
controls or a line break followed by `# heading` are printed with the controls shown as visible
escapes by `ingest`, `books`, `search`, `conversations list/show/export`, and a Markdown export gains
no heading from them. Property: for any text, terminal_safe leaves no control character but tab and
line feed (none at all on one line), and changes nothing else.
"""
from __future__ import annotations

import json
import re

from hypothesis import given, strategies as st

HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x9b31m\u202egnp.exe"
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _clean(text: str) -> None:
    assert not CONTROL.search(text), repr(text[:500])


@given(st.text())
def test_terminal_safe_leaves_no_control_character(text):
    from ragcli.render.console import terminal_safe

    many = terminal_safe(text)
    one = terminal_safe(text, lines=False)
    _clean(many)
    _clean(one)
    assert "\n" not in one and "\r" not in one
    assert terminal_safe(many) == many  # nothing left to escape: it is idempotent on its output


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cf", "Zl", "Zp"))))
def test_terminal_safe_changes_plain_text_not_at_all(text):
    from ragcli.render.console import terminal_safe

    assert terminal_safe(text) == text and terminal_safe(text, lines=False) == text


def test_a_hostile_markdown_book_prints_no_escape(cli, corpus_db, tmp_path):
    book = tmp_path / f"notes{HOSTILE[:8]}.md"
    book.write_text(f"# Heading {HOSTILE}\n\nThe flurbonic gasket {HOSTILE} holds the pump.\n\nMore text here "
                    f"about the flurbonic gasket and its seal.\n")
    res = cli("ingest", str(book))
    assert res.exit_code == 0, res.output
    for out in (res.stdout, res.stderr, cli("books").stdout, cli("search", "flurbonic gasket").stdout,
                cli("search", "flurbonic gasket", "-k", "1").stderr):
        _clean(out)
    shown = cli("search", "flurbonic gasket").stdout
    assert "\\x1b]0;pwned\\x07" in shown  # shown as visible escapes, not dropped silently
    data = json.loads(cli("search", "flurbonic gasket", "--json").stdout)
    assert HOSTILE in data[0]["text"]  # JSON carries the text as it is (escaped by JSON itself)


def test_a_hostile_question_becomes_no_heading_and_no_escape(cli, corpus_db, monkeypatch):
    monkeypatch.setenv("RAGCLI_MODEL", "")
    question = f"what is a craniotomy? {HOSTILE}\n# Injected heading"
    assert cli("ask", question).exit_code == 0
    listed, shown, exported = (cli("conversations", "list"), cli("conversations", "show", "1"),
                               cli("conversations", "export", "1"))
    for res in (listed, shown, exported):
        assert res.exit_code == 0, res.output
        _clean(res.stdout)
    headings = [line for line in exported.stdout.splitlines() if line.startswith("#")]
    assert len([h for h in headings if h.startswith("# ")]) == 1 and "Injected heading" in headings[0]
    assert not any(line.startswith("# Injected") for line in exported.stdout.splitlines())
