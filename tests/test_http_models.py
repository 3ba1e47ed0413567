"""The HTTP backend against real servers on 127.0.0.1: llama-cpp-python's own OpenAI-compatible
server serving the tiny GGUF, and a fault-injecting server for what real servers rarely do on
demand (a stream cut, HTTP 500, a slow first byte, two models, a rerank endpoint)."""
from __future__ import annotations

import json
import re

import pytest

from conftest_http import SERVER_KEY, FaultServer, fault_server, llama_server, llama_server_with_key  # noqa: F401
from ragcli.errors import UsageError
from ragcli.models.chat import Grammar, OneLine
from ragcli.models.grammars import forced_text_grammar, parse_verdicts, verdicts_constraint

LABEL = re.compile(r"\[([A-Z]\d+)\]")
FORCED = "The bone flap is lifted [S1]. Edema follows [S19] (p. 45). Ask [Source 7] or [S2, S30]."


def _connect(url, **opts):
    from ragcli.models.openai_http import HttpChatModel

    return HttpChatModel(url, **opts)


def _config(tmp_path, monkeypatch, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text)
    monkeypatch.setenv("RAGCLI_CONFIG", str(path))
    return path


# ------------------------------------------------------------------ llama-cpp-python's server


def test_server_is_recognised_and_constrained(llama_server):  # noqa: F811
    model = _connect(llama_server, seed=3)
    assert model.server.kind == "llama-cpp-python" and model.name == "tiny" and model.structured == "grammar"
    assert model.tokens_exact and model.count_tokens("the bleeding") > 2
    messages = [{"role": "system", "content": "You answer."}, {"role": "user", "content": "Say it."}]
    assert model.chat(messages, max_tokens=64, constraint=Grammar(forced_text_grammar("Press here [S1]."))) \
        == "Press here [S1]."
    pieces = list(model.chat(messages, max_tokens=64, stream=True,
                             constraint=Grammar(forced_text_grammar("Press here [S1]."))))
    assert "".join(pieces) == "Press here [S1]." and len(pieces) > 1  # really streamed
    line = model.chat(messages, max_tokens=30, constraint=OneLine(20))
    assert "\n" not in line and 1 <= len(line) <= 20
    verdicts = parse_verdicts(model.chat(messages, max_tokens=120, constraint=verdicts_constraint(2)), 2)
    assert all(v in ("supported", "partial", "unsupported") for v in verdicts)


def test_ask_over_http_strips_forced_invalid_citations(corpus_db, cli, llama_server, tmp_path, fingerprint):  # noqa: F811
    grammar = tmp_path / "forced.gbnf"
    grammar.write_text(forced_text_grammar(FORCED))
    before = fingerprint(corpus_db)
    result = cli("ask", "what is a craniotomy?", "--json", "--model", llama_server, "--grammar-file", grammar,
                 "--no-expand", "--max-tokens", "160", "--book", "primer", "--no-log")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["status"] == "answered", data["warnings"]  # the forced text ends before 160 tokens
    assert set(LABEL.findall(data["answer"])) <= {s["label"] for s in data["sources"]}
    assert "[S19]" not in data["answer"] and "S30" not in data["answer"] and "(p. 45)" not in data["answer"]
    assert {"[S19]", "(p. 45)"} <= {r["text"] for r in data["removed_citations"]}
    assert data["model"] == {"backend": "openai-http", "server": "llama-cpp-python", "url": llama_server,
                             "name": "tiny", "n_ctx": 2048, "temperature": 0.2, "seed": 0, "structured": "grammar"}
    assert fingerprint(corpus_db) == before  # ask --no-log writes nothing


def test_ask_verify_over_http(corpus_db, cli, llama_server, tmp_path):  # noqa: F811
    grammar = tmp_path / "g.gbnf"
    grammar.write_text(forced_text_grammar("An aneurysm can rupture [S1]. Bones heal slowly."))
    result = cli("ask", "can an aneurysm rupture?", "--json", "--model", llama_server, "--grammar-file", grammar,
                 "--no-expand", "--verify", "--max-tokens", "64", "--book", "primer")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    verification = data["verification"]
    assert verification and len(verification["verdicts"]) >= 1
    assert all(v["verdict"] in ("supported", "partial", "unsupported") for v in verification["verdicts"])


def test_summary_new_over_http_records_the_model(corpus_db, cli, llama_server, tmp_path):  # noqa: F811
    forced = "## Rupture\n- An aneurysm can rupture [S1]. It bleeds [S9] (p. 45).\n"
    grammar = tmp_path / "forced.gbnf"
    grammar.write_text(forced_text_grammar(forced))
    result = cli("summary", "new", "Aneurysms", "--json", "--model", llama_server, "--grammar-file", grammar,
                 "--no-expand", "--max-tokens", "160", "-k", "6", "--keep-weak")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["model"]["backend"] == "openai-http" and data["model"]["url"] == llama_server
    assert data["model"]["name"] == "tiny"
    assert "(p. 45)" not in data["text"] and set(LABEL.findall(data["text"])) <= {s["label"] for s in data["sources"]}
    shown = json.loads(cli("summary", "show", "aneurysms", "1", "--json").stdout)
    assert shown["model"] == data["model"]


def test_api_key_from_the_environment_only_and_never_shown(corpus_db, cli, llama_server_with_key, tmp_path,  # noqa: F811
                                                         monkeypatch):
    refused = cli("ask", "what is a craniotomy?", "--model", llama_server_with_key, "--no-expand", "--book", "primer")
    assert refused.exit_code == 6 and "401" in refused.stderr and "RAGCLI_API_KEY" in refused.stderr
    _config(tmp_path, monkeypatch, f'[models.guarded]\nurl = "{llama_server_with_key}"\napi_key_env = "MY_KEY"\n')
    monkeypatch.setenv("MY_KEY", SERVER_KEY)
    grammar = tmp_path / "g.gbnf"
    grammar.write_text(forced_text_grammar("Lifted [S1]."))
    ok = cli("ask", "what is a craniotomy?", "--json", "--model", "guarded", "--grammar-file", grammar,
             "--no-expand", "--book", "primer", "--max-tokens", "16")
    assert ok.exit_code == 0, ok.output
    assert SERVER_KEY not in ok.stdout and SERVER_KEY not in ok.stderr
    assert json.loads(ok.stdout)["model"]["profile"] == "guarded"


# ------------------------------------------------------------------ faults


def test_connection_refused_is_one_line(corpus_db, cli):
    from conftest_http import free_port

    url = f"http://user:pw@127.0.0.1:{free_port()}/v1"
    result = cli("ask", "what is a craniotomy?", "--model", url, "--no-expand")
    assert result.exit_code == 6 and "cannot reach the model server" in result.stderr
    assert "pw@" not in result.stderr and "Traceback" not in result.output


def test_two_models_need_a_name(fault_server, corpus_db, cli):  # noqa: F811
    fault_server.models = ["alpha", "beta"]
    result = cli("ask", "what is a craniotomy?", "--model", fault_server.url, "--no-expand")
    assert result.exit_code == 6 and "--model-name" in result.stderr and "alpha, beta" in result.stderr
    unknown = cli("ask", "what is a craniotomy?", "--model", fault_server.url, "--model-name", "gamma", "--no-expand")
    assert unknown.exit_code == 6 and "'gamma'" in unknown.stderr
    fault_server.reply = "A flap is lifted [S1]. More [S40]."
    ok = cli("ask", "what is a craniotomy?", "--json", "--model", fault_server.url, "--model-name", "beta",
             "--no-expand", "--book", "primer")
    assert ok.exit_code == 0, ok.output
    data = json.loads(ok.stdout)
    assert data["model"]["name"] == "beta" and data["model"]["server"] == "openai-compatible"
    assert "[S40]" not in data["answer"] and fault_server.requests[-1]["model"] == "beta"


def test_stream_cut_keeps_the_validated_part(fault_server, corpus_db, cli):  # noqa: F811
    fault_server.mode = "cut"
    fault_server.reply = "Lift the flap [S1]. It heals [S40] over weeks and weeks of rest."
    result = cli("ask", "what is a craniotomy?", "--json", "--model", fault_server.url, "--no-expand", "--book", "primer")
    assert result.exit_code == 6 and "cut" in result.stderr
    data = json.loads(result.stdout)
    # the sentence keeps a label of a given source: the model's [S1], or the one ragcli found backs it
    first = re.match(r"Lift the flap \[(S\d+)\]\.", data["answer"])
    assert data["status"] == "incomplete" and first and first.group(1) in {s["label"] for s in data["sources"]}
    assert "[S40]" not in data["answer"] and "heals" in data["answer"] and "rest" not in data["answer"]
    assert not re.search(r"\[[^\]]*$", data["answer"])  # no label left half written by the cut


def test_summary_saves_nothing_from_a_cut_stream(fault_server, corpus_db, cli, fingerprint):  # noqa: F811
    fault_server.mode = "cut"
    before = fingerprint(corpus_db)
    result = cli("summary", "new", "Aneurysms", "--model", fault_server.url, "--no-expand", "-k", "4")
    assert result.exit_code == 6 and "Traceback" not in result.output
    assert fingerprint(corpus_db) == before


def test_http_500_and_slow_first_byte(fault_server, corpus_db, cli, tmp_path, monkeypatch):  # noqa: F811
    fault_server.mode = "error500"
    failed = cli("ask", "what is a craniotomy?", "--model", fault_server.url, "--no-expand")
    assert failed.exit_code == 6 and "HTTP 500" in failed.stderr and "the engine crashed" in failed.stderr
    fault_server.mode, fault_server.slow_seconds = "slow", 3.0
    _config(tmp_path, monkeypatch, f'[models.impatient]\nurl = "{fault_server.url}"\ntimeout = 1.0\n')
    slow = cli("ask", "what is a craniotomy?", "--model", "impatient", "--no-expand")
    assert slow.exit_code == 6 and "did not answer in time" in slow.stderr


def test_grammar_file_against_a_server_without_grammars_is_an_error(fault_server, corpus_db, cli, tmp_path):  # noqa: F811
    grammar = tmp_path / "g.gbnf"
    grammar.write_text(forced_text_grammar("x"))
    result = cli("ask", "what is a craniotomy?", "--model", fault_server.url, "--grammar-file", grammar, "--no-expand")
    assert result.exit_code == 2 and "GBNF" in result.stderr and fault_server.url in result.stderr


def test_structured_calls_follow_the_server(fault_server):  # noqa: F811
    model = _connect(fault_server.url, structured="json_schema")
    fault_server.reply = '[{"claim": 1, "verdict": "partial"}]'
    assert parse_verdicts(model.chat([{"role": "user", "content": "j"}], max_tokens=30,
                                     constraint=verdicts_constraint(1)), 1) == ["partial"]
    sent = fault_server.requests[-1]
    assert sent["response_format"]["type"] == "json_schema" and "grammar" not in sent
    fault_server.reply = "first line of words\nsecond line"
    assert model.chat([{"role": "user", "content": "r"}], max_tokens=30, constraint=OneLine(10)) == "first line"
    assert fault_server.requests[-1]["stop"] == ["\n"]
    with pytest.raises(UsageError, match="GBNF"):
        model.chat([{"role": "user", "content": "g"}], max_tokens=5, constraint=Grammar('root ::= "x"'))
    plain = _connect(fault_server.url)  # nothing detected: no schema sent, the parser is tolerant
    fault_server.reply = 'Sure. Claim 1: unsupported'
    assert parse_verdicts(plain.chat([{"role": "user", "content": "j"}], max_tokens=30,
                                     constraint=verdicts_constraint(1)), 1) == ["unsupported"]
    assert "response_format" not in fault_server.requests[-1]
    plain.chat([{"role": "user", "content": "t"}], max_tokens=10)
    assert plain.stats == {"prompt_cached": 40, "prompt_evaluated": 12, "generated_tokens": 7,  # llama-server's timings
                           "finish_reason": "stop"}  # the answer's health reads it (truncated on "length")
    with pytest.raises(UsageError, match="structured"):
        _connect(fault_server.url, structured="telepathy")
