"""The search pipeline's expansion, feedback, re-rank and pins on the real sample book (real
sqlite-vec, real embedding model).

The regression test: expansion must not lower any exact-term question of the sample book's
question set (tests/fixtures/sample_book_questions.jsonl) at hit@1 or hit@5.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from ragcli import evaluate
from ragcli.search import expansion as expand
from ragcli.search import legs
from ragcli.search.feedback import feedback_words
from ragcli.search.legs import Query
from ragcli.search.pipeline import SearchOptions, search

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
    opts = (3, 0.35, 0.8)  # n_terms, min_similarity, relative
    cands = [("Cerebral edema", "glossary", 0.60), ("Intracranial pressure", "glossary", 0.50),
             ("brain tissue", "frequent", 0.47), ("anterior cerebral", "frequent", 0.40)]
    assert expand.choose(cands, "brain swelling", *opts) == ["Cerebral edema", "Intracranial pressure"]
    exact = [("Hypertonic Saline", "heading", 1.0), ("Osmotic Therapy", "heading", 0.6)]
    assert expand.choose(exact, "hypertonic saline", *opts) == []  # already the book's own words
    assert expand.choose([("x y", "frequent", 0.2)], "q", *opts) == []
    assert expand.choose([], "q", *opts) == []


def nearest_terms(conn, embedder, question, book_ids=None, n=12):
    return [t for t, _, _ in expand.candidates(conn, embedder, question, book_ids, n)]


def test_nearest_terms_bridge_lay_words_to_the_books_terms(library):
    conn, embedder = library
    terms = nearest_terms(conn, embedder, "brain swelling after a head injury", ["sample"])
    assert 1 <= len(terms) <= 12
    assert "cerebral edema" in {t.lower() for t in terms}


def test_nearest_terms_are_scoped_to_the_books(library):
    conn, embedder = library
    own = {book: {t for (t,) in conn.execute("SELECT term FROM terms WHERE book_id = ?", (book,))}
           for book in ("tiny", "sample")}
    assert {"Frostbite", "Heatstroke"} <= own["tiny"]  # document titles are a BEIR book's headings
    tiny = nearest_terms(conn, embedder, "skin burning hot in the sun", ["tiny"], n=5)
    assert tiny and set(tiny) <= own["tiny"]
    assert tiny[0] in ("Heatstroke", "Heat exhaustion")
    sample = nearest_terms(conn, embedder, "skin burning hot in the sun", ["sample"], n=20)
    assert sample and set(sample) <= own["sample"]


def test_expansion_queries_weigh_below_the_users_words(library):
    conn, embedder = library
    opts = SearchOptions(mode="expanded", book_ids=["sample"])
    _, terms, extra = expand.expand(conn, embedder, "brain swelling after a head injury", opts)
    assert terms and extra
    assert all(isinstance(q, Query) and 0 < q.weight < 1 for q in extra)
    assert extra[0].legs == ("lexical",) and terms[0] in extra[0].text
    _, none_terms, none_extra = expand.expand(conn, embedder, "hypertonic saline", opts)
    assert none_terms == [] and none_extra == []


def test_expanded_search_reports_its_terms(library):
    conn, embedder = library
    shown = []
    result = search(conn, embedder, "brain swelling after a head injury",
                    SearchOptions(mode="expanded", k=5, book_ids=["sample"]), on_expanded=shown.append)
    assert result.expansion.terms and len(result.hits) == 5
    assert shown == [result.expansion]  # shown before the legs run, the same one the result carries
    assert [h.rank for h in result.hits] == [1, 2, 3, 4, 5]
    assert any(10 <= h.page_start <= 12 for h in result.hits[:3])


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
    off = search(conn, embedder, q, SearchOptions(mode="expanded", k=8, book_ids=["sample"], rerank_top=0))
    on = search(conn, embedder, q, SearchOptions(mode="expanded", k=8, book_ids=["sample"], rerank_top=5))
    ids = lambda r: [h.passage_id for h in r.hits]  # noqa: E731
    assert set(ids(on)[:5]) == set(ids(off)[:5]) and ids(on)[5:] == ids(off)[5:]
    assert [h.rank for h in on.hits] == list(range(1, 9))


def test_feedback_keeps_the_questions_own_top_hits(library):
    conn, embedder = library
    q = "mannitol dose"
    own = search(conn, embedder, q, SearchOptions(k=3, book_ids=["sample"]))
    fb = search(conn, embedder, q, SearchOptions(mode="feedback", k=6, book_ids=["sample"], feedback=3,
                                                 lexical_feedback=0, window=20, rerank_top=0))
    assert {h.passage_id for h in own.hits} <= {h.passage_id for h in fb.hits}
    assert [h.rank for h in fb.hits] == list(range(1, 7))


def test_pin_replaces_the_lowest_other_hits():
    ids = [1, 2, 3, 4, 5]
    assert legs.pin(ids, [2, 9], 4) == [1, 2, 3, 9, 4, 5]
    assert legs.pin(ids, [1], 4) == ids


def test_feedback_words_come_from_several_passages_and_skip_the_question(library):
    conn, _ = library
    texts = ["Mannitol lowers intracranial pressure by osmotic diuresis.",
             "Hypertonic saline also lowers intracranial pressure; osmotic therapy needs monitoring.",
             "Serum osmolality is checked during osmotic therapy with mannitol."]
    words = feedback_words(conn, "mannitol dose", texts, 5)
    assert words and "mannitol" not in words
    # every word comes from at least two of the three passages (one-passage words are noise)
    assert all(sum(w in t.lower() for t in texts) >= 2 for w in words)
    assert feedback_words(conn, "mannitol dose", [], 5) == []


def test_feedback_mode_adds_lexical_feedback_and_keeps_the_own_top_hits(library):
    conn, embedder = library
    q = "how is raised pressure inside the skull treated"
    own = search(conn, embedder, q, SearchOptions(k=5, book_ids=["sample"], window=None))
    fb = search(conn, embedder, q, SearchOptions(mode="feedback", k=10, book_ids=["sample"]))
    assert len(fb.hits) == 10 and [h.rank for h in fb.hits] == list(range(1, 11))
    assert {h.passage_id for h in own.hits} <= {h.passage_id for h in fb.hits}
    with pytest.raises(Exception, match="unknown mode"):
        search(conn, embedder, q, SearchOptions(mode="fuzzy"))


def test_fusion_window_ranks_deep_only_ids_after_the_window():
    lex = [1, 2, 3, 4, 5, 6]
    dense = [7, 8, 6, 5, 9, 10]
    full = legs.rrf([(lex, 1.0), (dense, 1.0)])
    assert max(full, key=full.get) in (5, 6)  # deep fusion: found by both legs, mediocre in each
    windowed = legs.rrf([(lex, 1.0), (dense, 1.0)], window=2)
    order = sorted(windowed, key=lambda pid: -windowed[pid])
    assert set(order[:4]) == {1, 2, 7, 8}  # the top 2 of each leg come first
    assert order[4:] == sorted(order[4:], key=lambda pid: -full[pid])  # the rest in full-fusion order
    assert legs.rrf([(lex, 1.0)], window=None) == legs.rrf([(lex, 1.0)])


def test_a_reranker_passed_in_reads_max_k_depth_hits_after_the_cosine_mix(library):
    class WorstFirst:  # a Reranker: one score per hit, higher is better
        def scores(self, question, hits, terms=()):
            return [float(h.rank) for h in hits]

    class NoOpinion:
        def scores(self, question, hits, terms=()):
            return [1.0] * len(hits)

    conn, embedder = library
    q = "mannitol dose"
    ids = lambda r: [h.passage_id for h in r.hits]  # noqa: E731
    deep = search(conn, embedder, q, SearchOptions(k=8, book_ids=["sample"]))
    assert len(deep.hits) == 8
    worst = search(conn, embedder, q, SearchOptions(k=4, book_ids=["sample"], rerank_depth=8), reranker=WorstFirst())
    assert ids(worst) == ids(deep)[::-1][:4]  # the first 8 re-ordered, the first 4 returned
    assert [h.rank for h in worst.hits] == [1, 2, 3, 4] and "rerank" in worst.timings
    shallow = search(conn, embedder, q, SearchOptions(k=6, book_ids=["sample"], rerank_depth=2), reranker=WorstFirst())
    assert ids(shallow) == ids(deep)[:6][::-1]  # depth below k: the first k
    expanded = SearchOptions(mode="expanded", k=6, book_ids=["sample"])
    mixed = search(conn, embedder, q, expanded)
    # the cosine mix still runs first; a re-ranker without an opinion keeps its order
    assert ids(search(conn, embedder, q, expanded, reranker=NoOpinion())) == ids(mixed)
    flipped = search(conn, embedder, q, expanded, reranker=WorstFirst())
    assert len(flipped.hits) == 6 and ids(flipped)[0] not in ids(mixed)[:1]


def test_the_mode_decides_the_steps_and_the_fusion_window():
    from ragcli.search.options import MODES, WINDOW, mode_for

    assert MODES == ("lexical", "dense", "hybrid", "expanded", "feedback")
    assert SearchOptions(mode="dense").legs == ("dense",) and SearchOptions().legs == ("lexical", "dense")
    assert not SearchOptions().expands and SearchOptions(mode="expanded").expands
    assert SearchOptions(mode="feedback").feeds_back and not SearchOptions(mode="expanded").feeds_back
    assert SearchOptions(mode="expanded").fusion_window == WINDOW
    assert SearchOptions(mode="feedback").fusion_window is None  # deep fusion, tuned on NFCorpus dev
    assert SearchOptions(mode="feedback", window=30).fusion_window == 30
    assert [mode_for(e, f) for e, f in ((True, False), (True, True), (False, True))] == \
        ["expanded", "feedback", "hybrid"]
