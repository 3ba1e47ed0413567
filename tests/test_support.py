"""Per-claim support scorer: the real all-MiniLM-L6-v2 model on hand-written medical sentences.

The sentences here are our own text, written for these tests.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragcli.answer.support import (
    SupportResult, is_negated, misplaced_numbers, missing_numbers, numbers, score_claim, score_claims,
)
from ragcli.text import sentences as split_sentences, truncation_stem
from ragcli.answer import support

PASSAGE = [
    "Tension pneumothorax is a life-threatening condition in which air collects in the chest.",
    "Give the casualty 30 mg of ketorolac by intramuscular injection for moderate pain.",
    "Apply a tourniquet two to three inches above the wound to stop severe arterial bleeding.",
    "Loosen the tourniquet only when a medical officer tells you to.",
]


class CountingEmbedder:
    """The real embedder, counting its calls."""

    def __init__(self, inner):
        self.inner, self.name, self.dim, self.calls = inner, inner.name, inner.dim, 0

    def embed(self, texts):
        self.calls += 1
        return self.inner.embed(texts)


@pytest.fixture(scope="module")
def embedder():
    from ragcli.models.embed import get_embedder

    return get_embedder()


# ------------------------------------------------------------------------------ real model
def test_supporting_sentence_is_supported(embedder):
    claim = "A tourniquet placed above the wound stops severe arterial bleeding."
    r = score_claim(claim, PASSAGE, embedder)
    assert r.level == "supported", r
    assert r.best_index == 2
    assert r.best_sentence == PASSAGE[2]


def test_unrelated_sentence_is_unsupported(embedder):
    claim = "Children should receive the measles vaccine before they start school."
    r = score_claim(claim, PASSAGE, embedder)
    assert r.level == "unsupported", r


def test_number_mismatch_is_never_supported(embedder):
    good = score_claim("Give 30 mg of ketorolac by intramuscular injection for moderate pain.",
                       PASSAGE, embedder)
    bad = score_claim("Give 60 mg of ketorolac by intramuscular injection for moderate pain.",
                      PASSAGE, embedder)
    assert good.level == "supported" and not good.number_mismatch
    assert bad.number_mismatch
    assert bad.level != "supported"
    assert bad.score < good.score


def test_unit_mismatch_is_never_supported(embedder):
    bad = score_claim("Give 30 g of ketorolac by intramuscular injection for moderate pain.",
                      PASSAGE, embedder)
    assert bad.number_mismatch and bad.level != "supported"


def test_negation_mismatch_lowers_the_score_and_caps_the_level(embedder):
    plain = score_claim("Loosen the tourniquet only when a medical officer tells you to.",
                        PASSAGE, embedder)
    negated = score_claim("Never loosen the tourniquet, even when a medical officer tells you to.",
                          PASSAGE, embedder)
    assert negated.negation_mismatch and not plain.negation_mismatch
    assert negated.score < plain.score
    assert negated.level != "supported"


def test_a_negation_governs_its_own_clause(embedder):
    # our own sentence, shaped as manuals write a warning: "do not X; X may do Y"
    passage = ["Remove the splinter with a clean needle.",
               "Do not squeeze the wound; squeezing may push dirt deeper into the tissue."]
    stated = score_claim("Squeezing may push dirt deeper into the tissue.", passage, embedder)
    assert not stated.negation_mismatch and stated.level == "supported"
    denied = score_claim("Squeezing does not push dirt deeper into the tissue.", passage, embedder)
    assert denied.negation_mismatch and denied.level != "supported"
    urged = score_claim("Squeeze the wound.", passage, embedder)
    assert urged.negation_mismatch and urged.level != "supported"
    copied = score_claim(passage[1], passage, embedder)  # both clauses, as the passage has them
    assert not copied.negation_mismatch and copied.level == "supported"


# Numbers stay with what they count: our own passages, each tying one number to one action or thing and
# another number of the same unit to another (times, doses, ratios).
TIMES = ["Give the casualty 2 tablets every 6 hours; have him drink a glass of water every 2 hours."]
DOSES = ["Inject 10 mg of morphine into the thigh and give 500 mg of paracetamol by mouth."]
RATIO = ["To make the cleaning solution, mix 1 part bleach with 10 parts water."]
ROUNDS = ["Give 30 chest compressions, then give 2 rescue breaths.",
          "Check the pulse for 10 seconds after every 5 cycles."]


@pytest.mark.parametrize("passage, swapped, number", [
    (TIMES, "Give the casualty 2 tablets every 2 hours.", (2.0, "h")),
    (TIMES, "Have him drink a glass of water every 6 hours.", (6.0, "h")),
    (DOSES, "Inject 500 mg of morphine into the thigh.", (500.0, "mg")),
    (DOSES, "Give 10 mg of paracetamol by mouth.", (10.0, "mg")),
    (RATIO, "Mix 10 parts bleach with 1 part water.", (10.0, None)),
    (ROUNDS, "Give 2 chest compressions, then give 30 rescue breaths.", (2.0, None)),
])
def test_a_number_tied_to_another_action_is_not_supported(embedder, passage, swapped, number):
    assert number in misplaced_numbers(swapped, " ".join(passage))
    result = score_claim(swapped, passage, embedder)
    assert result.number_mismatch and result.level != "supported"


@pytest.mark.parametrize("passage, claim", [
    (TIMES, "Give the casualty 2 tablets every 6 hours."),
    (TIMES, "Have him drink a glass of water every 2 hours."),
    (TIMES, "Every 2 hours, have him drink a glass of water."),  # reordered, still tied right
    (DOSES, "Inject 10 mg of morphine into the thigh."),
    (DOSES, "Give 500 mg of paracetamol by mouth."),
    (RATIO, "Mix 1 part bleach with 10 parts water."),
    (ROUNDS, "Give 30 chest compressions, then give 2 rescue breaths."),
    (ROUNDS, "Check the pulse for 10 seconds after every 5 cycles."),
])
def test_a_number_tied_as_in_the_passage_stays_supported(embedder, passage, claim):
    assert misplaced_numbers(claim, " ".join(passage)) == []
    result = score_claim(claim, passage, embedder)
    assert not result.number_mismatch and result.level == "supported", result


def test_a_number_the_passage_ties_to_nothing_else_is_left_to_the_other_checks():
    # one time span in the passage: a paraphrase of its action is no swap
    assert misplaced_numbers("Take two pills every 6 hours.", "Give 2 tablets every 6 hours.") == []
    # a number the passage lacks is missing_numbers' to report, not a misplaced one
    assert misplaced_numbers("Give 2 tablets every 8 hours.", TIMES[0]) == []
    assert (8.0, "h") in missing_numbers("Give 2 tablets every 8 hours.", TIMES[0])


def test_score_claims_embeds_once_and_matches_score_claim(embedder):
    counting = CountingEmbedder(embedder)
    other = ["Measles is a contagious viral illness.", "Vaccination prevents most cases."]
    claims = [
        ("A tourniquet placed above the wound stops severe arterial bleeding.", [PASSAGE, other]),
        ("Measles is caused by a virus.", [other]),
        ("Nothing cited here.", []),
    ]
    results = score_claims(claims, counting)
    # one call for every sentence; one more only for the words of the swaps found (none near in meaning)
    assert counting.calls == 1  # no swap candidate here: no second call for the words of one
    assert [len(r) for r in results] == [2, 1, 0]
    single = score_claim(claims[0][0], PASSAGE, embedder)
    assert results[0][0].level == single.level
    assert results[0][0].score == pytest.approx(single.score, abs=1e-5)
    assert results[0][0].score > results[0][1].score
    assert results[1][0].level in ("supported", "weak")


def test_precomputed_vectors_skip_the_embedder(embedder):
    claim = "A tourniquet placed above the wound stops severe arterial bleeding."
    vecs = embedder.embed([claim] + PASSAGE)
    r = score_claim(claim, PASSAGE, None, claim_vec=vecs[0], sent_vecs=vecs[1:])
    assert r.level == "supported"


# ------------------------------------------------------------------ no model needed
def test_empty_passage_is_unsupported():
    r = score_claim("Anything at all.", [], None)
    assert r == SupportResult("unsupported", 0.0, "", -1)


def test_score_claim_without_embedder_or_vectors_raises():
    with pytest.raises(ValueError):
        score_claim("A claim.", ["A sentence."], None)


def test_deterministic_fake_vectors_follow_the_features():
    """Identical vectors + identical words: the top of the scale; orthogonal + no words: the bottom."""
    v = np.eye(4, dtype=np.float32)
    same = score_claim("Splint the fractured forearm.", ["Splint the fractured forearm."], None,
                       claim_vec=v[0], sent_vecs=v[:1])
    apart = score_claim("Splint the fractured forearm.", ["Measles spreads by air."], None,
                        claim_vec=v[0], sent_vecs=v[1:2])
    assert same.level == "supported" and apart.level == "unsupported"


def test_numbers_and_units():
    assert (60.0, "mg") in numbers("Give 60 mg now.")
    assert (1000.0, None) in numbers("1,000 soldiers")
    assert (32.0, "%") in numbers("in 32% of cases")
    assert numbers("IL-6 and CD4 cells rose in COVID-19") == []
    assert missing_numbers("Give 60 mg.", "Give 30 mg.") == [(60.0, "mg")]
    assert missing_numbers("Give 60 mg.", "Give 60mg.") == []
    assert missing_numbers("Give 60 mg.", "Give 60 g.") == [(60.0, "mg")]
    assert missing_numbers("Wait two hours.", "Wait 2 hours.") == []


def test_negation_cues():
    assert is_negated("The drug does not reduce mortality.")
    assert is_negated("The splint failed to hold the bone.")
    assert is_negated("Aspirin doesn't help here.")
    assert is_negated("Recovery without surgery is common.")
    assert not is_negated("Aspirin notably reduces pain.")


def test_split_sentences_keeps_abbreviations():
    text = "Apply pressure, e.g. with a bandage. Then elevate the limb! Dr. Smith et al. agreed. 3 died."
    assert split_sentences(text) == [
        "Apply pressure, e.g. with a bandage.",
        "Then elevate the limb!",
        "Dr. Smith et al. agreed.",
        "3 died.",
    ]


def test_stemming_matches_word_forms():
    stem = truncation_stem
    assert stem("applied") == stem("applies") == stem("apply")
    assert stem("bleeding") == stem("bleeds")
    assert stem("increased") == stem("increases") == stem("increase")


# ------------------------------------------------------------------ swapped words (issue 47)
BOOK = (Path(__file__).resolve().parents[1] / "corpus" / "sample_book_text.txt").read_text(encoding="utf-8")


def _paragraph(words: str) -> list[str]:
    """The sentences of the sample book's paragraph that holds `words`."""
    para = next(p for p in BOOK.split("\n\n") if words in " ".join(p.split()))
    return split_sentences(para)


@pytest.mark.parametrize("claim, words, swapped", [
    ("The skull is incised and reflected, together with the temporalis muscle when required.",
     "The scalp is incised and reflected", "skull"),
    ("Cerebral autoregulation is the difference between MAP and ICP: CPP = MAP - ICP.",
     "Cerebral perfusion pressure (CPP) is the", "autoregulation"),
])
def test_a_swapped_subject_object_or_predicate_is_not_supported(embedder, claim, words, swapped, monkeypatch):
    monkeypatch.setattr(support, "SWAP_CHECK", True)
    r = score_claim(claim, _paragraph(words), embedder)
    assert r.level != "supported", r
    assert any(swapped in s.claim_words for s in r.swaps), r.swaps
    # the same sentence through score_claims (as an answer is graded) is not ticked either
    assert score_claims([(claim, [_paragraph(words)])], embedder)[0][0].level != "supported"


@pytest.mark.parametrize("claim, words", [
    ("The scalp is incised and reflected, together with the temporalis muscle when required.",
     "The scalp is incised and reflected"),
    ("Cerebral perfusion pressure is the difference between MAP and ICP: CPP = MAP - ICP.",
     "Cerebral perfusion pressure (CPP) is the"),
    ("CPP is the difference between mean arterial pressure and intracranial pressure.",
     "Cerebral perfusion pressure (CPP) is the"),
    ("The limits of cerebral autoregulation are shifted upward by chronic hypertension.",
     "shifted upward by chronic hypertension"),
])
def test_the_books_sentence_and_its_abbreviations_stay_supported(embedder, claim, words, monkeypatch):
    monkeypatch.setattr(support, "SWAP_CHECK", True)
    r = score_claim(claim, _paragraph(words), embedder)
    assert r.level == "supported" and not r.swaps, r


def test_swaps_by_position_not_by_word_list():
    from ragcli.answer.support import swapped_words

    quote = "If the bleeding continues, apply a pressure dressing."
    assert [s.claim_words for s in swapped_words("If the bleeding continues, elevate the limb.", quote)] \
        == [("elevate", "limb")]
    assert swapped_words("If the bleeding continues, apply a pressure dressing.", quote) == []
    drug = "Removing the 2 PAM Cl autoinjector from the MARK I clip."
    assert swapped_words("Removing the atropine autoinjector from the MARK I clip.", drug)
    # an imperative's verb against the book's lead-in, a pronoun named, an aside: no swap
    assert swapped_words("Look for inability to move the injured part.",
                         "Indications of a fracture are deformity, pain, inability to move the injured part.") == []
    assert swapped_words("If the nightmares are frequent, seek help.", "If it happens frequently, seek help.") == []
    assert swapped_words("Digital pressure (pressure with the thumbs) controls bleeding.",
                         "Digital pressure (often called pressure points) controls bleeding.") == []


def test_a_pair_near_in_meaning_is_no_swap(embedder):
    from ragcli.answer.support import swapped_words

    quote = "The physician examines the wound before closing it."
    assert swapped_words("The doctor examines the wound before closing it.", quote)  # by position alone
    assert swapped_words("The doctor examines the wound before closing it.", quote, embedder) == []
    assert swapped_words("The nurse examines the wound before closing it.", quote, embedder)
