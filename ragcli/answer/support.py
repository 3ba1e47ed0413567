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

import re
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from ragcli.text import SUPPORT_STOPWORDS, SUPPORT_TOKEN, truncation_stem

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


# ------------------------------------------------------------------------------------ text bits
NEGATION_WORDS = frozenset(
    "not no never without none neither nor cannot unable lack lacks lacked lacking absence absent".split()
)
NEGATION_PHRASES = re.compile(r"\bfail(?:s|ed|ing)? to\b|n't\b|\bno longer\b", re.I)
NUMBER_WORDS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
}
UNITS = {
    "%": "%", "percent": "%", "mg": "mg", "milligram": "mg", "milligrams": "mg", "g": "g", "gram": "g",
    "grams": "g", "kg": "kg", "mcg": "ug", "µg": "ug", "μg": "ug", "ug": "ug", "ml": "ml", "l": "l",
    "mmol": "mmol", "mol": "mol", "iu": "iu", "units": "iu", "mm": "mm", "cm": "cm", "m": "m",
    "km": "km", "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h", "min": "min",
    "minute": "min", "minutes": "min", "s": "s", "sec": "s", "seconds": "s", "day": "day",
    "days": "day", "week": "week", "weeks": "week", "wk": "week", "month": "month", "months": "month",
    "year": "year", "years": "year", "yr": "year", "mmhg": "mmhg", "bpm": "bpm", "kcal": "kcal",
    "cc": "ml", "fold": "fold", "million": "e6", "billion": "e9", "mgday": "mg",
}
_NUMBER = re.compile(r"\d+(?:,\d{3})+(?!\d)|\d*\.\d+|\d+")
_NOT_LETTERS = re.compile(r"[\d.,%/+\-−–<>=~±×()\[\]:;'\"]")


def content_terms(text: str) -> list[str]:
    """Stems of the content words, in order; numbers are left to numbers()."""
    out = []
    for tok in SUPPORT_TOKEN.findall(text):
        low = tok.lower()
        if low in SUPPORT_STOPWORDS or low in NEGATION_WORDS or low.isdigit() or len(low) < 2:
            continue
        out.append(truncation_stem(low))
    return out


def term_weight(stem: str) -> float:
    """A fixed IDF stand-in: longer words carry more; identifiers with digits (IL-6, CD4) most."""
    if any(ch.isdigit() for ch in stem):
        return 2.0
    return min(1.5, 0.25 + len(stem) / 6.0)


def _unit(word: str) -> Optional[str]:
    word = word.strip(".,;:()[]").lower()
    return UNITS.get(word.split("/")[0]) if word else None


def numbers(text: str) -> list[tuple[float, Optional[str]]]:
    """Numbers with their unit, if any: "60 mg" -> (60.0, "mg"); "40mg/day" -> (40.0, "mg").

    Digits inside identifiers (IL-6, CD4, 3T3, OCT3/4, B12) are names, not numbers.
    """
    return [(v, u) for _, v, u, _ in _numbers_at(text.split())]


def _numbers_at(words: list[str]) -> list[tuple[int, float, Optional[str], bool]]:
    """(word index, value, unit, whether the unit is the next word) of each number of `words`."""
    out: list[tuple[int, float, Optional[str], bool]] = []
    for i, raw in enumerate(words):
        word = raw.strip(".,;:()[]\"'")
        low = word.lower()
        if low in NUMBER_WORDS:
            unit = _unit(words[i + 1]) if i + 1 < len(words) else None
            out.append((i, float(NUMBER_WORDS[low]), unit, unit is not None))
            continue
        found = _NUMBER.findall(word)
        if not found:
            continue
        letters = _NOT_LETTERS.sub("", word).lower()
        if letters and letters not in UNITS and letters.split("/")[0] not in UNITS:
            continue  # an identifier such as CD4 or COVID-19
        unit = ("%" if word.endswith("%") else UNITS.get(letters)) if letters or "%" in word else None
        next_word = False
        if unit is None and i + 1 < len(words) and not word.endswith(("%", ",", ";")):
            unit = _unit(words[i + 1])
            next_word = unit is not None
        out.extend((i, float(n.replace(",", "")), unit, next_word) for n in found)
    return out


# ------------------------------------------------------------------------------ numbers in place
# A number is read with the words around it, up to the next number or a break: a sentence end, a
# semicolon, colon or comma, or a joining word ("give 2 tablets every 6 hours and drink a glass of water
# every 2 hours": "every 2 hours" goes with the drink, not the tablets).
_BREAK_WORD = frozenset("and then or but while whereas".split())
_BREAK_END = (".", ";", ":", ",", "!", "?")
NUMBER_MARGIN = 0.25  # another number's words must match the claim's by this much more than its own


@dataclass
class _Placed:
    value: float
    unit: Optional[str]
    before: dict  # stems of the words before it (back to a break or the previous number) -> weight
    after: dict  # ... and after it (up to a break or the next number)


def _placed_numbers(text: str) -> list[_Placed]:
    """Each number of `text` with the content words on either side of it, within its stretch."""
    words = text.split()
    found = _numbers_at(words)
    if not found:
        return []
    breaks = {i for i, w in enumerate(words) if w.lower().strip(".,;:()[]\"'") in _BREAK_WORD}
    ends = {i for i, w in enumerate(words) if w.rstrip(")]\"'").endswith(_BREAK_END)}
    at = {i for i, *_ in found}
    out: list[_Placed] = []
    for i, value, unit, next_word in found:
        lo = i - 1
        while lo >= 0 and lo not in at and lo not in breaks and lo not in ends:
            lo -= 1
        start = i + (2 if next_word else 1)
        hi = start
        if i not in ends and not (next_word and i + 1 in ends):
            while hi < len(words) and hi not in at and hi not in breaks:
                hi += 1
                if hi - 1 in ends:
                    break
        out.append(_Placed(value, unit, _anchor(words[lo + 1:i]), _anchor(words[start:hi])))
    return out


def _anchor(words: list[str]) -> dict:
    return {t: term_weight(t) for t in content_terms(" ".join(words)) if t not in UNITS}


def _fit(claim: _Placed, other: _Placed) -> float:
    """How well a number of the passage sits among the claim's words around its number: the words on
    the same side count fully, those on the other side (a reordered sentence) half."""
    def share(a: dict, b: dict) -> float:
        return _overlap(a, set(b)) if a else 0.0

    return (share(claim.before, other.before) + share(claim.after, other.after)
            + 0.5 * (share(claim.before, other.after) + share(claim.after, other.before)))


def misplaced_numbers(claim: str, passage_text: str) -> list[tuple[float, Optional[str]]]:
    """The claim's numbers that the passage ties to other words: the words around the number in the
    claim sit, in the passage, around another number of the same unit, clearly better than around
    this one ("give 2 tablets every 2 hours" from "give 2 tablets every 6 hours; drink a glass of
    water every 2 hours": the passage's "every 2 hours" is the water's). A number the passage does not
    have is `missing_numbers`' business; a claim whose words the passage ties to no number is left
    alone (a paraphrase is no swap)."""
    placed = _placed_numbers(passage_text)
    out = []
    for c in _placed_numbers(claim):
        if c.unit is None and c.value in (0.0, 1.0) or not (c.before or c.after):
            continue
        kin = [p for p in placed if p.unit == c.unit]
        own = [_fit(c, p) for p in kin if abs(p.value - c.value) < 1e-9] or \
            [_fit(c, p) for p in placed if abs(p.value - c.value) < 1e-9]  # "6 tablets" where the passage has 6 hours
        other = [_fit(c, p) for p in kin if abs(p.value - c.value) >= 1e-9]
        if own and other and max(other) >= 0.5 and max(other) > max(own) + NUMBER_MARGIN:
            out.append((c.value, c.unit))
    return out


def missing_numbers(claim: str, passage_text: str) -> list[tuple[float, Optional[str]]]:
    """The claim's numbers not found in the passage (a unit must agree when both sides give one)."""
    have = numbers(passage_text)
    missing = []
    for value, unit in numbers(claim):
        if unit is None and value in (0.0, 1.0):
            continue  # "type 1", "+1", "phase 0": too often a name, not a quantity
        ok = any(abs(v - value) < 1e-9 and (unit is None or u is None or u == unit) for v, u in have)
        if not ok:
            missing.append((value, unit))
    return missing


def is_negated(text: str) -> bool:
    if NEGATION_PHRASES.search(text):
        return True
    return any(tok.lower() in NEGATION_WORDS for tok in SUPPORT_TOKEN.findall(text))


_CLAUSE_BREAK = re.compile(r";\s+")


def negation_mismatch(claim: str, sentence: str) -> bool:
    """Is the claim negated where the passage's sentence is not, or the reverse? A negation governs
    its own clause (clauses split at semicolons): in "Do not use tweezers; these may squeeze the venom
    sac" the second clause is stated, not denied. Each clause of the claim is compared with the clause
    of the sentence that shares the most of its words."""
    parts = [c for c in _CLAUSE_BREAK.split(sentence) if c.strip()]
    if len(parts) < 2:
        return is_negated(claim) != is_negated(sentence)
    part_terms = [set(content_terms(p)) for p in parts]
    for clause in (c for c in _CLAUSE_BREAK.split(claim) if c.strip()):
        terms = {t: term_weight(t) for t in content_terms(clause)}
        nearest = max(range(len(parts)), key=lambda i: _overlap(terms, part_terms[i]))
        if is_negated(clause) != is_negated(parts[nearest]):
            return True
    return False


# ------------------------------------------------------------------------------------ swapped words
# A claim can repeat its quote word for word but one: "The skull is incised and reflected" against "The
# scalp is incised and reflected"; "Cerebral autoregulation is the difference between MAP and ICP"
# against "Cerebral perfusion pressure (CPP) is the difference ..."; "impaired by chronic hypertension"
# against "shifted upward by chronic hypertension". The claim's content words are aligned, in order, to
# those of the stretch of passage it rests on (difflib's matching blocks); a claim word the stretch lacks,
# standing where the stretch has another word the claim lacks, is a swap. Not a swap:
# - two forms of one word (a prefix of the other), or an abbreviation of the other's initials;
# - words in parentheses (asides: "(often called pressure points)") and adverbs in -ly;
# - where the stretch has a pronoun or demonstrative before its word ("if it happens"): the claim
#   names what it refers to;
# - at the claim's start with no matched word before it, unless a determiner opens it ("The skull"):
#   an imperative's verb ("Look for", "Prop up") against a lead-in of the book's ("Indications of a
#   fracture are"), the same instruction in other words;
# - a pair near in the embedding space (SYNONYM_COS: "physician"/"doctor" 0.86, "quickly"/"rapidly"
#   0.87, against "scalp"/"skull" 0.55, "heat stroke"/"heat exhaustion" 0.69).
SYNONYM_COS = 0.80
SWAP_MIN_STEM = 3  # a claim word this short ("ii", "vs") is not weighed
DETERMINERS = frozenset("the a an this that these those his her its their our your my".split())
REFERRERS = frozenset("it they them this these those he she him her such".split())
_PARENTHESES = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")


@dataclass
class Swap:
    claim_words: tuple[str, ...]  # the claim's words that stand where the passage has others
    passage_words: tuple[str, ...]  # the passage's words in their place


def _content_words(text: str) -> list[tuple[str, str, str]]:
    """(stem, word, the word before it) of each content word, in order, parentheses left out.
    Numbers, and the word a number counts ("three inches"), are the number checks' business."""
    out = []
    before = ""
    for tok in SUPPORT_TOKEN.findall(_PARENTHESES.sub(" ", text)):
        low = tok.lower()
        counted = before.isdigit() or before in NUMBER_WORDS
        if not (low in SUPPORT_STOPWORDS or low in NEGATION_WORDS or low in NUMBER_WORDS or len(low) < 2
                or not any(ch.isalpha() for ch in low) or counted or (low.endswith("ly") and len(low) > 4)):
            out.append((truncation_stem(low), tok, before))
        before = low
    return out


def _same_word(a: str, b: str) -> bool:
    """Two surface words that are one word: a prefix of the other (4 letters or more)."""
    a, b = re.sub(r"[^a-z0-9]", "", a.lower()), re.sub(r"[^a-z0-9]", "", b.lower())  # "half-knot", "halfknot"
    short, long_ = sorted((a, b), key=len)
    return len(short) >= 4 and long_.startswith(short)


def _abbreviates(short: Sequence[str], long_: Sequence[str]) -> bool:
    """"CPP" for "cerebral perfusion pressure": one side a single word made of the other's initials."""
    if len(short) != 1 or len(long_) < 2:
        return False
    word = short[0].lower().rstrip("s")
    initials = "".join(w[0].lower() for w in long_ if w)
    return len(word) >= 2 and word in initials


# The swapped-word cap on a tick (D125). Off by default: measured on the held-out book it did not halve the
# wrong ticks (CERT 10 -> 7) and lowered 12 of 180 right ones, and SciFact's `supported` precision fell
# below the bar (0.920 -> 0.917, recall 0.371 -> 0.177). `bench/answers/support_swaps.py` measures it on.
SWAP_CHECK = False


def swapped_words(claim: str, stretch: str, embedder=None) -> list[Swap]:
    """The claim's words that stand where `stretch` (the passage sentences the claim rests on) has
    others: see the comment above. With an embedder, a pair near in meaning (SYNONYM_COS) is no swap."""
    from difflib import SequenceMatcher

    c, q = _content_words(claim), _content_words(stretch)
    if not c or not q:
        return []
    c_stems, q_stems = [t for t, _, _ in c], [t for t, _, _ in q]
    in_claim, in_stretch = set(c_stems), set(q_stems)
    cands: list[Swap] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, c_stems, q_stems, autojunk=False).get_opcodes():
        if tag != "replace" or (i1 == 0 and i2 == len(c)):
            continue  # nothing of the claim matched on either side: no position to compare
        if i1 == 0 and c[0][2] not in DETERMINERS:
            continue
        if q[j1][2] in REFERRERS:
            continue
        mine = [w for t, w, _ in c[i1:i2] if t not in in_stretch and len(t) >= SWAP_MIN_STEM]
        theirs = [w for t, w, _ in q[j1:j2] if t not in in_claim]
        mine = [w for w in mine if not any(_same_word(w, o) for _, o, _ in q)]
        if not mine or not theirs or _abbreviates(mine, theirs) or _abbreviates(theirs, mine):
            continue
        if any(_abbreviates([w], theirs) for w in mine) or any(_abbreviates([w], mine) for w in theirs):
            continue
        cands.append(Swap(tuple(mine), tuple(theirs)))
    return not_synonyms(cands, embedder) if cands and embedder is not None else cands


def not_synonyms(swaps: Sequence[Swap], embedder) -> list[Swap]:
    """The swaps whose two sides are not near in meaning (SYNONYM_COS), in one embedding call."""
    texts = list(dict.fromkeys(" ".join(x) for s in swaps for x in (s.claim_words, s.passage_words)))
    if not texts:
        return []
    vecs = dict(zip(texts, np.asarray(embedder.embed(texts))))
    return [s for s in swaps
            if float(vecs[" ".join(s.claim_words)] @ vecs[" ".join(s.passage_words)]) < SYNONYM_COS]


# ------------------------------------------------------------------------------------- features
def _normalise(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.maximum(n, 1e-12)


def _overlap(claim_terms: dict[str, float], terms: set[str]) -> float:
    total = sum(claim_terms.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in claim_terms.items() if t in terms) / total


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
