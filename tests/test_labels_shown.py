"""What ask shows of the labels ragcli moved or found (session 7): a repointed or attributed label is
in the answer's `citations` and its Sources list, `found_citations` names it, and the "↳" note of
consecutive sentences with the same note is said once (real FM 4-25.11 passages, real embedder)."""
from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from ragcli.answer import grounding
from ragcli.render import data, terminal
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

    shown = _shown(terminal.print_answer, answer)
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
    assert "found by ragcli" not in _shown(terminal.print_answer, answer)


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
    notes = [line.strip() for line in _shown(terminal.print_claims, claims, evidence=False).splitlines()
             if "↳" in line]
    assert notes == ["↳ these 4 sentences cite no passage; ragcli found them in [S2]"]


def test_consecutive_sentences_under_the_same_wrong_label_get_one_note(embedder):
    sources = _sources([320, 321, 126])
    text = f"{BAND} [S1]. {SWELLING[0]} [S1]. Thirst and restlessness are signs of shock [S3]."
    claims = grounding.score(text, sources, embedder)
    assert [(c.cited_as, c.citations) for c in claims[:2]] == [(["S1"], ["S2"])] * 2  # the premise
    shown = _shown(terminal.print_claims, claims, evidence=True)
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
    notes = [line.strip() for line in _shown(terminal.print_claims, claims, evidence=False).splitlines()
             if "↳" in line]
    assert notes == ["↳ these 2 sentences cite no passage; ragcli found them in [S3]",
                     "↳ the answer cites no passage here; ragcli found it in [S3]",
                     "↳ the answer cites no passage here; ragcli found it in [S4]",
                     "↳ the answer cites [S1], which does not back it; [S2] does"]
