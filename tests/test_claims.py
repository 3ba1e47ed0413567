"""Claim splitting (pysbd + post-processing) and citation attachment."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcli.answer.citations import validate
from ragcli.answer.claims import attach_citations, split_claims
from ragcli.text import sentences as split_sentences_plain

SPLITS = [
    ("One. Two.", ["One.", "Two."]),
    ("Use a belt, e.g. a strap [S1]. It works [S2].", ["Use a belt, e.g. a strap [S1].", "It works [S2]."]),
    ("That is, i.e. the skull. Next.", ["That is, i.e. the skull.", "Next."]),
    ("See Fig. 2 for the cut [S1]. Then close.", ["See Fig. 2 for the cut [S1].", "Then close."]),
    ("It is on p. 45 of the book. Next.", ["It is on p. 45 of the book.", "Next."]),
    ("Dr. Smith operated. He was fast.", ["Dr. Smith operated.", "He was fast."]),
    ("Give 2.5 mg twice. Then stop.", ["Give 2.5 mg twice.", "Then stop."]),
    ("Cut approx. 3 cm [S1]. Done.", ["Cut approx. 3 cm [S1].", "Done."]),
    ("Smith et al. found it. It holds.", ["Smith et al. found it.", "It holds."]),
    ("The end. [S1] Next one.", ["The end. [S1]", "Next one."]),
    ("The end.[S1][S2] Next one.", ["The end.[S1][S2]", "Next one."]),
    ("The end. [S1, S2] Next one.", ["The end. [S1, S2]", "Next one."]),
    ("1. First step [S1].\n2. Second step.", ["First step [S1].", "Second step."]),
    ("- one [S1]\n- two [S2]", ["one [S1]", "two [S2]"]),
    ("• bullet one.\n• bullet two.", ["bullet one.", "bullet two."]),
    ("Para one [S1].\n\nPara two [S2].", ["Para one [S1].", "Para two [S2]."]),
    ("Line without stop\nNext line.", ["Line without stop", "Next line."]),
    ("[S1] Leading mark. Then.", ["[S1] Leading mark.", "Then."]),
    ("Is it? Yes! Fine.", ["Is it?", "Yes!", "Fine."]),
    ("He said \"stop.\" Then left.", ["He said \"stop.\"", "Then left."]),
    ("Wait... and more. Done.", ["Wait... and more.", "Done."]),
    ("The answer is no. Really.", ["The answer is no.", "Really."]),
    ("", []),
    ("   \n  ", []),
]


@pytest.mark.parametrize("text, expected", SPLITS)
def test_split_claims(text, expected):
    assert split_claims(text) == expected


def test_attach_citations():
    sentences = ["It works [S1].", "Groups [S1][S3] too.", "None here.", "Old style [S2, F1]."]
    assert attach_citations(sentences) == [
        ("It works.", ["S1"]), ("Groups too.", ["S1", "S3"]), ("None here.", []),
        ("Old style.", ["S2", "F1"])]


def test_validate_then_split():
    raw = "Craniotomy removes bone [S1, S9]. It heals (p. 99). See [Source 2]."
    clean = validate(raw, {"S1", "S2"}).text
    pairs = attach_citations(split_claims(clean))
    assert pairs == [("Craniotomy removes bone.", ["S1"]), ("It heals.", []), ("See.", ["S2"])]


PLAIN = [
    ("A wrapped sen-\ntence goes on\nhere. Next one.", ["A wrapped sentence goes on here.", "Next one."]),
    ("Apply it (Fig. 2-31). Tighten.", ["Apply it (Fig. 2-31).", "Tighten."]),
    ("Para.\n\nDr. Who came.", ["Para.", "Dr. Who came."]),
    ("Dose 2.5 mg/kg i.v. daily. Monitor.", ["Dose 2.5 mg/kg i.v. daily.", "Monitor."]),
    ("Give 5 mg i.v. once. Then 2 mg p.o. daily.", ["Give 5 mg i.v. once.", "Then 2 mg p.o. daily."]),
]


@pytest.mark.parametrize("text, expected", PLAIN)
def test_split_sentences_plain(text, expected):
    assert split_sentences_plain(text) == expected


WORDS = st.sampled_from(["The", "skull", "is", "cut", "e.g.", "Dr.", "2.5", "mg", "Fig.", "2", "p.", "45",
                         "[S1]", "[S2]", "[F1]", ".", "!", "?", ",", "\n", "\n\n", "- ", "1. "])


@settings(max_examples=200, deadline=None)
@given(st.lists(WORDS, max_size=40).map(" ".join))
def test_split_keeps_every_citation_and_word(text):
    claims = split_claims(text)
    joined = " ".join(claims)
    assert re.findall(r"\[[SF]\d\]", joined) == re.findall(r"\[[SF]\d\]", text)
    for word in ("skull", "Dr.", "2.5", "45"):
        assert joined.count(word) == text.count(word)
    for sentence, labels in attach_citations(claims):
        assert "[" not in sentence
        assert all(lab in ("S1", "S2", "F1") for lab in labels)
