"""Lexical evidence for per-claim support (ragcli.answer.support): content words and their weights,
numbers with their units and the words around them, negation.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from ragcli.text import SUPPORT_STOPWORDS, SUPPORT_TOKEN, truncation_stem

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


def _overlap(claim_terms: dict[str, float], terms: set[str]) -> float:
    total = sum(claim_terms.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in claim_terms.items() if t in terms) / total


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
