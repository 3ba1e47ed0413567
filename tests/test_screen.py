"""What a person sees: ragcli run in a pseudo-terminal at 80 columns (pyte emulates the screen), and
with stdout piped. The chat model is the tiny real llama.cpp model, forced by a grammar to loop, to
copy the prompt, or to cite a label it was not given."""
from __future__ import annotations

import json
import re

import pytest

import terminal

pytest.importorskip("pyte")

QUESTION = "what is a craniotomy?"
LOOP = 'root ::= line root\nline ::= "A craniotomy removes a bone flap of the skull [S1]. "\n'


def _ask(tiny_gguf, grammar_file, *more):
    return ["ask", QUESTION, "--model", tiny_gguf, "--grammar-file", grammar_file, "--no-expand",
            "--max-tokens", "200", "--ctx", "2048", *more]


def _grammar(tmp_path, text: str, name: str = "g.gbnf"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _forced(tmp_path, text: str):
    from ragcli.models.grammars import forced_text_grammar

    return _grammar(tmp_path, forced_text_grammar(text))


def test_a_looping_answer_is_stopped_and_flagged_in_json_and_in_words(corpus_db, tiny_gguf, tmp_path, cli):
    grammar = _grammar(tmp_path, LOOP)
    res = cli(*_ask(tiny_gguf, grammar, "--json"))
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert "repetition" in {w["code"] for w in data["warnings"]}
    # stopped by ragcli, nothing of it cut: the sentence before the loop is the answer (the book's own)
    assert "truncated" not in {w["code"] for w in data["warnings"]}
    assert data["status"] == "answered"
    assert data["timings"]["generated_tokens"] < 200  # stopped once it looped, not at max_tokens
    assert data["answer"].count("removes a bone flap") == 1  # repeats dropped

    screen = terminal.run(_ask(tiny_gguf, grammar), columns=80)
    assert screen.returncode == 0, screen.screen
    lines = screen.text
    answer = next(i for i, line in enumerate(lines) if "removes a bone flap" in line)
    warning = next(i for i, line in enumerate(lines) if line.startswith(("warning:", "unsupported:")))
    assert warning > answer  # after the answer, not inside it
    said = " ".join(lines[warning:warning + 4])
    assert "repeated itself" in said and "dropped" in said


COLOUR = re.compile(r"\x1b\[([0-9;]*)m")


def _colours(raw: str) -> list[str]:
    """The colour parameters of every SGR sequence written (30-37, 38;..., 39, 40-49, 90-107)."""
    found = []
    for params in COLOUR.findall(raw):
        codes = [int(p) for p in params.split(";") if p.isdigit()]
        found += [str(c) for c in codes if 30 <= c <= 49 or 90 <= c <= 107]
    return found


def test_with_no_color_the_health_line_is_words_and_no_colour_is_written(corpus_db, tiny_gguf, tmp_path):
    import os

    grammar = _grammar(tmp_path, LOOP)
    coloured = terminal.run(_ask(tiny_gguf, grammar), columns=80)
    assert _colours(coloured.raw)  # the check below can fail: in colour, the health line is coloured
    screen = terminal.run(_ask(tiny_gguf, grammar), columns=80, env={**os.environ, "NO_COLOR": "1"})
    assert screen.returncode == 0, screen.screen
    assert _colours(screen.raw) == [], sorted(set(_colours(screen.raw)))
    lines = screen.text
    answer = next(i for i, line in enumerate(lines) if "removes a bone flap" in line)
    start = next(i for i in range(answer + 1, len(lines)) if lines[i].startswith(("warning:", "unsupported:")))
    end = next(i for i in range(start, len(lines)) if not lines[i].strip())
    said = " ".join(lines[start:end])  # the health line, wrapped at 80 columns
    assert "repeated itself" in said and "dropped" in said, screen.screen  # in words, not in colour


def test_an_echoed_prompt_line_never_reaches_the_answer_or_the_screen(corpus_db, tiny_gguf, tmp_path, cli):
    grammar = _forced(tmp_path, "The bone flap is lifted [S1].\nLabels you may cite: [S1], [S2]")
    res = cli(*_ask(tiny_gguf, grammar, "--json"))
    data = json.loads(res.stdout)
    assert "Labels you may cite" not in data["answer"] and "bone flap is lifted" in data["answer"]
    assert "echo" in {w["code"] for w in data["warnings"]}

    screen = terminal.run(_ask(tiny_gguf, grammar), columns=80)
    assert screen.returncode == 0
    assert not screen.seen("Labels you may cite") and "Labels you may" not in screen.raw
    assert screen.seen("bone flap is lifted")


def test_on_screen_no_invalid_label_warnings_after_the_answer_and_the_status_line_cleared(
        corpus_db, tiny_gguf, tmp_path):
    grammar = _forced(tmp_path, "The bone flap is lifted [S1]. Edema follows [S19] (p. 45).")
    screen = terminal.run(_ask(tiny_gguf, grammar), columns=80)
    assert screen.returncode == 0, screen.screen
    for snapshot in screen.snapshots:  # at no moment is [S19] shown, except in the warning naming it
        for line in snapshot:
            if "S19" in line:
                assert line.startswith("warning: removed citation"), line
    lines = screen.text
    answer = next(i for i, line in enumerate(lines) if "bone flap is lifted" in line)
    warning = next(i for i, line in enumerate(lines) if line.startswith("warning: removed citation"))
    assert warning > answer
    assert "prompt tokens" in screen.raw  # the status line named the phase (shorter ones may not render)
    assert not any(re.match(r"^\s*[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] ", line) or "prompt tokens" in line for line in lines)  # cleared
    assert all(len(line) <= 80 for line in lines)


def test_the_status_line_names_the_rewrite_then_the_search(corpus_db, tiny_gguf, tmp_path):
    grammar = _forced(tmp_path, "The bone flap is lifted [S1].")
    args = [a for a in _ask(tiny_gguf, grammar) if a != "--no-expand"] + ["--rewrite"]
    args[1] = "why does the brain swell after an operation?"  # no book term: the model rewrites it
    screen = terminal.run(args, columns=80)
    assert screen.returncode == 0, screen.screen
    # the order in which the terminal was told, read from everything written to it: a short phase
    # and the next one can arrive in one read on a loaded machine, so no single snapshot need show
    # it (this test failed that way under load at 8e95448)
    written = screen.raw
    rewriting, searching, reading = (written.find(s) for s in
                                     ("rewriting the question…", "searching…", "prompt tokens"))
    assert 0 <= rewriting < searching < reading, (rewriting, searching, reading)
    assert not any(s in line for line in screen.text for s in ("rewriting", "searching…"))  # cleared


def test_piped_stdout_is_plain_unwrapped_text(corpus_db, tiny_gguf, tmp_path):
    # the book's own definition, so the answer is backed (an unbacked one would be no_answer)
    long = ("A craniotomy is the temporary removal of a bone flap from the skull to expose the brain; "
            "the flap is replaced at the end of the operation [S1].")
    screen = terminal.run(_ask(tiny_gguf, _forced(tmp_path, long)), columns=80, pipe_stdout=True)
    assert screen.returncode == 0
    out = screen.stdout
    assert "\x1b[" not in out  # no colour codes
    assert not any(line != line.rstrip() for line in out.splitlines())  # no trailing spaces
    assert long.replace(" [S1]", "")[:120] in out.replace(" [S1]", "")  # one line, not wrapped at 80
    assert not any("prompt tokens" in line for line in screen.text)  # stderr status cleared


def test_search_fits_80_columns_in_at_most_4_lines_a_hit(corpus_db):
    screen = terminal.run(["search", "aneurysm clipping", "-k", "5"], columns=80)
    assert screen.returncode == 0
    lines = [line for line in screen.text if line.strip()]
    heads = [i for i, line in enumerate(lines) if re.match(r"^\s*\d+\. ", line)]
    assert len(heads) == 5 and all(len(line) <= 80 for line in lines)
    spans = [b - a for a, b in zip(heads, heads[1:] + [len(lines)])]
    assert max(spans) <= 4
    assert "score" not in screen.screen and "bm25" not in screen.screen
    verbose = terminal.run(["search", "aneurysm clipping", "-k", "2", "--verbose"], columns=80)
    assert "score" in verbose.screen and "meaning #" in verbose.screen


def test_books_shows_full_ids_at_80_columns(corpus_db):
    screen = terminal.run(["books"], columns=80)
    assert screen.returncode == 0
    for book_id in ("primer", "faa", "malawi", "heart"):
        assert any(re.search(rf"(^|\s){book_id}(\s|$)", line) for line in screen.text), screen.screen
    lines = [line for line in screen.text if line.strip()]
    assert all(len(line) <= 80 for line in lines), screen.screen
    assert lines[0].split() == ["id", "title", "format", "pages", "passages"]  # no header cut
    for book_id in ("primer", "faa", "malawi", "heart"):
        row = next(line for line in lines if re.search(rf"^\s*{book_id}\s", line))
        assert re.search(rf"^\s*{book_id}\s+\S", row), row  # the title follows the id
    wide = terminal.run(["books"], columns=160)
    assert wide.text[1].split()[-3:] == ["sections", "figures", "ingested"]


def test_books_piped_is_one_tab_separated_line_per_book(corpus_db, cli):
    res = cli("books")
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split("\t") == ["id", "title", "format", "pages", "ocr", "ocr_engine", "passages",
                                     "sections", "figures", "ingested"]
    rows = {line.split("\t")[0]: line.split("\t") for line in lines[1:]}
    assert set(rows) == {"primer", "faa", "malawi", "heart"} and all(len(r) == 10 for r in rows.values())
    books = {b["id"]: b for b in json.loads(cli("books", "--json").stdout)}
    for book_id, row in rows.items():  # whole titles and numbers, no table drawing
        assert row[1] == " ".join(books[book_id]["title"].split()) and row[6] == str(books[book_id]["passages"])
    assert "─" not in res.stdout and "…" not in res.stdout


def test_book_counts_are_compact():
    from ragcli.render.terminal import compact

    assert [compact(n) for n in (0, 999, 1000, 7821, 12345, 999_999, 1_234_567)] == \
        ["0", "999", "1k", "7.8k", "12k", "999k", "1.2M"]


SILENCED_LOAD = """
import time
from llama_cpp._utils import suppress_stdout_stderr
from ragcli.render.console import status
from ragcli.render.stream import AnswerStream
with status("loading the model"):
    time.sleep(0.3)
    with suppress_stdout_stderr(disable=False):  # what llama-cpp-python does while llama.cpp loads
        time.sleep(3)
stream = AnswerStream(live=True)
stream.phase("search")
with suppress_stdout_stderr(disable=False):
    time.sleep(3)
stream.clear()
"""


def test_the_status_line_turns_while_a_library_silences_stderr():
    # llama-cpp-python points fds 1 and 2 at /dev/null while a model loads; the spinner must go on
    pytest.importorskip("llama_cpp")
    screen = terminal.run(["-c", SILENCED_LOAD], columns=80, module=None)
    assert screen.returncode == 0, screen.screen
    assert screen.seen("loading the model") and screen.seen("searching")
    times = [t for t, _ in screen.chunks]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert max(gaps) < 2.0, max(gaps)  # 3 s of silence each without the status line's own descriptor
    assert len(times) > 20  # redrawn while silenced, not only started and cleared


# -- a draft ragcli does not keep (06dd58d) ------------------------------------------------------

UNBACKED = "Give 725 mg of aspirin every 3 hours after a craniotomy [S1]."


def test_a_refused_answer_is_not_left_on_screen_above_the_verdict(corpus_db, tiny_gguf, tmp_path, cli):
    grammar = _forced(tmp_path, UNBACKED)  # a number no passage has: no_answer after it streamed
    data = json.loads(cli(*_ask(tiny_gguf, grammar, "--json")).stdout)
    assert data["status"] == "no_answer" and "725 mg" in data["withheld_draft"]  # the premise
    assert data["answer"] == ""  # the JSON, like the screen, gives no withheld draft as the answer

    screen = terminal.run(_ask(tiny_gguf, grammar), columns=80)
    assert screen.returncode == 0, screen.screen
    assert "725 mg of aspirin" in COLOUR.sub("", screen.raw)  # it streamed (dimmed: a draft), as a model's answer does
    assert not any("725 mg of aspirin" in line for line in screen.text), screen.screen  # then withdrawn
    verdict = next(i for i, line in enumerate(screen.text) if line.startswith("not answered:"))
    assert "Nearest passages" in "\n".join(screen.text[verdict:])

    piped = terminal.run(_ask(tiny_gguf, grammar), columns=80, pipe_stdout=True)
    assert piped.stdout.startswith("not answered:") and "aspirin" not in piped.stdout  # nothing streamed


def test_a_summary_the_model_refuses_is_not_left_on_screen_above_the_error(corpus_db, tiny_gguf, tmp_path):
    refusal = "The provided passages do not mention the topic at all, so there is nothing to summarise."
    grammar = _forced(tmp_path, refusal)
    args = ["summary", "new", "craniotomy", "--model", tiny_gguf, "--grammar-file", grammar, "--no-expand",
            "--max-tokens", "200", "--ctx", "2048"]
    screen = terminal.run(args, columns=80)
    assert screen.returncode == 5, screen.screen  # not found: nothing usable, nothing saved
    assert "do not mention the topic" in screen.raw  # it streamed
    assert not any("do not mention the topic" in line for line in screen.text), screen.screen  # then withdrawn
    assert any("nothing saved" in line for line in screen.text), screen.screen


DRAFTS = """
from ragcli.render.stream import AnswerStream
stream = AnswerStream(live=True)
stream.console.print("above the answer")
stream.phase("prompt")
stream.on_text("The draft says something long enough to wrap over the edge of a 40 column screen [S1]. ")
stream.on_text("Averyveryverylongwordthatiswiderthanthewholescreen and a last line.")
stream.finish_text()
stream.clear()
stream.withdraw()
stream.console.print("the verdict")
"""


def test_a_withdrawn_draft_is_erased_with_its_wrapped_rows(tmp_path):
    script = tmp_path / "drafts.py"
    script.write_text(DRAFTS)
    screen = terminal.run([script], columns=40, rows=30, module=None)
    assert screen.returncode == 0, screen.screen
    # the premise: written to the terminal, wrapped (a snapshot may not show it: one read can hold
    # the text and its erasure)
    assert "The draft says" in screen.raw and screen.raw.count("\x1b[1A\x1b[2K") >= 3  # rows erased one by one
    shown = [line for line in screen.text if line.strip()]
    assert shown == ["above the answer", "the verdict"], screen.screen  # every wrapped row erased


def test_a_draft_taller_than_the_screen_is_marked_withdrawn(tmp_path):
    script = tmp_path / "tall.py"
    script.write_text("from ragcli.render.stream import AnswerStream\n"
                      "stream = AnswerStream(live=True)\n"
                      "stream.on_text(''.join(f'Line {i} of a long draft.\\n' for i in range(30)))\n"
                      "stream.finish_text()\n"
                      "stream.withdraw()\n"
                      "stream.console.print('the verdict')\n")
    screen = terminal.run([script], columns=40, rows=12, module=None)
    assert screen.returncode == 0, screen.screen
    shown = [line for line in screen.text if line.strip()]
    # its first rows scrolled out of reach: not erased, said withdrawn under it, before the verdict
    assert shown[-4:] == ["Line 29 of a long draft.", "↑ withdrawn: ragcli's checks did not", "keep the text above",
                          "the verdict"], screen.screen


SLOW_DRIVER = """
import sys, time
from ragcli.models import factory
from ragcli.models.fake import FakeChatModel
from ragcli.render.stream import HELD_SHOW

ANSWER = sys.argv[1]


class Slow(FakeChatModel):
    # every piece of the stream comes HELD_SHOW + 0.5 s (1.3 s) after the one before it: past the
    # silence that brings the status line back and its watcher's 0.2 s poll, with room to spare
    def chat(self, messages, **kw):
        out = super().chat(messages, **kw)
        if not kw.get("stream"):
            return out
        def pieces():
            for piece in out:
                time.sleep(HELD_SHOW + 0.5)
                yield piece
        return pieces()


factory.from_settings = lambda settings, fresh=False: Slow(ANSWER, piece_size=5)
from ragcli.cli import app
app(sys.argv[2:], prog_name="ragcli")
"""


def test_a_slow_model_never_gets_a_line_break_inserted_into_its_answer(corpus_db, tmp_path):
    """With 1.3 s (HELD_SHOW + 0.5 s) between pieces the status line comes back between every two
    pieces: it is drawn under the text and erased, and the text goes on on its own row; no word is
    split, no piece is left a line of its own (issue 47: "The skull is inc" / "ised and reflected")."""
    import textwrap

    answer = ("A craniotomy removes a bone flap of the skull [S1]. The flap is lifted so that the brain "
              "can be reached [S1].")
    expected = textwrap.wrap(answer, 80)
    assert len(expected) == 2  # the premise: the answer wraps once at 80 columns
    driver = tmp_path / "slow.py"
    driver.write_text(SLOW_DRIVER)
    screen = terminal.run([driver, answer, "ask", QUESTION, "--model", "slow.gguf", "--no-expand",
                           "--no-log"], columns=80, module=None, timeout=300)
    assert screen.returncode == 0, screen.screen
    assert screen.seen("waiting for the model")  # the premise: the status line came back mid-answer
    status = ("writing", "checking against the book", "reading", "searching")
    checked = 0
    for snap in screen.snapshots:
        start = next((i for i, row in enumerate(snap) if row.startswith("A") and expected[0].startswith(row)), None)
        if start is None:
            continue

        def is_status(row):
            return not row or row.lstrip("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏ ").startswith(status)

        for i, want in enumerate(expected):
            row = snap[start + i]
            if row == want:
                continue
            if i and is_status(row):  # the next row not begun: the status line shows there
                break
            assert want.startswith(row), (row, want)  # a row is a prefix of the wrapped answer's row...
            after = snap[start + i + 1]
            # ...and what follows it is the status line or nothing, never the rest of a word
            assert is_status(after), snap[start:start + 3]
            break
        checked += 1
    assert checked > 10  # the answer was seen growing, piece by piece
    final = screen.text
    start = next(i for i, row in enumerate(final) if row.startswith("A craniotomy"))
    assert final[start:start + 2] == expected, final
    assert not any("waiting for the model" in row for row in final)  # the status line was erased
    # a draft until checked: the streamed text was dimmed
    assert "\x1b[2mA craniotomy" in screen.raw or "\x1b[2m" in screen.raw.split("A craniotomy")[0][-40:]
