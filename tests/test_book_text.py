"""Text of the books (issue 47): a drawing's labels kept out of the sentence it interrupts, and the
book's terms (query expansion) whole headings and phrases, never fragments. The bundled sample book."""
from __future__ import annotations

from pathlib import Path

import pytest

from ragcli.ingest import pdf, sections, vocabulary

PDF = Path(__file__).resolve().parents[1] / "corpus" / "cerebrovascular-neurosurgery-primer.pdf"


@pytest.fixture(scope="module")
def book():
    return pdf.parse(PDF)


def _paragraphs(book) -> list[str]:
    return [t for s in book.sections for _, t in s.paragraphs]


def test_mending_joins_only_a_sentence_that_goes_on():
    paras = [(4, "Hyperventilation therefore"), (5, "Figure 1.2: Cerebral autoregulation."),
             (5, "constricts the arterioles."), (5, "Figure 2.1: A clip."), (5, "c. Tie the ends.")]
    assert sections.mend_paragraphs(paras) == [
        (4, "Hyperventilation therefore constricts the arterioles."), (5, "Figure 1.2: Cerebral autoregulation."),
        (5, "Figure 2.1: A clip."), (5, "c. Tie the ends.")]
    whole = [(4, "A sentence that ends."), (5, "Figure 1.2: A caption."), (5, "and a lower-case start.")]
    assert sections.mend_paragraphs(whole) == whole


def test_book_terms_are_whole_headings_and_phrases(book):
    terms = {t for t, _, _ in vocabulary.extract_terms(book)}
    assert "after aneurysmal" not in terms and "circle willis" not in terms  # across a preposition, "of"
    assert "glasgow coma scale" in terms and "coma scale" not in terms  # the whole phrase, not its part
    assert "The Circle of Willis" in terms and "Front matter" not in terms
    assert "Pterional craniotomy" in terms  # a caption's title, not its first 80 characters
    assert not any(t.startswith("Pterional craniotomy: outline") for t in terms)
    for term in terms:
        assert vocabulary.whole_term(term), term


@pytest.mark.parametrize("term, whole", [
    ("WASH THE BLISTER WITH 2. STERILIZE A NEEDLE BY", False),  # FM 21-18's figure steps read as a heading
    ("after aneurysmal", False),
    ("CHAPTER 1", False),
    ("F 0ooT", False),
    ("Care of Sick and Injured", True),
    ("Spetzler-Martin Grading", True),
    ("The Circle of Willis", True),
])
def test_whole_term(term, whole):
    assert vocabulary.whole_term(term) is whole
