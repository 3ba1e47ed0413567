"""The system prompt's llama.cpp state saved to a file and loaded by a fresh model object (as a
fresh `ragcli ask` process would): real llama.cpp, the tiny generated GGUF, real files."""
from __future__ import annotations

import pytest

from conftest_llm import tiny_gguf  # noqa: F401  (fixture)
from ragcli.models.chat import Grammar
from ragcli.models.grammars import forced_text_grammar
from ragcli.models.llama_cpp import LlamaCppModel

pytest.importorskip("llama_cpp")

SYSTEM = (
    "You answer questions about books using only the numbered sources given. Cite every sentence "
    "with the label of its source, for example [S1]. If the sources do not answer, say so. "
)


def _messages(question: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]


def _fresh(path, cache):
    return LlamaCppModel(path, n_ctx=1024, n_threads=1, seed=7, temperature=0.0, prefix_cache=cache)


def _ask(model, question, max_tokens=12, constraint=None):
    out = model.chat(_messages(question), max_tokens=max_tokens, constraint=constraint)
    return out, dict(model.stats)


def test_a_fresh_model_loads_the_saved_prefix_and_evaluates_only_the_rest(tiny_gguf, tmp_path):  # noqa: F811
    cache = tmp_path / "states"
    first_out, first = _ask(_fresh(tiny_gguf, cache), "First question about splints?")
    files = list(cache.glob("*.state"))
    assert len(files) == 1
    # the first object evaluated everything (the prefix to save it, then the rest)
    assert first["prompt_evaluated"] == first["prompt_tokens"] and first["prompt_from_disk"] == 0

    second = _fresh(tiny_gguf, cache)
    prefix = second.system_prefix(SYSTEM)
    assert len(prefix) >= second.count_tokens(SYSTEM)
    out, stats = _ask(second, "Second, different question about burns?")
    assert stats["prompt_from_disk"] == len(prefix)
    assert stats["prompt_evaluated"] == stats["prompt_tokens"] - len(prefix)
    assert stats["prompt_cached"] + stats["prompt_evaluated"] == stats["prompt_tokens"]

    # the same reply as a model that evaluates the whole prompt itself (temperature 0, seeded)
    plain_out, plain = _ask(_fresh(tiny_gguf, False), "Second, different question about burns?")
    assert plain["prompt_evaluated"] == plain["prompt_tokens"] and plain["prompt_from_disk"] == 0
    assert out == plain_out
    assert first_out == _ask(_fresh(tiny_gguf, False), "First question about splints?")[0]


def test_a_second_call_in_the_same_process_does_not_reload(tiny_gguf, tmp_path):  # noqa: F811
    cache = tmp_path / "states"
    _ask(_fresh(tiny_gguf, cache), "Warm the file?")
    model = _fresh(tiny_gguf, cache)
    _ask(model, "One?")
    assert model.stats["prompt_from_disk"] > 0
    _, stats = _ask(model, "Two, another one?")
    assert stats["prompt_from_disk"] == 0 and stats["prompt_cached"] >= len(model.system_prefix(SYSTEM))


def test_forced_output_is_the_same_through_the_cache(tiny_gguf, tmp_path):  # noqa: F811
    cache = tmp_path / "states"
    grammar = Grammar(forced_text_grammar("the answer [S1]"))
    _ask(_fresh(tiny_gguf, cache), "Warm?", constraint=grammar)
    out, stats = _ask(_fresh(tiny_gguf, cache), "Question?", max_tokens=30, constraint=grammar)
    assert out == "the answer [S1]" and stats["prompt_from_disk"] > 0


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "flipped"])
def test_a_corrupt_state_file_is_ignored_and_replaced(tiny_gguf, tmp_path, damage):  # noqa: F811
    cache = tmp_path / "states"
    _ask(_fresh(tiny_gguf, cache), "Warm?")
    (path,) = cache.glob("*.state")
    data = path.read_bytes()
    broken = {"garbage": b"not a state" * 100, "truncated": data[: len(data) // 2], "empty": b"",
              "flipped": data[:-10] + bytes(b ^ 0xFF for b in data[-10:])}[damage]
    path.write_bytes(broken)
    model = _fresh(tiny_gguf, cache)
    out, stats = _ask(model, "After the damage?")
    assert stats["prompt_from_disk"] == 0 and stats["prompt_evaluated"] == stats["prompt_tokens"]
    assert out == _ask(_fresh(tiny_gguf, False), "After the damage?")[0]
    assert path.read_bytes() == data  # saved again, whole
    _, again = _ask(_fresh(tiny_gguf, cache), "And the next process?")
    assert again["prompt_from_disk"] > 0


def test_the_switch_turns_it_off(tiny_gguf, tmp_path, monkeypatch):  # noqa: F811
    cache = tmp_path / "states"
    monkeypatch.setenv("RAGCLI_PREFIX_CACHE", "0")
    for question in ("One?", "Two?"):
        _, stats = _ask(_fresh(tiny_gguf, cache), question)
        assert stats["prompt_from_disk"] == 0 and stats["prompt_evaluated"] == stats["prompt_tokens"]
    assert not cache.exists()
    monkeypatch.delenv("RAGCLI_PREFIX_CACHE")
    _ask(_fresh(tiny_gguf, False), "Off by argument?")
    assert not cache.exists()


def test_the_config_key_turns_it_off(tiny_gguf, tmp_path, monkeypatch):  # noqa: F811
    from ragcli.config import model_settings
    from ragcli.models.factory import from_settings

    config = tmp_path / "config.toml"
    config.write_text(f'[model]\npath = "{tiny_gguf}"\nprefix_cache = false\nn_ctx = 1024\nthreads = 1\n')
    monkeypatch.setenv("RAGCLI_CONFIG", str(config))
    monkeypatch.setenv("RAGCLI_CACHE", str(tmp_path / "cache"))
    model = from_settings(model_settings(), fresh=True)
    assert model.params["prefix_cache"] is None
    _ask(model, "Anything?")
    assert model.stats["prompt_from_disk"] == 0 and not (tmp_path / "cache" / "prefix-states").exists()
    config.write_text(f'[model]\npath = "{tiny_gguf}"\nn_ctx = 1024\nthreads = 1\n')
    model = from_settings(model_settings(), fresh=True)
    assert model.params["prefix_cache"] == str(tmp_path / "cache" / "prefix-states")
    _ask(model, "Anything?")
    assert len(list((tmp_path / "cache" / "prefix-states").glob("*.state"))) == 1


def test_the_folder_keeps_a_few_files(tiny_gguf, tmp_path):  # noqa: F811
    from ragcli.models import prefix_cache

    cache = tmp_path / "states"
    model = _fresh(tiny_gguf, cache)
    for i in range(prefix_cache.KEEP + 2):
        system = f"System prompt number {i}: " + SYSTEM
        model.chat([{"role": "system", "content": system}, {"role": "user", "content": "Hi?"}], max_tokens=2)
    assert len(list(cache.glob("*.state"))) == prefix_cache.KEEP
    assert not list(cache.glob(".*.tmp"))


def test_without_a_system_message_nothing_is_saved(tiny_gguf, tmp_path):  # noqa: F811
    cache = tmp_path / "states"
    model = _fresh(tiny_gguf, cache)
    model.chat([{"role": "user", "content": SYSTEM + " What?"}], max_tokens=2)
    assert model.stats["prompt_from_disk"] == 0 and not cache.exists()


@pytest.mark.parametrize("state", ["zeros", "short", "random"])
def test_a_state_llama_cpp_refuses_is_replaced(tiny_gguf, tmp_path, state):  # noqa: F811
    """A file whose header and checksum are right but whose state llama.cpp cannot take."""
    import random

    from ragcli.models import prefix_cache

    cache = tmp_path / "states"
    model = _fresh(tiny_gguf, cache)
    _ask(model, "Warm?")
    (path,) = cache.glob("*.state")
    prefix = model.system_prefix(SYSTEM)
    real = prefix_cache.read(cache, path.stem, prefix)
    bad = {"zeros": bytes(len(real)), "short": real[: len(real) // 3],
           "random": random.Random(3).randbytes(len(real))}[state]
    assert prefix_cache.write(cache, path.stem, prefix, bad)
    out, stats = _ask(_fresh(tiny_gguf, cache), "Refused?")
    assert stats["prompt_from_disk"] == 0 and stats["prompt_evaluated"] == stats["prompt_tokens"]
    assert out == _ask(_fresh(tiny_gguf, False), "Refused?")[0]
    assert prefix_cache.read(cache, path.stem, prefix) == real


def test_the_worked_example_after_the_system_prompt_is_part_of_the_saved_prefix(tiny_gguf, tmp_path):  # noqa: F811
    """As every call of an ask begins (system_prompt.ANSWER_PREFIX): system, example question, example answer."""
    from ragcli.models.llama_cpp import fixed_head

    head = [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Example: what splints a finger? [S1] a stick."},
            {"role": "assistant", "content": "A stick splints a finger [S1]."}]
    cache = tmp_path / "states"
    _fresh(tiny_gguf, cache).chat([*head, {"role": "user", "content": "Warm?"}], max_tokens=4)
    model = _fresh(tiny_gguf, cache)
    out = model.chat([*head, {"role": "user", "content": "A different question?"}], max_tokens=6)
    stats = dict(model.stats)
    assert fixed_head([*head, {"role": "user", "content": "q"}]) == head
    assert stats["prompt_from_disk"] == len(model.system_prefix(head))
    assert stats["prompt_from_disk"] > len(model.system_prefix(SYSTEM)) + model.count_tokens(head[2]["content"])
    plain = _fresh(tiny_gguf, False)
    assert out == plain.chat([*head, {"role": "user", "content": "A different question?"}], max_tokens=6)
    # a conversation's later turns are not part of it: the same file serves a follow-up
    follow = [*head, {"role": "user", "content": "First?"}, {"role": "assistant", "content": "One."},
              {"role": "user", "content": "And then?"}]
    assert fixed_head(follow) == head
    third = _fresh(tiny_gguf, cache)
    third.chat(follow, max_tokens=4)
    assert third.stats["prompt_from_disk"] == stats["prompt_from_disk"]
    assert len(list(cache.glob("*.state"))) == 1
