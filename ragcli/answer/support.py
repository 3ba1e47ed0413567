"""Per-claim support: does a cited passage back this sentence of an answer?

No extra model: the already loaded sentence embedder (all-MiniLM-L6-v2) plus cheap lexical evidence at
the sentence level (content-word overlap on truncation stems, numbers with their units, negation),
combined by a small logistic regression fitted on SciFact train (bench/answers/support_scifact.py --fit).

A claim whose number (dose, count, percentage, year) is not in the cited passage, or that the passage
ties to other words than the claim does (`misplaced_numbers`: "every 2 hours" of the water given to the
tablets), or whose negation differs from that of the best sentence's clause it repeats, or that has a
word where the passage has another (`swapped_words`: "the skull is incised" against "the scalp is
incised"), is never "supported". Figures:
docs/benchmarks.md (per-claim support).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from ragcli.answer.claim_terms import (  # noqa: F401  (numbers, is_negated, ...: read as support.X)
    NEGATION_PHRASES, NEGATION_WORDS, NUMBER_WORDS, UNITS, _overlap, content_terms, is_negated,
    misplaced_numbers, missing_numbers, negation_mismatch, numbers, term_weight,
)
from ragcli.answer.swaps import Swap, in_words, not_synonyms, swapped_words  # noqa: F401

# ------------------------------------------------------------------------------ fitted constants
# Logistic regression over FEATURES, fitted on SciFact train (SUPPORT vs hard-negative abstracts).
FEATURES = ("cos_max", "cos_win", "lex_win", "lex_cover", "num_missing", "neg_mismatch")
COEFS = (-0.193, 2.063, 1.972, 4.352, -1.129, -0.5)
INTERCEPT = -4.521
NEGATION_COEF = -0.5  # set, not fitted on hard negatives (a fit with CONTRADICT as negatives: -0.51)
SUPPORTED_AT = 0.809  # "supported" at or above: precision 0.90 on train (a)
WEAK_AT = 0.226  # "weak" at or above (95% of train SUPPORT pairs are); below: "unsupported"

LEVELS = ("supported", "weak", "unsupported")


@dataclass
class SupportResult:
    level: str  # "supported" | "weak" | "unsupported"
    score: float  # calibrated probability that the passage supports the claim
    best_sentence: str
    best_index: int  # index into the passage's sentences, -1 when the passage is empty
    number_mismatch: bool = False  # a number of the claim is missing from the passage, or tied there to other words
    negation_mismatch: bool = False  # negated on one side only
    features: dict = field(default_factory=dict)
    swaps: list = field(default_factory=list)  # Swap: a word of the claim where the passage has another


# The swapped-word cap on a tick (D125, D146): a sentence the scorer would tick that puts a word where its
# quote has another is `weak`, and says why (`why_not_supported`). On the labelled answer runs it halves
# the wrong ticks (FM/ATP 17 -> 7, held-out CERT 10 -> 5); SciFact validation's `supported` precision
# 0.920 -> 0.931 (recall 0.371 -> 0.218). bench/answers/support_swaps.py and support_scifact.py measure it.
SWAP_CHECK = True


# ------------------------------------------------------------------------------------- features
def _normalise(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.maximum(n, 1e-12)


def _windows(n: int) -> list[tuple[int, ...]]:
    """Single sentences, then each sentence with its next neighbour."""
    return [(i,) for i in range(n)] + [(i, i + 1) for i in range(n - 1)]


def claim_features(claim: str, sentences: Sequence[str], claim_vec: np.ndarray,
                   sent_vecs: np.ndarray) -> tuple[dict, int]:
    """The features of FEATURES (and a few more for the benchmark) and the best sentence's index."""
    sims = sent_vecs @ claim_vec
    cterms = {t: term_weight(t) for t in content_terms(claim)}
    sterms = [set(content_terms(s)) for s in sentences]
    lex = np.array([_overlap(cterms, s) for s in sterms])
    wins = _windows(len(sentences))
    win_vecs = _normalise(np.stack([sent_vecs[list(w)].sum(axis=0) for w in wins]))
    win_cos = win_vecs @ claim_vec
    win_lex = np.array([_overlap(cterms, set().union(*(sterms[i] for i in w))) for w in wins])
    best = int(np.argmax(sims + lex))
    top = np.sort(sims)[::-1]
    whole = " ".join(sentences)
    all_terms = set().union(*sterms)
    nums = numbers(claim)
    missing = missing_numbers(claim, whole) if nums else []
    f = {
        "cos_max": float(top[0]),
        "cos_top2": float(top[:2].mean()),
        "cos_margin": float(top[0] - top[1]) if len(top) > 1 else float(top[0]),
        "cos_win": float(win_cos.max()),
        "cos_passage": float(_normalise(sent_vecs.mean(axis=0)) @ claim_vec),
        "lex_best": float(lex.max()),
        "lex_win": float(win_lex.max()),
        "lex_cover": _overlap(cterms, all_terms),
        "num_missing": len(missing) / len(nums) if nums else 0.0,
        "neg_mismatch": float(negation_mismatch(claim, sentences[best])),
        "has_numbers": bool(nums),
    }
    return f, best


def _probability(f: dict) -> float:
    z = INTERCEPT + sum(c * f[name] for name, c in zip(FEATURES, COEFS))
    return float(1.0 / (1.0 + np.exp(-z)))


def why_not_supported(result: SupportResult) -> Optional[str]:
    """The reader's words for a sentence the scorer would tick that a swapped word keeps `weak`: "the
    book says scalp, the answer says skull" (the first swap); None otherwise."""
    if result.level == "supported" or not result.swaps or result.score < SUPPORTED_AT:
        return None
    if result.number_mismatch or result.negation_mismatch:
        return None
    return in_words(result.swaps[0])


def level_for(score: float, number_mismatch: bool = False, negation_mismatch: bool = False,
              swapped: bool = False) -> str:
    """A missing number, a negation on one side only or a swapped word caps the level at "weak"."""
    if score >= SUPPORTED_AT and not number_mismatch and not negation_mismatch and not swapped:
        return "supported"
    return "weak" if score >= WEAK_AT else "unsupported"


# ---------------------------------------------------------------------------------------- scoring
def score_claim(claim: str, passage_sentences: list[str], embedder=None, *,
                claim_vec: Optional[np.ndarray] = None,
                sent_vecs: Optional[np.ndarray] = None) -> SupportResult:
    """How well one passage (already split into sentences) backs one claim.

    Pass claim_vec / sent_vecs when they are already embedded; otherwise the embedder is called once
    (and once more for the words of a swap, when there is one: `not_synonyms`).
    """
    sentences = [s for s in passage_sentences if s.strip()]
    if not sentences:
        return SupportResult("unsupported", 0.0, "", -1)
    if claim_vec is None or sent_vecs is None:
        if embedder is None:
            raise ValueError("score_claim needs an embedder or both claim_vec and sent_vecs")
        vecs = embedder.embed([claim] + sentences)
        claim_vec, sent_vecs = vecs[0], vecs[1:]
    f, best = claim_features(claim, sentences, np.asarray(claim_vec), np.asarray(sent_vecs))
    score = _probability(f)
    num_bad, neg_bad = f["num_missing"] > 0, bool(f["neg_mismatch"])
    if not num_bad and f.get("has_numbers"):
        num_bad = bool(misplaced_numbers(claim, " ".join(sentences)))
    swaps: list[Swap] = []
    if SWAP_CHECK and level_for(score, num_bad, neg_bad) == "supported":  # only a tick is worth the check
        swaps = swapped_words(claim, " ".join(sentences[i] for i in stretch_of(claim, sentences, best)), embedder)
    return SupportResult(level_for(score, num_bad, neg_bad, bool(swaps)), score, sentences[best], best,
                         number_mismatch=num_bad, negation_mismatch=neg_bad, features=f, swaps=swaps)


def stretch_of(claim: str, sentences: Sequence[str], best: int) -> tuple[int, ...]:
    """The best sentence, or it with a neighbour when the pair holds more of the claim's words (a
    claim that joins two sentences is read against both)."""
    cterms = {t: term_weight(t) for t in content_terms(claim)}
    options = [(best,)] + [w for w in ((best - 1, best), (best, best + 1)) if 0 <= w[0] and w[1] < len(sentences)]
    cover = [_overlap(cterms, set().union(*(set(content_terms(sentences[i])) for i in w))) for w in options]
    top = max(cover)
    return options[cover.index(top)]


def score_claims(claims: list[tuple[str, list[list[str]]]], embedder) -> list[list[SupportResult]]:
    """Score each claim against each of its cited passages, embedding everything in ONE call.

    claims: [(claim text, [passage sentences, ...]), ...]; returns one SupportResult per passage,
    in the same order. Sentences repeated across passages or claims are embedded once.
    """
    index: dict[str, int] = {}
    for claim, passages in claims:
        for text in [claim] + [s for p in passages for s in p if s.strip()]:
            index.setdefault(text, len(index))
    if not index:
        return [[] for _ in claims]
    vecs = np.asarray(embedder.embed(list(index)))
    out = []
    for claim, passages in claims:
        row = []
        for p in passages:
            sentences = [s for s in p if s.strip()]
            sv = vecs[[index[s] for s in sentences]] if sentences else None
            row.append(score_claim(claim, sentences, claim_vec=vecs[index[claim]], sent_vecs=sv))
        out.append(row)
    swapped = [r for row in out for r in row if r.swaps]
    if swapped:  # one more call, for the words of every swap found: a pair near in meaning is none
        kept = {id(s) for s in not_synonyms([s for r in swapped for s in r.swaps], embedder)}
        for r in swapped:
            r.swaps = [s for s in r.swaps if id(s) in kept]
            r.level = level_for(r.score, r.number_mismatch, r.negation_mismatch, bool(r.swaps))
    return out
