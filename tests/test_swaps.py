"""Swapped words (answer/swaps.py, issue 47): real answer sentences of the labelled runs against the book
sentences they were ticked under (tests/fixtures/swap-pairs.jsonl; the books are US government works, see
tests/fixtures/ATTRIBUTION.md), with the real embedding model.

`differs`: the sentence puts a word where the book has another (a drug, a body part, a tag colour, a
quantity); `same`: a paraphrase, a cut or a list item of the book's sentence, which must keep its tick.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from ragcli.answer import grounding, support
from ragcli.answer.swaps import swapped_words
from ragcli.render import answers
from ragcli.text import sentences
from ragcli.types import Hit, Source

PAIRS = [json.loads(line) for line in
         (Path(__file__).parent / "fixtures" / "swap-pairs.jsonl").read_text(encoding="utf-8").splitlines()
         if line.strip()]
DIFFERS = [p for p in PAIRS if p["label"] == "differs"]
SAME = [p for p in PAIRS if p["label"] == "same"]


def _id(p):
    return p["claim"][:40]


@pytest.mark.parametrize("pair", DIFFERS, ids=_id)
def test_a_word_put_for_the_books_is_found(embedder, pair):
    found = swapped_words(pair["claim"], pair["passage"], embedder)
    assert any(pair["swapped"] in s.claim_words for s in found), found


@pytest.mark.parametrize("pair", SAME, ids=_id)
def test_a_paraphrase_cut_or_list_item_is_no_swap(embedder, pair):
    # one claim word against a list or a running header, a word's other form ("bite", "bitten")
    assert swapped_words(pair["claim"], pair["passage"], embedder) == []


@pytest.mark.parametrize("claim_start", ["Removing the atropine", "If the stick", "Soak the foot",
                                         "These survivors are marked"])
def test_the_swap_takes_the_tick_the_scorer_would_give(embedder, claim_start, monkeypatch):
    pair = next(p for p in DIFFERS if p["claim"].startswith(claim_start))
    passage = sentences(pair["passage"])
    monkeypatch.setattr(support, "SWAP_CHECK", False)
    assert support.score_claims([(pair["claim"], [passage])], embedder)[0][0].level == "supported"
    monkeypatch.setattr(support, "SWAP_CHECK", True)
    result = support.score_claims([(pair["claim"], [passage])], embedder)[0][0]
    assert result.level == "weak"
    assert support.why_not_supported(result).endswith(f"the answer says {pair['swapped']}")


def test_the_claim_says_why_it_is_not_ticked(embedder, monkeypatch):
    monkeypatch.setattr(support, "SWAP_CHECK", True)
    pair = next(p for p in DIFFERS if p["claim"].startswith("If the stick"))
    hit = Hit(passage_id=1, kind="passage", book_id=1, book_title="FM 4-25.11", section_path=["Tourniquet"],
              page_start=40, page_end=40, page_label="2-20", text=pair["passage"])
    claims = grounding.score(pair["claim"] + " [S1]", [Source(label="S1", hit=hit)], embedder)
    assert claims[0].support == "weak"
    assert claims[0].why == "the book says tourniquet, the answer says stick"
    right = grounding.score(pair["passage"] + " [S1]", [Source(label="S1", hit=hit)], embedder)
    assert right[0].support == "supported" and right[0].why is None
    # the terminal's --evidence shows the reason under the quote; without --evidence the tick alone
    console = Console(record=True, width=200, color_system=None)
    answers.print_claims(console, claims, evidence=True)
    assert "↳ the book says tourniquet, the answer says stick" in console.export_text()
    console = Console(record=True, width=200, color_system=None)
    answers.print_claims(console, claims, evidence=False)
    assert "the answer says stick" not in console.export_text()


def test_numbers_and_a_lists_step_number_are_aligned():
    three = next(p for p in DIFFERS if p["claim"].startswith("3 quarts"))
    assert [s.claim_words for s in swapped_words(three["claim"], three["passage"])] == [("3", "quarts")]
    assert swapped_words("Store 1 gallon of water per person per day.", three["passage"]) == []
    assert swapped_words("Store one gallon of water per person per day.", three["passage"]) == []
    # "1 Check airway": the step's number does not swallow the verb
    assert swapped_words("Check airway and breathing.", "1 Check airway/breathing.") == []


def test_a_predicate_participle_and_a_words_other_forms_are_no_swap():
    book = ("The standard regimen is nimodipine 60 mg by mouth or nasogastric tube every 4 hours for 21 days, "
            "started as soon as the diagnosis is made.")  # corpus/sample_book_text.txt, section 5.1
    assert swapped_words("Nimodipine 60 mg is given every 4 hours for 21 days.", book) == []
    assert swapped_words("Nimodipine 60 mg is given every 4 hours for 21 days, started as soon as the "
                         "diagnosis is made.", book) == []
    # ... and the drug swapped in the same sentence is found
    assert [s.claim_words for s in swapped_words(
        "The standard regimen is nicardipine 60 mg by mouth every 4 hours for 21 days.", book)] == [("nicardipine",)]
