"""Model-free expansion on the real sample book (real sqlite-vec, real embedding model).

The regression test: expansion must not lower any exact-term question of the sample book's
question set (tests/fixtures/sample_book_questions.jsonl) at hit@1 or hit@5.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from ragcli import evaluate
from ragcli.search import expansion as expand
from ragcli.search.legs import Query

ROOT = Path(__file__).resolve().parents[1]
PDF = ROOT / "corpus" / "cerebrovascular-neurosurgery-primer.pdf"
QUESTIONS = ROOT / "tests" / "fixtures" / "sample_book_questions.jsonl"
BEIR = ROOT / "tests" / "fixtures" / "beir_tiny" / "corpus.jsonl"


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """The sample book (id "sample") and the tiny BEIR collection (id "tiny") in one corpus."""
    pytest.importorskip("pymupdf")
    from ragcli.store import db
    from ragcli.models import embed
    from ragcli.ingest import pipeline as ingest

    conn = db.connect(tmp_path_factory.mktemp("expand") / "corpus.db")
    embedder = embed.get_embedder()
    ingest.ingest_file(conn, PDF, embedder, book_id="sample")
    ingest.ingest_file(conn, BEIR, embedder, book_id="tiny")
    yield conn, embedder
    conn.close()


def test_choose_keeps_terms_near_the_best_and_drops_the_question_itself():
    opts = expand.ExpansionOptions(n_terms=3, min_similarity=0.35, relative=0.8)
    cands = [("Cerebral edema", "glossary", 0.60), ("Intracranial pressure", "glossary", 0.50),
             ("brain tissue", "frequent", 0.47), ("anterior cerebral", "frequent", 0.40)]
    assert expand.choose(cands, "brain swelling", opts) == ["Cerebral edema", "Intracranial pressure"]
    exact = [("Hypertonic Saline", "heading", 1.0), ("Osmotic Therapy", "heading", 0.6)]
    assert expand.choose(exact, "hypertonic saline", opts) == []  # already the book's own words
    assert expand.choose([("x y", "frequent", 0.2)], "q", opts) == []
    assert expand.choose([], "q", opts) == []


def test_content_words_and_heading_query():
    assert expand.content_words("How do I stop a nosebleed?") == ["stop", "nosebleed"]
    assert expand.heading_query("the mannitol dose") == 'heading : ("mannitol" OR "dose")'
    assert expand.heading_query("the of") == ""


def test_nearest_terms_bridge_lay_words_to_the_books_terms(library):
    conn, embedder = library
    terms = expand.nearest_terms(conn, embedder, "brain swelling after a head injury", ["sample"])
    assert 1 <= len(terms) <= 12
    assert "cerebral edema" in {t.lower() for t in terms}


def test_nearest_terms_are_scoped_to_the_books(library):
    conn, embedder = library
    own = {book: {t for (t,) in conn.execute("SELECT term FROM terms WHERE book_id = ?", (book,))}
           for book in ("tiny", "sample")}
    assert {"Frostbite", "Heatstroke"} <= own["tiny"]  # document titles are a BEIR book's headings
    tiny = expand.nearest_terms(conn, embedder, "skin burning hot in the sun", ["tiny"], n=5)
    assert tiny and set(tiny) <= own["tiny"]
    assert tiny[0] in ("Heatstroke", "Heat exhaustion")
    sample = expand.nearest_terms(conn, embedder, "skin burning hot in the sun", ["sample"], n=20)
    assert sample and set(sample) <= own["sample"]


def test_expansion_queries_weigh_below_the_users_words(library):
    conn, embedder = library
    extra, terms = expand.expansion_queries(conn, embedder, "brain swelling after a head injury", ["sample"])
    assert terms and extra
    assert all(isinstance(q, Query) and 0 < q.weight < 1 for q in extra)
    assert extra[0].legs == ("lexical",) and terms[0] in extra[0].text
    none_extra, none_terms = expand.expansion_queries(conn, embedder, "hypertonic saline", ["sample"])
    assert none_terms == [] and none_extra == []


def test_expanded_search_reports_its_terms(library):
    conn, embedder = library
    result = expand.search(conn, embedder, "brain swelling after a head injury", k=5, book_ids=["sample"])
    assert result.expansions and len(result.hits) == 5
    assert [h.rank for h in result.hits] == [1, 2, 3, 4, 5]
    assert any(10 <= h.page_start <= 12 for h in result.hits[:3])


def test_options_prf_and_headings_run(library):
    conn, embedder = library
    opts = expand.ExpansionOptions(prf_passages=2, heading_weight=0.5, term_dense_weight=0.3)
    result = expand.search(conn, embedder, "mannitol dose", k=5, book_ids=["sample"], options=opts)
    assert result.hits and 12 in {h.page_start for h in result.hits[:2]}


def test_expansion_never_lowers_exact_term_questions_of_the_sample_book(library):
    conn, embedder = library
    queries = evaluate.load_queries(QUESTIONS)
    exact = [q for q in queries if q.type == "exact"]
    assert len(exact) >= 10
    report = evaluate.run_eval(conn, embedder, queries, ["hybrid", "expanded"])
    base, expanded = ({row["id"]: row for row in r.per_query} for r in report.modes)
    for q in exact:
        assert expanded[q.id]["hit@1"] >= base[q.id]["hit@1"], q.text
        assert expanded[q.id]["hit@5"] >= base[q.id]["hit@5"], q.text
    by_type = {r.mode: r.by_type for r in report.modes}
    assert by_type["expanded"]["exact"]["hit@1"] >= 0.85
    assert by_type["expanded"]["lay"]["hit@5"] >= by_type["hybrid"]["lay"]["hit@5"]


def test_rerank_reorders_only_the_head_and_keeps_the_same_hits(library):
    conn, embedder = library
    q = "brain swelling after a head injury"
    off = expand.search(conn, embedder, q, k=8, book_ids=["sample"],
                        options=expand.ExpansionOptions(rerank_top=0))
    on = expand.search(conn, embedder, q, k=8, book_ids=["sample"],
                       options=expand.ExpansionOptions(rerank_top=5))
    ids = lambda r: [h.passage_id for h in r.hits]  # noqa: E731
    assert set(ids(on)[:5]) == set(ids(off)[:5]) and ids(on)[5:] == ids(off)[5:]
    assert [h.rank for h in on.hits] == list(range(1, 9))


def test_feedback_keeps_the_questions_own_top_hits(library):
    from ragcli.search import legs as retrieve

    conn, embedder = library
    q = "mannitol dose"
    own = retrieve.search(conn, embedder, q, k=3, book_ids=["sample"])
    fb = expand.search(conn, embedder, q, k=6, book_ids=["sample"],
                       options=expand.ExpansionOptions(feedback=3, rerank_top=0))
    assert {h.passage_id for h in own.hits} <= {h.passage_id for h in fb.hits}
    assert [h.rank for h in fb.hits] == list(range(1, 7))


def test_keep_pinned_replaces_the_lowest_other_hits():
    from ragcli.types import Hit

    def hit(pid):
        return Hit(passage_id=pid, kind="passage", book_id="b", book_title="B", section_path=[],
                   page_start=1, page_end=1, page_label="1", text="t")

    hits = [hit(i) for i in (1, 2, 3, 4, 5)]
    out = expand.keep_pinned(hits, [hit(2), hit(9)], 4)
    assert [h.passage_id for h in out] == [1, 2, 3, 9, 4, 5]
    assert expand.keep_pinned(hits, [hit(1)], 4) == hits


def test_group_by_page_gives_one_hit_per_page(library):
    from ragcli.search import legs as retrieve

    conn, embedder = library
    result = retrieve.search(conn, embedder, "intracranial pressure", k=10, book_ids=["sample"],
                             group_by="page")
    pages = [h.page_start for h in result.hits]
    assert len(pages) == len(set(pages)) and result.hits
    from ragcli.errors import UsageError

    with pytest.raises(UsageError):
        retrieve.search(conn, embedder, "pressure", k=3, group_by="chapter")


def test_feedback_words_come_from_several_passages_and_skip_the_question(library):
    conn, _ = library
    texts = ["Mannitol lowers intracranial pressure by osmotic diuresis.",
             "Hypertonic saline also lowers intracranial pressure; osmotic therapy needs monitoring.",
             "Serum osmolality is checked during osmotic therapy with mannitol."]
    words = expand.feedback_words(conn, "mannitol dose", texts, 5)
    assert words and "mannitol" not in words
    # every word comes from at least two of the three passages (one-passage words are noise)
    assert all(sum(w in t.lower() for t in texts) >= 2 for w in words)
    assert expand.feedback_words(conn, "mannitol dose", [], 5) == []


def test_feedback_mode_adds_lexical_feedback_and_keeps_the_own_top_hits(library):
    from ragcli.search import legs as retrieve

    conn, embedder = library
    q = "how is raised pressure inside the skull treated"
    own = retrieve.search(conn, embedder, q, k=5, book_ids=["sample"], window=None)
    fb = expand.search_mode(conn, embedder, q, "feedback", k=10, book_ids=["sample"])
    assert len(fb.hits) == 10 and [h.rank for h in fb.hits] == list(range(1, 11))
    assert {h.passage_id for h in own.hits} <= {h.passage_id for h in fb.hits}
    with pytest.raises(Exception, match="unknown mode"):
        expand.search_mode(conn, embedder, q, "fuzzy")


def test_fusion_window_ranks_deep_only_ids_after_the_window():
    from ragcli.search import legs as retrieve

    lex = [1, 2, 3, 4, 5, 6]
    dense = [7, 8, 6, 5, 9, 10]
    full = retrieve.rrf([(lex, 1.0), (dense, 1.0)])
    assert max(full, key=full.get) in (5, 6)  # deep fusion: found by both legs, mediocre in each
    windowed = retrieve.rrf([(lex, 1.0), (dense, 1.0)], window=2)
    order = sorted(windowed, key=lambda pid: -windowed[pid])
    assert set(order[:4]) == {1, 2, 7, 8}  # the top 2 of each leg come first
    assert order[4:] == sorted(order[4:], key=lambda pid: -full[pid])  # the rest in full-fusion order
    assert retrieve.rrf([(lex, 1.0)], window=None) == retrieve.rrf([(lex, 1.0)])
