"""An answer cut in the middle of a citation mark never shows the half mark, and a label repeated
across a sentence boundary is shown once: in the citation filter, through llama.cpp in process and
through a server (llama-cpp-python's, serving the tiny GGUF)."""
from __future__ import annotations

import json
import re

import pytest

from conftest_http import llama_server  # noqa: F401
from ragcli.answer.citations import UNFINISHED, StreamFilter, validate
from ragcli.models.chat import Grammar
from ragcli.models.grammars import forced_text_grammar

VALID = {"S1", "S2", "S3", "S5"}
HALF_MARK = re.compile(r"[\[(【［][^\])】］]*$")  # an opening bracket never closed


def _streamed(text: str, size: int) -> str:
    stream = StreamFilter(VALID)
    out = "".join(stream.feed(text[i:i + size]) for i in range(0, len(text), size))
    return out + stream.flush()


@pytest.mark.parametrize("cut", ["Press on the wound [S1] (p. 99", "Press on the wound [S1] (p.",
                                 "Press on the wound [S", "Press on the wound [S1, S",
                                 "Press on the wound (see pa", "Press on the wound [S1] (Source 2",
                                 "Press on the wound ^[S"])
def test_a_text_that_ends_inside_a_mark_never_shows_it(cut):
    result = validate(cut, VALID)
    assert result.text.startswith("Press on the wound") and not HALF_MARK.search(result.text), result.text
    assert [r.reason for r in result.removed][-1] == UNFINISHED
    for size in (1, 3, 7):
        assert _streamed(cut, size) == result.text


@pytest.mark.parametrize("text", ["Press (for example", "Press (", "the array x[", "Press [", "Press (1"])
def test_an_unclosed_bracket_that_cannot_be_a_mark_stays_text(text):
    assert validate(text, VALID).text == text


def test_a_label_repeated_across_a_sentence_boundary_is_shown_once():
    text = ("Keep him warm with dry clothing [S3]. [S3] Use body heat if nothing else [S5]. [S5] Avoid "
            "walking on the foot [S5].\n[S5] Elevate it.")
    result = validate(text, VALID)
    assert result.text == ("Keep him warm with dry clothing [S3]. Use body heat if nothing else [S5]. Avoid "
                           "walking on the foot [S5].\nElevate it.")
    assert result.removed == [] and result.citations == ["S3", "S5"]
    assert all(_streamed(text, size) == result.text for size in (1, 4, 9))
    # a different label opening the next sentence, or one inside a sentence, stays
    assert validate("Dry [S3]. [S5] Warm [S5].", VALID).text == "Dry [S3]. [S5] Warm [S5]."
    assert validate("Dry [S3] and [S3] warm.", VALID).text == "Dry [S3] and [S3] warm."
    assert validate("Dry [S1][S3]. [S3][S5] Warm.", VALID).text == "Dry [S1][S3]. [S5] Warm."


FORCED = "Press firmly on the wound (p. 999) and hold it [S1]."


def _cuts_inside_the_mark(model) -> list[int]:
    """The --max-tokens values at which the model's own reply stops inside "(p. 999)"."""
    messages = [{"role": "system", "content": "You answer."}, {"role": "user", "content": "Say it."}]
    found = []
    for n in range(1, 40):
        raw = model.chat(messages, max_tokens=n, constraint=Grammar(forced_text_grammar(FORCED)))
        if "(p" in raw and ")" not in raw:
            found.append(n)
        if raw == FORCED:
            break
    assert found, "no token limit cuts the reply inside the mark: the test would prove nothing"
    return found


def _ask(cli, model: str, grammar, max_tokens: int) -> dict:
    result = cli("ask", "what is a craniotomy?", "--json", "--model", model, "--grammar-file", grammar,
                 "--no-expand", "--max-tokens", str(max_tokens), "--ctx", "2048", "--book", "primer")
    assert "Traceback" not in result.output
    return json.loads(result.stdout)


def test_no_half_mark_at_a_max_tokens_cut_in_process(corpus_db, cli, tiny_gguf, tmp_path):
    from ragcli.models.factory import load_model

    cuts = _cuts_inside_the_mark(load_model(str(tiny_gguf), n_ctx=2048, threads=1, max_tokens=64))
    grammar = tmp_path / "forced.gbnf"
    grammar.write_text(forced_text_grammar(FORCED))
    for n in cuts[:2]:
        data = _ask(cli, str(tiny_gguf), grammar, n)
        assert data["answer"].startswith("Press firmly on the wound"), data["answer"]
        assert "(p" not in data["answer"] and not HALF_MARK.search(data["answer"]), (n, data["answer"])


def test_no_half_mark_at_a_max_tokens_cut_over_a_server(corpus_db, cli, llama_server, tmp_path):  # noqa: F811
    from ragcli.models.openai_http import HttpChatModel

    cuts = _cuts_inside_the_mark(HttpChatModel(llama_server))
    grammar = tmp_path / "forced.gbnf"
    grammar.write_text(forced_text_grammar(FORCED))
    for n in cuts[:2]:
        data = _ask(cli, llama_server, grammar, n)
        assert data["model"]["backend"] == "openai-http"
        assert data["answer"].startswith("Press firmly on the wound"), data["answer"]
        assert "(p" not in data["answer"] and not HALF_MARK.search(data["answer"]), (n, data["answer"])
