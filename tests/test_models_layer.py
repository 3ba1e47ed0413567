"""models/: output constraints, GGUF header facts, tolerant verdict parsing (no server needed)."""
from __future__ import annotations

import json

import pytest

from conftest_llm import tiny_gguf  # noqa: F401
from ragcli.errors import ModelError
from ragcli.models.chat import Grammar, JsonSchema, OneLine, estimate_tokens
from ragcli.models.gguf import gguf_facts
from ragcli.models.grammars import json_value, parse_verdicts, verdicts_constraint
from ragcli.models.llama_cpp import constraint_gbnf


def test_gguf_facts_of_the_tiny_model(tiny_gguf):  # noqa: F811
    facts = gguf_facts(tiny_gguf)
    assert facts["architecture"] == "llama" and facts["name"] == "ragcli-tiny-test"
    assert facts["quantization"] == "F32" and facts["context_length"] == 2048
    assert facts["chat_template"] is True and facts["reranker"] is False
    assert facts["size_bytes"] == tiny_gguf.stat().st_size
    # every weight counted: the parameter count times 4 bytes (F32) is nearly the whole file
    assert 0.8 * facts["size_bytes"] < 4 * facts["parameters"] < facts["size_bytes"]


def test_gguf_facts_refuses_other_files(tmp_path):
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"NOTGGUF" + bytes(40))
    with pytest.raises(ModelError, match="not a GGUF"):
        gguf_facts(bad)


def test_constraints_map_to_gbnf_for_llama_cpp():
    assert constraint_gbnf(None) is None
    assert constraint_gbnf(Grammar('root ::= "x"\n')) == 'root ::= "x"\n'
    assert constraint_gbnf(OneLine(30)).startswith("root ::=")
    verdicts = verdicts_constraint(2)
    assert constraint_gbnf(verdicts) == verdicts.gbnf and '"claim": 2' in verdicts.gbnf.replace('\\"', '"')


def test_verdicts_schema_matches_the_grammar_shape():
    schema = verdicts_constraint(3).schema
    assert schema["minItems"] == schema["maxItems"] == 3
    assert schema["items"]["properties"]["verdict"]["enum"] == ["supported", "partial", "unsupported"]
    # a schema-only constraint (no exact grammar) is converted by llama-cpp-python's converter
    pytest.importorskip("llama_cpp")
    assert "root" in constraint_gbnf(JsonSchema(schema))


def test_parse_verdicts_reads_unconstrained_replies():
    fenced = 'Here you go:\n```json\n[{"claim": 1, "verdict": "partial"}, {"claim": 2, "verdict": "supported"}]\n```'
    assert parse_verdicts(fenced, 2) == ["partial", "supported"]
    prose = "Claim 1: supported.\nClaim 2 - verdict: unsupported\nclaim 9: supported"
    assert parse_verdicts(prose, 2) == ["supported", "unsupported"]
    assert parse_verdicts("no idea", 2) == [None, None]
    assert json_value('noise {"a": 1} noise') == {"a": 1}


def test_estimate_errs_high():
    text = "Apply a tourniquet two to four inches above the wound; do not remove it."
    assert estimate_tokens(text) >= len(text) / 4
    assert estimate_tokens(json.dumps(list(range(50)))) > 50
