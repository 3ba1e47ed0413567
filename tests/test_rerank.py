"""Re-rankers: a reranker GGUF through llama.cpp's rank pooling (a tiny random-weight bert reranker
the test writes), a server's /v1/rerank (the fault server with known scores), the chat model as a
judge (the tiny chat GGUF), and how their scores combine with the fused order."""
from __future__ import annotations

import pytest

from conftest_http import fault_server  # noqa: F401
from conftest_llm import tiny_gguf  # noqa: F401
from ragcli.errors import ModelError, UsageError
from ragcli.models.judge import LlmJudge, parse_ratings, ratings_constraint
from ragcli.models.rerank import HttpReranker, load_reranker
from ragcli.search.model_rerank import fused_with_order
from tinyreranker import write_tiny_reranker


@pytest.fixture(scope="module")
def reranker_gguf(tmp_path_factory):
    return write_tiny_reranker(tmp_path_factory.mktemp("rr") / "tiny-reranker.gguf")


def test_gguf_reranker_builds_the_pair_as_llama_server_does(reranker_gguf):
    pytest.importorskip("llama_cpp")
    from ragcli.models.llama_rerank import GgufReranker

    rr = GgufReranker(reranker_gguf, n_threads=1)
    cls, sep = 2, 3  # [CLS] is BOS, [SEP] is EOS and SEP: add_bos, add_eos and add_sep are all set
    pair = rr.pair("apply pressure", "the wound")
    assert pair[0] == cls and pair[-1] == sep and pair.count(sep) == 3
    query_end = pair.index(sep)
    assert pair[query_end + 1] == sep  # BOS query EOS SEP doc EOS
    assert rr.template is None and rr.params["kind"] == "reranker"


def test_gguf_reranker_scores_are_real_and_repeatable(reranker_gguf):
    pytest.importorskip("llama_cpp")
    from ragcli.models.llama_rerank import GgufReranker

    rr = GgufReranker(reranker_gguf, n_threads=1)
    docs = ["the wound", "burn water heat", "apply pressure to the wound"]
    first = rr.scores("apply pressure", docs)
    assert first == rr.scores("apply pressure", docs)  # no state leaks between pairs
    assert len(set(first)) == 3 and all(abs(s) < 1e3 for s in first)
    assert rr.scores("apply pressure", docs[::-1]) == first[::-1]  # each pair scored on its own
    long = "the wound " * 2000  # longer than the context: the document is cut, not the call
    assert len(rr.pair("q", long)) <= rr.context_size and len(rr.scores("q", [long])) == 1


def test_gguf_reranker_refuses_a_chat_model(tiny_gguf):  # noqa: F811
    pytest.importorskip("llama_cpp")
    from ragcli.models.llama_rerank import GgufReranker

    with pytest.raises(ModelError):
        GgufReranker(tiny_gguf, n_threads=1)


def test_server_rerank_endpoint(fault_server):  # noqa: F811
    fault_server.rerank_scores = {"b": 0.9, "c": 0.5}
    rr = HttpReranker(fault_server.url, name="bge")
    assert rr.scores("q", ["a", "b", "c"]) == [0.0, 0.9, 0.5]
    sent = fault_server.requests[-1]
    assert sent["path"] == "/v1/rerank" and sent["model"] == "bge" and sent["documents"] == ["a", "b", "c"]
    via_factory = load_reranker(fault_server.url)
    assert via_factory.scores("q", ["c", "b"]) == [0.5, 0.9]


def test_judge_ratings_are_constrained(tiny_gguf):  # noqa: F811
    pytest.importorskip("llama_cpp")
    from ragcli.models.factory import load_model

    judge = LlmJudge(load_model(tiny_gguf, n_ctx=2048, threads=1), batch=2)
    scores = judge.scores("how do I stop bleeding?", ["apply pressure", "burns", "splints"])
    assert len(scores) == 3 and all(s in (0.0, 1.0, 2.0, 3.0) for s in scores)
    assert "rating ::= [0-3]" in ratings_constraint(2).gbnf
    assert parse_ratings("I think [2, 7, 'x']", 4) == [2.0, 3.0, 0.0, 0.0]
    with pytest.raises(UsageError):
        load_reranker("llm", None)


def test_unknown_reranker_name(tmp_path):
    with pytest.raises(ModelError, match="not a file"):
        load_reranker(str(tmp_path / "nothing-here"))


def test_a_reranker_cannot_bury_the_fused_first_hit():
    """The fused first hit (e.g. the page with the exact term) given the lowest model score of 20
    still ends in the top 6; a hit both orders agree on stays first."""
    n = 20
    worst_for_first = [float(n - i) for i in range(n)]
    worst_for_first[0] = -100.0
    fused = fused_with_order(worst_for_first)
    order = sorted(range(n), key=lambda i: -fused[i])
    assert order.index(0) < 6
    agree = fused_with_order([float(n - i) for i in range(n)])
    assert sorted(range(n), key=lambda i: -agree[i]) == list(range(n))
    ties = fused_with_order([1.0] * 5)
    assert sorted(range(5), key=lambda i: -ties[i]) == list(range(5))
