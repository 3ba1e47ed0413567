"""Search through the CLI (--json) on real ingested text: exact words, paraphrases, odd queries."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HIT_FIELDS = {"rank", "kind", "passage_id", "book_id", "book_title", "section_path", "section", "page_label",
              "page", "page_end", "figure_number", "ocr", "text_kind", "file", "file_url", "file_status", "score", "lexical_score",
              "lexical_rank", "dense_score", "dense_rank", "text"}


def _search(cli, *args):
    res = cli("search", *args, "--json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def test_exact_term_finds_its_page(corpus_db, cli):
    hits = _search(cli, "nimodipine", "-k", "5")
    assert set(hits[0]) == HIT_FIELDS
    top = hits[0]
    assert top["book_id"] == "primer" and "nimodipine" in top["text"].lower()
    assert top["section_path"][-1] in ("5.1 Nimodipine", "Glossary") or top["kind"] == "figure"
    passage = next(h for h in hits if h["section_path"][-1] == "5.1 Nimodipine")
    assert (passage["page"], passage["page_label"]) == (13, "11")
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    assert all(h["score"] > 0 for h in hits)


def test_paraphrase_finds_the_right_section(corpus_db, cli):
    query = "which medicine, taken every four hours for three weeks, protects the brain after a ruptured aneurysm bleeds"
    for mode in ("dense", "hybrid"):
        hits = _search(cli, query, "-k", "3", "--mode", mode)
        assert any(h["section_path"][-1] == "5.1 Nimodipine" for h in hits), (mode, [h["section"] for h in hits])


def test_paraphrase_on_a_real_article(corpus_db, cli):
    hits = _search(cli, "how patients felt about the heart failure clinics they attended", "-k", "5",
                   "--book", "heart")
    assert hits and {h["book_id"] for h in hits} == {"heart"}


def test_modes_report_their_side_scores(corpus_db, cli):
    lexical = _search(cli, "mannitol", "--mode", "lexical", "-k", "3")
    assert lexical and all(h["dense_score"] is None and h["lexical_rank"] for h in lexical)
    dense = _search(cli, "mannitol", "--mode", "dense", "-k", "3")
    assert dense and all(h["lexical_score"] is None and -1 <= h["dense_score"] <= 1 for h in dense)


def test_book_filter(corpus_db, cli):
    hits = _search(cli, "patient flow in the hospital", "--book", "malawi", "-k", "5")
    assert hits and {h["book_id"] for h in hits} == {"malawi"}


@pytest.mark.parametrize("query", ['"AND OR NOT (x* ^ -', "c++", '"unbalanced', "NEAR(aneurysm clip, 3)",
                                   "text:mannitol", "*", "-", "^", "{col}: x", "a AND", "'; DROP TABLE passages;--",
                                   "ICP > 20 mmHg?", "Spetzler–Martin grade «III»"])
def test_fts_operators_and_punctuation_never_fail(corpus_db, cli, query):
    for mode in ("lexical", "hybrid"):
        res = cli("search", query, "--json", "--mode", mode)
        assert res.exit_code == 0, (mode, res.stderr)
        assert isinstance(json.loads(res.stdout), list)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=60))
def test_fts_query_is_always_valid(template_db, text):
    from ragcli.store import db
    from ragcli.search import legs as retrieve
    from ragcli.store import corpus as store

    conn = db.connect(template_db["path"], create=False)
    try:
        store.lexical_search(conn, retrieve.fts_query(text), 5)  # must not raise
    finally:
        conn.close()


def test_no_hits(corpus_db, cli):
    res = cli("search", "qwxzzy", "--mode", "lexical")
    assert "no passage matches" in res.stderr and res.stdout == ""
    assert res.exit_code == 0
    assert _search(cli, "qwxzzy", "--mode", "lexical") == []


def test_unknown_book(corpus_db, cli, fingerprint):
    before = fingerprint(corpus_db)
    res = cli("search", "aneurysm", "--book", "nope")
    assert res.exit_code == 5 and "no book with id 'nope'" in res.stderr and res.stdout == ""
    assert fingerprint(corpus_db) == before


def test_empty_corpus_and_no_corpus(cli, tmp_path):
    res = cli("search", "aneurysm")
    assert res.exit_code == 4 and "no corpus at" in res.stderr and "ragcli ingest" in res.stderr
    assert not (tmp_path / "corpus.db").exists()  # search never creates a corpus

    from ragcli.store import db

    db.connect(tmp_path / "corpus.db").close()
    res = cli("search", "aneurysm", "--json")
    assert res.exit_code == 5 and "the corpus is empty" in res.stderr and res.stdout == ""


def test_empty_query(corpus_db, cli):
    res = cli("search", "   ")
    assert res.exit_code == 2 and "query is empty" in res.stderr


def test_bad_mode(corpus_db, cli):
    res = cli("search", "aneurysm", "--mode", "fuzzy")
    assert res.exit_code == 2 and "unknown mode" in res.stderr


def test_search_in_a_subprocess(corpus_db, run_module):
    proc = run_module("search", "decompressive craniectomy", "--json", "-k", "3", "--db", corpus_db)
    assert proc.returncode == 0, proc.stderr
    hits = json.loads(proc.stdout)
    assert len(hits) == 3 and any("4.3 Decompressive Craniectomy" in h["section"] for h in hits)
    proc = run_module("search", "aneurysm", "--book", "nope", "--db", corpus_db)
    assert proc.returncode == 5 and "no book with id" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("mode", ["expanded", "feedback"])
def test_expansion_modes_from_the_command_line(corpus_db, cli, mode):
    res = cli("search", "brain swelling after surgery", "--mode", mode, "-k", "5", "--json")
    assert res.exit_code == 0, res.stderr
    hits = json.loads(res.stdout)
    assert len(hits) == 5 and hits[0]["rank"] == 1


def test_pinning_a_missing_hit_keeps_the_list_at_k():
    from ragcli.search.pipeline import _pinned
    from ragcli.types import Hit

    def hit(pid):
        return Hit(passage_id=pid, kind="passage", book_id="b", book_title="B", section_path=["s"],
                   page_start=1, page_end=1, page_label="1", text=f"t{pid}")

    hits = [hit(i) for i in range(1, 6)]  # k = 5
    out = _pinned(hits, [hit(9)], 5)  # the first pass's best hit fell out of the fused top 5
    assert [h.passage_id for h in out] == [1, 2, 3, 4, 9]
    assert [h.rank for h in out] == [1, 2, 3, 4, 5]
