"""Metrics against hand-computed values; loaders; `ragcli eval retrieval` on a tiny BEIR collection."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ragcli import evaluate
from ragcli.errors import InputError, NotFoundError, UsageError

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BEIR = FIXTURES / "beir_tiny"
L2, L3, L4, L5 = 1.0, math.log2(3), 2.0, math.log2(5)


# -- metrics -------------------------------------------------------------------------------------

def test_ndcg_graded_linear_gains_by_hand():
    qrels = {"d1": 2, "d2": 1, "d3": 0}
    # DCG = 0/log2(2) + 1/log2(3) + 2/log2(4); IDCG = 2/log2(2) + 1/log2(3)
    expected = (1 / L3 + 2 / L4) / (2 / L2 + 1 / L3)
    assert evaluate.ndcg_at_k(["x", "d2", "d1"], qrels, 10) == pytest.approx(expected)
    assert evaluate.ndcg_at_k(["x", "d2", "d1"], qrels, 10) == pytest.approx(0.619906, abs=1e-6)
    assert evaluate.ndcg_at_k(["d1", "d2"], qrels, 10) == pytest.approx(1.0)
    assert evaluate.ndcg_at_k(["x", "d2", "d1"], qrels, 2) == pytest.approx((1 / L3) / (2 + 1 / L3))
    assert evaluate.ndcg_at_k(["d1"], {"d3": 0}, 10) == 0.0  # nothing relevant judged


def test_recall_mrr_hit_by_hand():
    ranked, relevant = ["x", "d2", "y", "d1"], {"d1", "d2", "d9"}
    assert evaluate.recall_at_k(ranked, relevant, 1) == 0.0
    assert evaluate.recall_at_k(ranked, relevant, 2) == pytest.approx(1 / 3)
    assert evaluate.recall_at_k(ranked, relevant, 100) == pytest.approx(2 / 3)
    assert evaluate.mrr_at_k(ranked, relevant, 10) == 0.5
    assert evaluate.mrr_at_k(ranked, relevant, 1) == 0.0
    assert evaluate.hit_at_k(ranked, relevant, 1) == 0.0
    assert evaluate.hit_at_k(ranked, relevant, 2) == 1.0


def test_beir_metrics_deduplicate_passages_of_one_document_first_occurrence():
    # three passages of d1 then d2: after dedupe the ranking is [d1, d2]
    m = evaluate.beir_metrics(["d1", "d1", "d1", "d2"], {"d1": 1, "d2": 1})
    assert m["ndcg@10"] == pytest.approx(1.0)
    assert m["recall@10"] == 1.0 and m["mrr@10"] == 1.0
    # without dedupe d2 would sit at rank 4; with it, rank 2
    m = evaluate.beir_metrics(["x", "x", "d2"], {"d2": 1})
    assert m["mrr@10"] == 0.5


def test_page_metrics_by_hand():
    gold = {10, 11, 12}
    covered = [set(), {11}, {11}, {10, 12}]  # a miss, a new page, a repeat, two new pages
    m = evaluate.page_metrics(covered, gold)
    # gains [0, 1, 0, 1]: DCG = 1/log2(3) + 1/log2(5); IDCG = 1 + 1/log2(3) + 1/log2(4)
    assert m["ndcg@10"] == pytest.approx((1 / L3 + 1 / L5) / (1 + 1 / L3 + 1 / L4))
    assert m["ndcg@10"] == pytest.approx(0.498190, abs=1e-6)
    assert m["recall@10"] == 1.0
    assert m["mrr@10"] == 0.5 and m["hit@1"] == 0.0 and m["hit@5"] == 1.0
    late = evaluate.page_metrics([set()] * 5 + [{10}], gold)
    assert late["hit@5"] == 0.0 and late["mrr@10"] == pytest.approx(1 / 6)
    assert late["recall@10"] == pytest.approx(1 / 3)
    assert evaluate.page_metrics([], gold)["recall@10"] == 0.0


def test_mean_over_queries():
    rows = [{"a": 1.0}, {"a": 0.0}, {"a": 0.5}]
    assert evaluate.mean(rows, ["a"]) == {"a": 0.5}
    assert evaluate.mean([], ["a"]) == {"a": 0.0}


# -- loaders -------------------------------------------------------------------------------------

def test_load_beir_queries_keeps_only_judged_ones():
    qs = evaluate.load_queries(BEIR / "queries.jsonl", BEIR / "qrels.tsv")
    assert [q.id for q in qs] == ["q1", "q2", "q3", "q4"]
    assert qs[2].qrels == {"d4": 2.0, "d3": 1.0}
    assert qs[3].qrels == {"d5": 1.0, "d6": 0.0}


def test_load_page_questions(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"question": "q?", "book": "b", "pages": [3, 4], "type": "lay", "id": "x"}\n\n')
    (q,) = evaluate.load_queries(path)
    assert (q.id, q.text, q.book, q.pages, q.type) == ("x", "q?", "b", [3, 4], "lay")


def test_loader_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "no pages"}\n')
    with pytest.raises(UsageError):
        evaluate.load_queries(bad)
    bad.write_text("{not json\n")
    with pytest.raises(InputError):
        evaluate.load_queries(bad)
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nzz\td1\t1\n")
    with pytest.raises(InputError):
        evaluate.load_queries(BEIR / "queries.jsonl", qrels)
    with pytest.raises(InputError):
        evaluate.load_queries(tmp_path / "missing.jsonl")


def test_resolve_book():
    known = ["fm4-25-11-first-aid", "other"]
    assert evaluate.resolve_book("fm4-25-11", known) == "fm4-25-11-first-aid"
    assert evaluate.resolve_book("other", known) == "other"
    with pytest.raises(NotFoundError):
        evaluate.resolve_book("nope", known)


def test_evaluate_with_fake_searchers_scores_as_by_hand():
    """Deterministic fakes beside the real run below: the plumbing from hits to averages."""
    from ragcli.types import Hit

    def hit(label):
        return Hit(0, "passage", "b", "B", [], 1, 1, label, "")

    qs = evaluate.load_queries(BEIR / "queries.jsonl", BEIR / "qrels.tsv")
    perfect = {"q1": ["d1"], "q2": ["d2"], "q3": ["d4", "d3"], "q4": ["d5"]}
    report = evaluate.evaluate({
        "perfect": lambda text, scope: [hit(d) for d in perfect[_qid(qs, text)]],
        "nothing": lambda text, scope: [],
    }, qs)
    assert report.kind == "beir" and report.queries == 4
    by = {r.mode: r.metrics for r in report.modes}
    assert by["perfect"] == {"ndcg@10": 1.0, "recall@10": 1.0, "recall@100": 1.0, "mrr@10": 1.0}
    assert by["nothing"]["ndcg@10"] == 0.0


def _qid(qs, text):
    return next(q.id for q in qs if q.text == text)


# -- the command, for real: ingest the tiny collection, then eval ----------------------------------

@pytest.fixture(scope="module")
def beir_db(tmp_path_factory):
    from typer.testing import CliRunner

    from ragcli.cli import app

    db = tmp_path_factory.mktemp("beir") / "corpus.db"
    result = CliRunner().invoke(app, ["ingest", str(BEIR / "corpus.jsonl"), "--id", "tiny", "--db", str(db),
                                      "--json"])
    assert result.exit_code == 0, result.output
    return db


def test_eval_retrieval_command_on_tiny_beir(beir_db):
    from typer.testing import CliRunner

    from ragcli.cli import app

    result = CliRunner().invoke(app, ["eval", "retrieval", "--queries", str(BEIR / "queries.jsonl"),
                                      "--qrels", str(BEIR / "qrels.tsv"), "--db", str(beir_db), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["kind"] == "beir" and data["queries"] == 4
    assert list(data["modes"]) == ["lexical", "dense", "hybrid", "expanded", "feedback"]
    for mode, entry in data["modes"].items():
        m = entry["metrics"]
        assert set(m) == {"ndcg@10", "recall@10", "recall@100", "mrr@10"}
        assert m["recall@100"] == 1.0, mode  # six documents: every relevant one is retrieved
        assert 0.0 <= m["ndcg@10"] <= 1.0
    assert data["modes"]["hybrid"]["metrics"]["mrr@10"] >= 0.75
    assert data["modes"]["dense"]["metrics"]["mrr@10"] >= 0.75


def test_eval_retrieval_table_and_modes(beir_db):
    from typer.testing import CliRunner

    from ragcli.cli import app

    args = ["eval", "retrieval", "--queries", str(BEIR / "queries.jsonl"), "--qrels", str(BEIR / "qrels.tsv"),
            "--db", str(beir_db)]
    result = CliRunner().invoke(app, args + ["--mode", "lexical", "--mode", "hybrid"])
    assert result.exit_code == 0, result.output
    assert "ndcg@10" in result.stdout and "lexical" in result.stdout and "dense" not in result.stdout
    bad = CliRunner().invoke(app, args + ["--mode", "magic"])
    assert bad.exit_code == 2


def test_eval_page_set_questions_on_beir_pages(beir_db, tmp_path):
    """Page-set questions work on any book: the tiny corpus's pages are its documents (d5 is page 5)."""
    from typer.testing import CliRunner

    from ragcli.cli import app

    q = tmp_path / "pages.jsonl"
    q.write_text(json.dumps({"question": "nose bleeding", "book": "tiny", "pages": [5], "type": "lay"}) + "\n")
    result = CliRunner().invoke(app, ["eval", "retrieval", "--queries", str(q), "--db", str(beir_db), "--json",
                                      "--mode", "lexical", "--per-query"])
    assert result.exit_code == 0, result.output
    entry = json.loads(result.stdout)["modes"]["lexical"]
    assert entry["metrics"]["hit@1"] == 1.0 and entry["by_type"]["lay"]["hit@5"] == 1.0
    assert entry["per_query"][0]["ranked"][0] == "tiny:5-5"
