"""Per-claim support on real passages of the sample book, --verify with a fake and a real tiny model."""
from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from ragcli import ask
from ragcli.answer import grounding
from ragcli.search.pipeline import SearchOptions, search
from ragcli.cli import app
from ragcli.models.fake import FakeChatModel
from ragcli.models.grammars import forced_text_grammar
from ragcli.answer.prompt import label_sources



@pytest.fixture(scope="module")
def corpus(sample_db, tmp_path_factory):
    """This module's copy of the sample book's corpus (conftest's sample_db, checkpointed: copies of the
    file hold everything), open."""
    from ragcli.store import db
    from ragcli.models import embed

    path = tmp_path_factory.mktemp("grounding") / "corpus.db"
    shutil.copyfile(sample_db, path)
    conn = db.connect(path)
    return path, conn, embed.get_embedder()


@pytest.fixture(scope="module")
def nimodipine_sources(corpus):
    _, conn, embedder = corpus
    hits = search(conn, embedder, "nimodipine 60 mg every 4 hours for 21 days", SearchOptions(k=4)).hits
    sources = label_sources([h for h in hits if h.kind == "passage"])
    assert "21 days" in sources[0].hit.text
    return sources


def levels(text, sources, embedder):
    return [(c.text, c.support, c) for c in grounding.score(text, sources, embedder)]


def test_each_support_level_from_real_passages(corpus, nimodipine_sources):
    _, _, embedder = corpus
    text = ("Nimodipine 60 mg is given every 4 hours for 21 days [S1]. "
            "Nimodipine improves outcome after aneurysmal subarachnoid hemorrhage [S1]. "
            "The femur is the longest bone of the leg [S1]. "
            "Aspirin cures all headaches within an hour. "
            "The provided passages do not answer this.")
    got = levels(text, nimodipine_sources, embedder)
    assert [g[1] for g in got] == ["supported", "supported", "unsupported", "no_source", "not_factual"]
    supported = got[0][2]
    assert supported.evidence and "21 days" in supported.evidence.quote
    assert supported.evidence.page_label == nimodipine_sources[0].hit.page_label
    assert got[2][2].flagged_citations == ["S1"]


def test_a_label_ending_a_paragraph_covers_its_uncited_sentences(corpus, nimodipine_sources):
    """Each sentence of the run takes the label and is checked: the backed one supported, the invented
    one unsupported (flagged); a sentence after the label, or in another paragraph, stays uncited."""
    _, _, embedder = corpus
    text = ("Nimodipine 60 mg is given every 4 hours for 21 days. "
            "The femur is the longest bone of the leg. "
            "Nimodipine improves outcome after aneurysmal subarachnoid hemorrhage [S1]. "
            "Aspirin cures all headaches within an hour.\n\n"
            "Magnesium is given for a week.")
    got = levels(text, nimodipine_sources, embedder)
    assert [(g[2].citations, g[1]) for g in got] == [
        (["S1"], "supported"), (["S1"], "unsupported"), (["S1"], "supported"), ([], "no_source"),
        ([], "no_source")]
    assert got[1][2].flagged_citations == ["S1"]


def test_a_label_opening_a_paragraph_covers_the_sentences_after_it(corpus, nimodipine_sources):
    """Labels first (as small models write when they copy a passage): each label covers the sentences
    up to the next one, each checked."""
    _, _, embedder = corpus
    text = ("[S1] Nimodipine 60 mg is given every 4 hours for 21 days. "
            "The femur is the longest bone of the leg.")
    got = levels(text, nimodipine_sources, embedder)
    assert [(g[2].citations, g[1]) for g in got] == [(["S1"], "supported"), (["S1"], "unsupported")]


def test_wrong_number_is_never_supported(corpus, nimodipine_sources):
    _, _, embedder = corpus
    got = levels("Nimodipine 90 mg is given every 4 hours for 21 days [S1].", nimodipine_sources, embedder)
    assert got[0][1] != "supported"


def test_valid_label_on_an_unrelated_sentence_is_flagged(corpus):
    _, conn, embedder = corpus
    hits = search(conn, embedder, "mannitol osmotic therapy dose", SearchOptions(k=3)).hits
    sources = label_sources([h for h in hits if h.kind == "passage"])
    got = levels("Saccular aneurysms are treated by endovascular coiling with platinum coils [S1].",
                 sources, embedder)
    assert got[0][1] == "unsupported" and got[0][2].flagged_citations == ["S1"]


def test_extractive_answers_are_scored_and_supported(corpus):
    _, conn, embedder = corpus
    answer = ask.ask(conn, embedder, "what is the dose of nimodipine?", None)  # claims assessed in ask
    assert answer.claims and all(c.support == "supported" for c in answer.claims)
    assert all(c.evidence and c.evidence.label in c.citations for c in answer.claims)


def test_verify_removes_claims_the_model_rejects(corpus, nimodipine_sources):
    _, _, embedder = corpus
    from ragcli.types import Answer

    text = "Nimodipine is given for 21 days [S1]. It is also a treatment for fractures [S1]."
    answer = Answer("q", None, text, "answered", ["S1"], [], nimodipine_sources)
    model = FakeChatModel('[{"claim": 1, "verdict": "supported"}, {"claim": 2, "verdict": "unsupported"}]')
    grounding.assess(answer, embedder, model)
    v = answer.verification
    assert v["draft"] == text and "fractures" not in v["final"] and answer.answer == v["final"]
    assert [x["verdict"] for x in v["verdicts"]] == ["supported", "unsupported"]
    assert model.calls[0]["constraint"] and "Claim 2:" in model.calls[0]["messages"][-1]["content"]


def test_cli_json_claims_and_verify_with_real_llama_cpp(corpus, tmp_path, tiny_gguf):
    db = tmp_path / "c.db"
    shutil.copy(corpus[0], db)
    grammar = tmp_path / "g.gbnf"
    grammar.write_text(forced_text_grammar("Nimodipine is given for 21 days [S1]. Bones heal slowly."))
    result = CliRunner().invoke(app, ["ask", "how long is nimodipine given?", "--db", str(db), "--json",
                                      "--model", str(tiny_gguf), "--grammar-file", str(grammar),
                                      "--no-expand", "--verify", "--ctx", "2048", "--max-tokens", "96"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for claim in data["claims"]:
        assert set(claim) >= {"text", "citations", "support", "score", "evidence"}
    v = data["verification"]
    assert v["draft"] == "Nimodipine is given for 21 days [S1]. Bones heal slowly."
    assert len(v["verdicts"]) == 2  # the random model's verdicts, forced into the JSON shape
    assert all(x["verdict"] in ("supported", "unsupported", "partial") for x in v["verdicts"])
    rejected = [x["claim"] for x in v["verdicts"] if x["verdict"] == "unsupported"]
    assert v["removed_claims"] == rejected
    # what verification kept is the answer, or the withheld draft when ragcli does not show it
    assert (data["withheld_draft"] if data["status"] == "no_answer" else data["answer"]) == v["final"]
    by_text = {c["text"]: c for c in data["claims"]}
    if data["status"] == "no_answer":  # what verification kept is not in the passages shown
        assert data["notice"].startswith("not answered") and by_text == {}  # (refusal.unbacked_reason)
        return
    assert set(by_text) == {"Nimodipine is given for 21 days.", "Bones heal slowly."} - set(rejected)
    if "Bones heal slowly." in by_text:
        assert by_text["Bones heal slowly."]["support"] == "no_source"
    if "Nimodipine is given for 21 days." in by_text:
        assert by_text["Nimodipine is given for 21 days."]["citations"] == ["S1"]
        assert data["status"] == "answered"
    else:
        assert data["status"] == "unsupported" and data["citations"] == []
