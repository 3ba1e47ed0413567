"""What ask shows of the labels ragcli moved or found (06dd58d): a repointed or attributed label is
in the answer's `citations` and its Sources list, `found_citations` names it, and the "↳" note of
consecutive sentences with the same note is said once (real FM 4-25.11 passages, real embedder)."""
from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from ragcli.answer import grounding
from ragcli.render import answers, data
from ragcli.types import Answer, Claim, Hit, Source

FM = json.loads((Path(__file__).parent / "fixtures" / "fm4-25-11-passages.json").read_text())["passages"]

BAND = ("The band should be tight enough to stop the flow of blood near the skin, but not tight enough to "
        "interfere with circulation")  # FM 4-25.11, 6-3 (snakebites): in passage 321 only
SWELLING = ["If no swelling is seen, place the bands about 1 inch from either side of the bite",
            "If swelling is present, put the bands on the unswollen part at the edge of the swelling",
            "If the swelling extends beyond the band, move the band to the new edge of the swelling"]


def _sources(ids: list[int]) -> list[Source]:
    by_id = {p["passage_id"]: p for p in FM}
    return [Source(f"S{n}", Hit(passage_id=pid, kind="passage", book_id="fm4-25-11", book_title="First Aid",
                                section_path=by_id[pid]["section_path"], page_start=by_id[pid]["page"],
                                page_end=by_id[pid]["page"], page_label=str(by_id[pid]["page"]),
                                text=by_id[pid]["text"], rank=n))
            for n, pid in enumerate(ids, 1)]


def _shown(render, *args, **kwargs) -> str:
    console = Console(record=True, width=200, color_system=None)
    render(console, *args, **kwargs)
    return console.export_text()


def test_a_repointed_label_is_cited_listed_under_sources_and_named_in_the_json(embedder):
    sources = _sources([320, 321, 126])  # only S2 says how tight the band should be
    text = f"{BAND} [S1]. Thirst and restlessness are signs of shock [S3]."
    answer = Answer("how tight should the band be for a snakebite?", None, text, "answered", ["S1", "S3"], [],
                    sources)
    grounding.assess(answer, embedder)
    assert answer.claims[0].cited_as == ["S1"] and answer.claims[0].citations == ["S2"]  # the premise
    # S2 where it is first used; the model's own S1 and S3 kept
    assert answer.citations == ["S1", "S2", "S3"]
    out = data.answer_data(answer)
    assert out["citations"] == ["S1", "S2", "S3"] and out["found_citations"] == ["S2"]

    shown = _shown(answers.print_answer, answer)
    listed = shown.split("\nSources\n", 1)[1]
    assert "[S2] (found by ragcli) First Aid" in listed
    assert "[S1] First Aid" in listed and "[S3] First Aid" in listed  # the model's own, not marked
    assert "Other retrieved passages" not in shown

    from ragcli.render.markdown import answer_markdown

    md = answer_markdown(answer)  # no footnote without its mark in the text: S2 is listed after them
    assert "[^S1]:" in md and "[^S3]:" in md and "[^S2]" not in md
    last = md.rstrip().splitlines()[-1]
    assert last.startswith("- S2: First Aid, CHAPTER 6") and last.endswith("6-3. Snakebites, p. 136 (PDF page 136).")


def test_an_answer_that_cites_what_the_model_wrote_is_unchanged(embedder):
    sources = _sources([320, 321, 126])
    text = f"{BAND} [S2]. Thirst and restlessness are signs of shock [S3]."
    answer = Answer("q", None, text, "answered", ["S2", "S3"], [], sources)
    grounding.assess(answer, embedder)
    assert answer.citations == ["S2", "S3"] and data.answer_data(answer)["found_citations"] == []
    assert "found by ragcli" not in _shown(answers.print_answer, answer)


def test_labels_found_for_an_answer_that_cited_nothing_are_all_ragclis(embedder):
    from ragcli import ask

    sources = _sources([320, 321, 126])
    answer = Answer("how tight should the band be?", None, f"{BAND}.", "unsupported", [], [], sources)
    answer.claims = grounding.score(answer.answer, sources, embedder)
    ask._take_attributed(answer)  # what ask does with an answer that cites nothing
    assert answer.status == "answered" and answer.citations == ["S2"]
    assert data.answer_data(answer)["found_citations"] == ["S2"]


def test_consecutive_sentences_found_in_one_passage_get_one_note(embedder):
    sources = _sources([320, 321, 126])
    text = " ".join(f"{s}." for s in [BAND, *SWELLING])  # pasted from S2 without a label
    claims = grounding.score(text, sources, embedder)
    assert [(c.attributed, c.citations) for c in claims] == [(True, ["S2"])] * 4  # the premise
    notes = [line.strip() for line in _shown(answers.print_claims, claims, evidence=False).splitlines()
             if "↳" in line]
    assert notes == ["↳ these 4 sentences cite no passage; ragcli found them in [S2]"]


def test_consecutive_sentences_under_the_same_wrong_label_get_one_note(embedder):
    sources = _sources([320, 321, 126])
    text = f"{BAND} [S1]. {SWELLING[0]} [S1]. Thirst and restlessness are signs of shock [S3]."
    claims = grounding.score(text, sources, embedder)
    assert [(c.cited_as, c.citations) for c in claims[:2]] == [(["S1"], ["S2"])] * 2  # the premise
    shown = _shown(answers.print_claims, claims, evidence=True)
    notes = [line.strip() for line in shown.splitlines() if "↳" in line and "“" not in line]
    assert notes == ["↳ these 2 sentences cite [S1], which does not back them; [S2] does"]
    lines = shown.splitlines()
    note = next(i for i, line in enumerate(lines) if "these 2 sentences" in line)
    assert "swelling" in lines[note - 2] and "Thirst" in lines[note + 1]  # after the run, its quotes kept


def test_a_note_is_said_once_per_run_and_a_different_note_starts_a_new_run():
    def found(text, label):
        return Claim(text, [label], support="supported", attributed=True)

    claims = [found("One sentence of the book here", "S3"), found("Another sentence of the book", "S3"),
              Claim("A sentence the model cited itself", ["S1"], support="supported"),
              found("A third sentence of the book", "S3"), found("A sentence of another passage", "S4"),
              Claim("Moved from the wrong label here", ["S2"], support="supported", cited_as=["S1"])]
    notes = [line.strip() for line in _shown(answers.print_claims, claims, evidence=False).splitlines()
             if "↳" in line]
    assert notes == ["↳ these 2 sentences cite no passage; ragcli found them in [S3]",
                     "↳ the answer cites no passage here; ragcli found it in [S3]",
                     "↳ the answer cites no passage here; ragcli found it in [S4]",
                     "↳ the answer cites [S1], which does not back it; [S2] does"]


# ------------------------------------------------------------------------------ the answer string's labels
def _read_back(text: str) -> list[list[str]]:
    """Each sentence's labels as grounding.score reads the text (a label covers the uncited sentences
    of its run), without scoring."""
    from ragcli.answer.claims import attach_citations, labels_lead, segment, split_claims

    out = []
    for paragraph in grounding._PARAGRAPH_BREAK.split(text):
        claims = [Claim(t, labels) for t, labels in attach_citations(split_claims(paragraph))]
        out += [c.citations for c in grounding._inherit_labels(claims, labels_first=labels_lead(segment(paragraph)))]
    return out


def test_the_json_answer_names_the_label_that_backs_each_sentence(embedder):
    sources = _sources([320, 321, 126])  # only S2 says how tight the band should be
    text = f"{BAND} [S1]. Thirst and restlessness are signs of shock [S3]."
    answer = Answer("how tight should the band be for a snakebite?", None, text, "answered", ["S1", "S3"], [],
                    sources)
    grounding.assess(answer, embedder)
    assert answer.claims[0].cited_as == ["S1"] and answer.claims[0].citations == ["S2"]  # the premise
    out = data.answer_data(answer)
    assert out["answer"] == f"{BAND} [S2]. Thirst and restlessness are signs of shock [S3]."
    assert out["claims"][0]["cited_as"] == ["S1"]  # what the model wrote is kept there
    assert out["withheld_draft"] is None
    assert answer.answer == text  # the text as streamed and shown is the model's
    assert _read_back(out["answer"]) == [c.citations for c in answer.claims]


def test_an_answer_whose_labels_all_back_it_is_printed_as_written(embedder):
    sources = _sources([320, 321, 126])
    text = f"{BAND} [S2]. Thirst and restlessness are signs of shock [S3]."
    answer = Answer("q", None, text, "answered", ["S2", "S3"], [], sources)
    grounding.assess(answer, embedder)
    assert answer.relabelled is None and data.answer_data(answer)["answer"] == text


def _claim(text, citations, cited_as=()):
    return Claim(text, list(citations), support="supported", cited_as=list(cited_as))


def test_moved_labels_are_written_so_every_sentence_reads_back_its_backing_label():
    from ragcli.answer.claims import backing_labels_text

    cases = [  # (answer, claims as ragcli scored them, expected text)
        ("Tie the band. Loosen it [S1].",  # the first sentence had inherited S1, ragcli found S2
         [_claim("Tie the band.", ["S2"], ["S1"]), _claim("Loosen it.", ["S1"])],
         "Tie the band [S2]. Loosen it [S1]."),
        ("Tie the band. Check it. Loosen it [S1].",  # the run before a moved sentence keeps its S1
         [_claim("Tie the band.", ["S1"]), _claim("Check it.", ["S2"], ["S1"]), _claim("Loosen it.", ["S1"])],
         "Tie the band [S1]. Check it [S2]. Loosen it [S1]."),
        ("Tie the band. Loosen it [S1].",  # the moved sentence's own label covered the one before it
         [_claim("Tie the band.", ["S1"]), _claim("Loosen it.", ["S3"], ["S1"])],
         "Tie the band [S1]. Loosen it [S3]."),
        ("[S1] Tie the band. Loosen it.",  # labels first: the next sentence keeps S1
         [_claim("Tie the band.", ["S2"], ["S1"]), _claim("Loosen it.", ["S1"])],
         "[S2] Tie the band. [S1] Loosen it."),
        ("1. Tie the band [S1].\n2. Check it [S1][S3].\n\nLoosen it [S3].",  # lists, two marks, paragraphs
         [_claim("Tie the band.", ["S2"], ["S1"]), _claim("Check it.", ["S4"], ["S1", "S3"]),
          _claim("Loosen it.", ["S3"])],
         "1. Tie the band [S2].\n2. Check it [S4].\n\nLoosen it [S3]."),
    ]
    for text, claims, expected in cases:
        got = backing_labels_text(text, claims)
        assert got == expected, (text, got)
        assert _read_back(got) == [c.citations for c in claims]


def test_a_withheld_draft_is_never_the_json_answer(tmp_path):
    """`no_answer`: `answer` is empty in ask's JSON (and so in serve's /ask, the OpenAI endpoint's
    `ragcli` field and the MCP ask tool, which print the same object) and in a saved turn; the draft
    is in `withheld_draft`."""
    from ragcli.types import Turn

    draft = "Take 100 mg of ibuprofen every 4 hours [S1]."
    answer = Answer("what dose of ibuprofen?", None, draft, "no_answer", [], [], _sources([320]),
                    notice="not answered: the passages do not mention ibuprofen")
    out = data.answer_data(answer)
    assert out["answer"] == "" and out["withheld_draft"] == draft
    assert draft not in json.dumps({k: v for k, v in out.items() if k != "withheld_draft"})
    turn = Turn(conversation_id=1, number=1, question="q", standalone="q", rewritten=False, rewrite={},
                answer=draft, status="no_answer", sources=[], model=None, notice=answer.notice,
                expanded_query=None, claims=[], removed_citations=[], timings={}, created_at="2026-01-01")
    saved = data.turn_data(turn)
    assert saved["answer"] == "" and saved["withheld_draft"] == draft
    live = data.turn_data(turn, answer)
    assert live["answer"] == "" and live["withheld_draft"] == draft
    from ragcli.render.markdown import answer_markdown

    assert "100 mg" not in answer_markdown(answer) and "100 mg" not in _shown(answers.print_answer, answer)
    shown = data.answer_data(Answer("q", None, "Apply pressure [S1].", "answered", ["S1"], [], _sources([320])))
    assert shown["answer"] == "Apply pressure [S1]." and shown["withheld_draft"] is None
