"""The chat-model layer: real llama.cpp with a tiny generated GGUF, grammars, errors, the fake."""
from __future__ import annotations

import json
import sys

import pytest

from conftest_llm import tiny_gguf  # noqa: F401  (fixture; also imported by conftest.py)
from ragcli.errors import ModelError
from ragcli.models.chat import Grammar, OneLine
from ragcli.models.factory import load_model
from ragcli.models.fake import FakeChatModel
from ragcli.models.gguf import gguf_metadata, trained_context
from ragcli.models.grammars import (
    forced_text_grammar, one_line_grammar, parse_verdicts, verdicts_constraint,
)
from ragcli.models.llama_cpp import LlamaCppModel
from tinymodel import (
    CONTEXT_LENGTH,
    GEMMA_LIKE_TEMPLATE,
    MERGES,
    tiny_vocab,
    write_tiny_gguf,
)

SYSTEM = (
    "You answer questions about books using only the numbered sources given. Cite every sentence "
    "with the label of its source, for example [S1]. If the sources do not answer, say so. "
)


def _messages(question: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]


@pytest.fixture()
def model(tiny_gguf):  # noqa: F811
    pytest.importorskip("llama_cpp")
    # the saved-state cache off: these tests measure the cache of one process (test_prefix_cache.py: files)
    return LlamaCppModel(tiny_gguf, n_ctx=1024, n_threads=1, seed=7, prefix_cache=False)


# ------------------------------------------------------------------ the tiny GGUF itself


def test_tiny_gguf_file(tiny_gguf):  # noqa: F811
    data = tiny_gguf.read_bytes()
    assert data[:4] == b"GGUF"
    assert 50_000 < len(data) < 1_000_000
    meta = gguf_metadata(tiny_gguf)
    assert meta["general.architecture"] == "llama"
    assert trained_context(meta) == CONTEXT_LENGTH


def test_tiny_vocab_covers_bytes_and_merges():
    tokens, types, merges = tiny_vocab()
    assert len(set(tokens[:256])) == 256
    assert len(tokens) == len(types) == len(set(tokens))
    assert merges and all(a + b in tokens for a, b in MERGES)


# ------------------------------------------------------------------ real llama.cpp


def test_load_reports_name_and_params(model, tiny_gguf):  # noqa: F811
    assert model.name == "ragcli-tiny-test (F32)"  # the header's name, then the file type's quantisation
    assert model.context_size == 1024
    assert model.params["n_ctx_train"] == CONTEXT_LENGTH
    assert model.params["file"] == tiny_gguf.name
    assert model.params["seed"] == 7


def test_count_tokens_uses_merges(model):
    assert model.count_tokens(" the") == 1  # "Ġ t" -> "Ġt", "Ġt he" -> "Ġthe"
    assert model.count_tokens("xyz") == 3
    assert model.count_tokens("<|im_start|>") == 1


def test_plain_generation_returns_text(model):
    out = model.chat(_messages("What is a tourniquet?"), max_tokens=8)
    assert isinstance(out, str)
    assert 1 <= model.stats["generated_tokens"] <= 8


def test_grammar_forces_exact_output(model):
    text = "Hello [S9] world [S1]."
    out = model.chat(_messages("Say hello."), max_tokens=64, constraint=Grammar(forced_text_grammar(text)))
    assert out == text


def test_forced_text_with_quotes_and_newlines(model):
    text = 'He said "stop".\nThen \\ left.'
    out = model.chat(_messages("Quote."), max_tokens=64, constraint=Grammar(forced_text_grammar(text)))
    assert out == text


def test_stream_pieces_join_to_non_stream_output(model):
    grammar = one_line_grammar(40)
    whole = model.chat(_messages("Rewrite: bleeding leg"), max_tokens=24, constraint=Grammar(grammar))
    pieces = list(model.chat(_messages("Rewrite: bleeding leg"), max_tokens=24, constraint=Grammar(grammar),
                             stream=True))
    assert len(pieces) > 1
    assert "".join(pieces) == whole
    assert model.stats["generated_tokens"] >= 1


def test_one_line_grammar_output(model):
    out = model.chat(_messages("Rewrite: burns"), max_tokens=60, constraint=OneLine(30))
    assert 1 <= len(out) <= 30
    assert "\n" not in out and not out.startswith(" ")


def test_json_verdicts_grammar_yields_parseable_json(model):
    out = model.chat(_messages("Judge."), max_tokens=120, constraint=verdicts_constraint(3))
    data = json.loads(out)
    assert [item["claim"] for item in data] == [1, 2, 3]
    assert all(v in ("supported", "partial", "unsupported") for v in parse_verdicts(out, 3))


def test_second_call_reuses_system_prompt_cache(model):
    grammar = forced_text_grammar("ok")
    model.chat(_messages("First question about splints?"), max_tokens=8, constraint=Grammar(grammar))
    first = dict(model.stats)
    model.chat(_messages("Second, different question about burns?"), max_tokens=8,
               constraint=Grammar(grammar))
    second = dict(model.stats)
    system_tokens = model.count_tokens(SYSTEM)
    assert first["prompt_cached"] == 0
    assert first["prompt_evaluated"] == first["prompt_tokens"]
    assert second["prompt_cached"] >= system_tokens
    assert second["prompt_evaluated"] < first["prompt_evaluated"]
    assert second["prompt_evaluated"] + second["prompt_cached"] == second["prompt_tokens"]


def test_stream_stats_report_cache(model):
    grammar = forced_text_grammar("fine")
    model.chat(_messages("One?"), max_tokens=8, constraint=Grammar(grammar))
    pieces = model.chat(_messages("Two?"), max_tokens=8, constraint=Grammar(grammar), stream=True)
    assert "".join(pieces) == "fine"
    assert model.stats["prompt_cached"] >= model.count_tokens(SYSTEM)
    assert model.stats["prompt_evaluated"] < model.stats["prompt_tokens"]


def test_prompt_longer_than_context_is_model_error(model):
    with pytest.raises(ModelError):
        model.chat(_messages("word " * 300), max_tokens=8)


def test_invalid_grammar_is_model_error(model):
    with pytest.raises(ModelError, match="Undefined rule identifier 'foo'"):
        model.chat(_messages("x"), max_tokens=4, constraint=Grammar("root ::= foo"))
    with pytest.raises(ModelError, match="invalid GBNF"):
        model.chat(_messages("x"), max_tokens=4, constraint=Grammar("root ::= [unclosed"))


def test_template_refusing_system_role_gets_it_merged(tmp_path):
    pytest.importorskip("llama_cpp")
    path = write_tiny_gguf(tmp_path / "gemma-like.gguf", chat_template=GEMMA_LIKE_TEMPLATE)
    model = LlamaCppModel(path, n_ctx=1024, n_threads=1)
    out = model.chat(_messages("Hi?"), max_tokens=8, constraint=Grammar(forced_text_grammar("Hi [S1].")))
    assert out == "Hi [S1]."
    with pytest.raises(ModelError, match="chat template refused"):
        model.chat([{"role": "system", "content": "only a system message"}], max_tokens=4)


def test_model_without_template_uses_chatml(tmp_path):
    pytest.importorskip("llama_cpp")
    model = LlamaCppModel(write_tiny_gguf(tmp_path / "plain.gguf", chat_template=None),
                          n_ctx=1024, n_threads=1)
    assert model.chat(_messages("Hi?"), max_tokens=8, constraint=Grammar(forced_text_grammar("ok"))) == "ok"
    assert model.stats["prompt_tokens"] > model.count_tokens(SYSTEM)


def test_load_model_none_and_shared_instance(tiny_gguf):  # noqa: F811
    pytest.importorskip("llama_cpp")
    assert load_model(None) is None
    assert load_model("") is None
    a = load_model(str(tiny_gguf), n_ctx=256, threads=1, max_tokens=100)
    b = load_model(tiny_gguf, n_ctx=256, n_threads=1)
    assert a is b
    assert a.context_size == 256


# ------------------------------------------------------------------ errors


def test_missing_file(tmp_path):
    with pytest.raises(ModelError, match="not found"):
        LlamaCppModel(tmp_path / "nope.gguf")


def test_directory_is_not_a_model(tmp_path):
    with pytest.raises(ModelError, match="not a file"):
        LlamaCppModel(tmp_path)


def test_garbage_file_is_not_gguf(tmp_path):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"this is not a model at all\x00\x01" * 10)
    with pytest.raises(ModelError, match="not a GGUF"):
        LlamaCppModel(bad)


def test_truncated_gguf(tmp_path, tiny_gguf):  # noqa: F811
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(tiny_gguf.read_bytes()[:40])
    with pytest.raises(ModelError):
        LlamaCppModel(bad)


def test_gguf_header_with_broken_tensors_fails_to_load(tmp_path, tiny_gguf):  # noqa: F811
    pytest.importorskip("llama_cpp")
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(tiny_gguf.read_bytes()[:-50_000])
    with pytest.raises(ModelError, match="cannot load"):
        LlamaCppModel(bad, n_ctx=256)


def test_n_ctx_larger_than_trained(tiny_gguf):  # noqa: F811
    with pytest.raises(ModelError, match=str(CONTEXT_LENGTH)):
        LlamaCppModel(tiny_gguf, n_ctx=CONTEXT_LENGTH * 2)


def test_llama_cpp_not_installed(tiny_gguf, monkeypatch):  # noqa: F811
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` fail
    with pytest.raises(ModelError, match="llama-cpp-python is not installed"):
        LlamaCppModel(tiny_gguf, n_ctx=256)


def test_errors_have_model_exit_code():
    assert ModelError("x").exit_code == 6


# ------------------------------------------------------------------ the fake


def test_fake_queued_replies_and_calls():
    fake = FakeChatModel(["one", "two"])
    assert fake.chat([{"role": "user", "content": "a"}], max_tokens=5) == "one"
    assert fake.chat([{"role": "user", "content": "b"}], max_tokens=6, constraint=Grammar("g")) == "two"
    assert [c["messages"][0]["content"] for c in fake.calls] == ["a", "b"]
    assert fake.calls[1]["constraint"] == Grammar("g") and fake.calls[1]["max_tokens"] == 6
    with pytest.raises(AssertionError):
        fake.chat([{"role": "user", "content": "c"}], max_tokens=5)


def test_fake_function_and_stream():
    fake = FakeChatModel(lambda messages: "echo: " + messages[-1]["content"])
    pieces = list(fake.chat([{"role": "user", "content": "hello"}], max_tokens=5, stream=True))
    assert "".join(pieces) == "echo: hello"
    assert all(1 <= len(p) <= 3 for p in pieces)
    assert fake.calls[0]["stream"] is True


def test_fake_fixed_reply_and_counting():
    fake = FakeChatModel("same")
    assert [fake.chat([], max_tokens=1) for _ in range(3)] == ["same"] * 3
    assert fake.count_tokens("") == 1
    assert fake.count_tokens("abcdefgh") == 3
    assert fake.stats["generated_tokens"] == 2


# ------------------------------------------------------------------ grammar text


def test_forced_text_grammar_escapes():
    g = forced_text_grammar('a"b\\c\nd')
    assert g == 'root ::= "a\\"b\\\\c\\nd"\n'
    with pytest.raises(ValueError):
        forced_text_grammar("")


def test_parse_verdicts_tolerates_bad_json():
    assert parse_verdicts("not json", 2) == [None, None]
    assert parse_verdicts('[{"claim": 2, "verdict": "supported"}, {"claim": 9}]', 2) == [
        None, "supported"]


def test_any_text_can_be_forced_through_llama_cpp(tiny_gguf):  # noqa: F811
    """Property: GBNF escaping + incremental UTF-8 decoding reproduce arbitrary text exactly."""
    pytest.importorskip("llama_cpp")
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    model = LlamaCppModel(tiny_gguf, n_ctx=1024, n_threads=1)
    alphabet = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.text(alphabet=alphabet, min_size=1, max_size=24))
    def check(text):
        grammar = forced_text_grammar(text)
        assert model.chat(_messages("Repeat."), max_tokens=120, constraint=Grammar(grammar)) == text
        streamed = model.chat(_messages("Repeat."), max_tokens=120, constraint=Grammar(grammar), stream=True)
        assert "".join(streamed) == text

    check()
