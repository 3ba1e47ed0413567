"""Re-rankers: a reranker GGUF through llama.cpp's rank pooling (a tiny random-weight bert reranker
the test writes), a server's /v1/rerank (the fault server with known scores), the chat model as a
judge (the tiny chat GGUF), and how their scores combine with the fused order."""
from __future__ import annotations

import json

import pytest

from conftest_http import fault_server, llama_server  # noqa: F401
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
    # the worst order for the first hit (a bipartite matching of model ranks to search ranks shows no
    # order puts more than 7 hits above it): 8th of 20, so ask's prompt (top 6) can lose it
    model_rank = [20, 8, 6, 5, 4, 3, 1, 2, 7, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
    worst = fused_with_order([float(n - r) for r in model_rank])
    assert sorted(range(n), key=lambda i: -worst[i]).index(0) == 7


# -- through the CLI: --rerank on search, ask, summary new, eval retrieval -------------------------

def _ids(result) -> list[int]:
    return [h["passage_id"] for h in json.loads(result.stdout)]


def _expected(deep_ids: list[int], scores: list[float], k: int) -> list[int]:
    fused = fused_with_order(scores)
    return [deep_ids[i] for i in sorted(range(len(deep_ids)), key=lambda i: -fused[i])][:k]


def test_search_rerank_with_a_server_fuses_its_scores_with_the_search_order(fault_server, corpus_db, cli):  # noqa: F811
    q = ("search", "aneurysm rupture", "--json", "--book", "primer")
    deep = _ids(cli(*q, "-k", "8"))
    plain = cli(*q, "-k", "4", "--rerank", fault_server.url, "--rerank-depth", "8")  # every score 0: ties
    assert plain.exit_code == 0, plain.output
    assert _ids(plain) == deep[:4]
    docs = fault_server.requests[-1]["documents"]  # the first 8 hits' texts, in search order
    assert fault_server.requests[-1]["path"] == "/v1/rerank" and len(docs) == 8
    fault_server.rerank_scores = {docs[5]: 9.0, docs[6]: 5.0, docs[0]: -3.0}
    reranked = cli(*q, "-k", "4", "--rerank", fault_server.url, "--rerank-depth", "8")
    scores = [fault_server.rerank_scores.get(d, 0.0) for d in docs]
    assert _ids(reranked) == _expected(deep, scores, 4) != deep[:4]
    assert deep[5] in _ids(reranked)  # the re-ranker's first climbs into the top 4 ...
    assert deep[0] in _ids(reranked)  # ... and its last cannot bury the search's first
    shallow = cli(*q, "-k", "4", "--rerank", fault_server.url, "--rerank-depth", "2")
    assert len(fault_server.requests[-1]["documents"]) == 4  # max(k, depth)


def test_search_rerank_with_a_reranker_gguf(reranker_gguf, corpus_db, cli, embedder):
    pytest.importorskip("llama_cpp")
    from ragcli.models.llama_rerank import GgufReranker
    from ragcli.search.pipeline import SearchOptions, search
    from ragcli.store import db

    result = cli("search", "apply pressure to the wound", "--json", "-k", "3", "--rerank", str(reranker_gguf))
    assert result.exit_code == 0, result.output
    hits = search(db.connect(corpus_db, create=False), embedder, "apply pressure to the wound",
                  SearchOptions(k=20)).hits
    scores = GgufReranker(reranker_gguf, n_threads=1).scores("apply pressure to the wound", [h.text for h in hits])
    assert _ids(result) == _expected([h.passage_id for h in hits], scores, 3)


def test_ask_summary_and_eval_take_the_reranker(fault_server, corpus_db, cli, tmp_path):  # noqa: F811
    ask = cli("ask", "what is a craniotomy?", "--json", "--rerank", fault_server.url, "--no-expand")
    assert ask.exit_code == 0, ask.output
    sent = fault_server.requests[-1]
    assert sent["path"] == "/v1/rerank" and len(sent["documents"]) == 20  # ask's k = 10, depth 20
    assert "rerank" in json.loads(ask.stdout)["timings"]
    summary = cli("summary", "new", "aneurysms", "--json", "--rerank", fault_server.url, "--rerank-depth", "30")
    assert summary.exit_code == 0, summary.output
    assert len(fault_server.requests[-1]["documents"]) == 30
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"question": "what is a craniotomy?", "book": "primer", "pages": [1]}) + "\n")
    ev = cli("eval", "retrieval", "--queries", queries, "--mode", "hybrid", "--json", "--rerank", fault_server.url)
    assert ev.exit_code == 0, ev.output
    assert list(json.loads(ev.stdout)["modes"]) == ["hybrid+rerank"]


def test_rerank_from_the_config_file_and_its_profiles(fault_server, corpus_db, cli, tmp_path, monkeypatch):  # noqa: F811
    config = tmp_path / "config.toml"
    config.write_text(f'rerank = "bge"\nrerank_depth = 12\n\n[models.bge]\nurl = "{fault_server.url}"\nname = "bge-m3"\n')
    monkeypatch.setenv("RAGCLI_CONFIG", str(config))
    assert cli("search", "aneurysm", "--json").exit_code == 0
    sent = fault_server.requests[-1]
    assert sent["model"] == "bge-m3" and len(sent["documents"]) == 12
    n = len(fault_server.requests)
    assert cli("search", "aneurysm", "--json", "--rerank", "none").exit_code == 0
    assert len(fault_server.requests) == n  # `none` turns the configured one off
    config.write_text('rerank = 3\n')
    bad = cli("search", "aneurysm")
    assert bad.exit_code == 2 and "rerank in" in bad.stderr


def test_llm_judge_through_the_cli(corpus_db, cli, monkeypatch):
    """The chat model rates each passage (here a fake that rates by one word); the rated one climbs."""
    from ragcli.cli import options
    from ragcli.models.fake import FakeChatModel

    def rate(messages):
        return "[3]" if "rupture" in messages[-1]["content"].split("Passage 1:")[-1].lower() else "[0]"

    judge = FakeChatModel(rate, relevance=None)  # no token probabilities: the 0-3 ratings, a passage a call
    monkeypatch.setattr(options, "load_model", lambda *a, **k: (judge, None))
    q = ("search", "brain surgery", "--json", "-k", "5", "--book", "primer")
    plain = _ids(cli(*q, "-k", "20"))
    result = cli(*q, "--rerank", "llm")
    assert result.exit_code == 0, result.output
    assert len(judge.calls) == 20 and all(c["temperature"] == 0.0 for c in judge.calls)  # one passage a call
    texts = [c["messages"][-1]["content"].split("Passage 1:\n")[-1] for c in judge.calls]
    scores = [3.0 if "rupture" in t.lower() else 0.0 for t in texts]
    assert _ids(result) == _expected(plain, scores, 5)


def test_bad_rerankers_are_one_line_errors(fault_server, llama_server, tiny_gguf, corpus_db, cli, tmp_path):  # noqa: F811
    missing = cli("search", "aneurysm", "--rerank", tmp_path / "bge-reranker-v2-m3.gguf")
    assert missing.exit_code == 6 and "reranker not found" in missing.stderr
    chat = cli("search", "aneurysm", "--rerank", tiny_gguf)
    assert chat.exit_code == 6 and "not a reranker GGUF" in chat.stderr
    no_endpoint = cli("search", "aneurysm", "--rerank", llama_server)  # llama-cpp-python's server: no /v1/rerank
    assert no_endpoint.exit_code == 6 and "has no rerank endpoint (HTTP 404" in no_endpoint.stderr
    fault_server.mode = "no_rerank"  # as llama-server without --reranking
    not_started = cli("search", "aneurysm", "--rerank", fault_server.url)
    assert not_started.exit_code == 6 and "has no rerank endpoint (HTTP 501" in not_started.stderr
    from conftest_http import free_port

    refused = cli("search", "aneurysm", "--rerank", f"http://u:secret@127.0.0.1:{free_port()}/v1")
    assert refused.exit_code == 6 and "cannot reach the reranker" in refused.stderr and "secret" not in refused.stderr
    empty = cli("search", "aneurysm", "--rerank", "")
    assert empty.exit_code == 2
    no_model = cli("ask", "what is a craniotomy?", "--rerank", "llm")
    assert no_model.exit_code == 2 and "--rerank llm needs a chat model" in no_model.stderr
    for r in (missing, chat, no_endpoint, not_started, refused, empty, no_model):
        assert "Traceback" not in r.output and len(r.stderr.strip().splitlines()) == 1, r.stderr
