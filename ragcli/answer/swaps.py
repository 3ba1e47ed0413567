"""Swapped words: a claim that repeats its quote but for a word ("the skull is incised" against "the
scalp is incised"). Used by ragcli.answer.support (D125).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ragcli.answer.claim_terms import NEGATION_WORDS, NUMBER_WORDS
from ragcli.text import SUPPORT_STOPWORDS, SUPPORT_TOKEN, truncation_stem

# ------------------------------------------------------------------------------------ swapped words
# A claim can repeat its quote word for word but one: "The skull is incised and reflected" against "The
# scalp is incised and reflected"; "Cerebral autoregulation is the difference between MAP and ICP"
# against "Cerebral perfusion pressure (CPP) is the difference ..."; "3 quarts of water per person per
# day" against "Store 1 gallon of water per person per day". The claim's content words and numbers are
# aligned, in order, to those of the stretch of passage it rests on (difflib's matching blocks); a claim
# word the stretch lacks, standing where the stretch has another word the claim lacks, is a swap. Not a
# swap:
# - two forms of one word (a prefix of the other, or all but the shorter one's last letter in common:
#   "bite"/"bitten"), or an abbreviation of the other's initials;
# - words in parentheses (asides: "(often called pressure points)") and adverbs in -ly;
# - where the stretch has a pronoun or demonstrative before its word ("if it happens"): the claim
#   names what it refers to;
# - at the claim's start with no matched word before it, unless the claim opens as a statement (a
#   determiner or a subject pronoun first, or a form of "be" or a modal second: "The skull", "They are
#   marked", "Survivors are tagged") or the block holds a number: an imperative's verb ("Look for", "Prop up") against a
#   lead-in of the book's ("Indications of a fracture are"), the same instruction in other words;
# - a block whose passage side is much longer than the claim's (SWAP_RATIO): one claim word against a
#   list or a running header ("burned their lungs" against "Burns around the face or neck UNIT 4:
#   DISASTER MEDICAL OPERATIONS"), an addition or a summary, not one word put for another;
# - a lone participle after a form of "be" ("is given every 4 hours" against "by mouth or nasogastric
#   tube every 4 hours"): the predicate, which the scorer's overlap weighs; the check is for the
#   subject, the object, a name or a number;
# - a number against words, or words against a number, when that side holds nothing but quantities (a
#   number and the lower-case word it counts): a quantity the claim leaves out ("placed above the wound"
#   against "two to three inches above the wound") is a cut, and one the passage lacks is the number
#   checks' business ("atropine" against "2 PAM Cl", a name with a number in it, is a swap);
# - a pair near in the embedding space (SYNONYM_COS: "physician"/"doctor" 0.86, "quickly"/"rapidly"
#   0.87, against "scalp"/"skull" 0.55, "heat stroke"/"heat exhaustion" 0.69).
SYNONYM_COS = 0.80
SWAP_RATIO = 2  # a swap's passage side holds at most this many words per claim word, plus one
SWAP_MIN_STEM = 3  # a claim word this short ("ii", "vs") is not weighed
DETERMINERS = frozenset("the a an this that these those his her its their our your my".split())
BE = frozenset("is are was were be been being".split())
MODALS = frozenset("can could may might must should will would has have had".split())
SUBJECTS = frozenset("it they he she we you".split())
PARTICIPLE = ("ed", "en", "wn")
REFERRERS = frozenset("it they them this these those he she him her such".split())
_PARENTHESES = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")


@dataclass
class Swap:
    claim_words: tuple[str, ...]  # the claim's words that stand where the passage has others
    passage_words: tuple[str, ...]  # the passage's words in their place


def _content_words(text: str) -> list[tuple[str, str, str]]:
    """(stem, word, the word before it) of each content word and number, in order, parentheses left
    out. A number's stem is its value ("two" and "2" are one word, `#2`): "3 quarts" where the book
    has "1 gallon" is a swap, as a word would be."""
    out = []
    before = ""
    for tok in SUPPORT_TOKEN.findall(_PARENTHESES.sub(" ", text)):
        low = tok.lower()
        value = _number_value(low)
        if value is not None:
            out.append((value, tok, before))
        elif not (low in SUPPORT_STOPWORDS or low in NEGATION_WORDS or len(low) < 2
                  or not any(ch.isalpha() for ch in low) or (low.endswith("ly") and len(low) > 4)):
            out.append((truncation_stem(low), tok, before))
        before = low
    return out


def _number_value(word: str) -> Optional[str]:
    """"#2" for "2", "two", "2.0"; None for a word that is no number."""
    if word in NUMBER_WORDS:
        return f"#{NUMBER_WORDS[word]}"
    try:
        return f"#{float(word.replace(',', '')):g}"
    except ValueError:
        return None


def _has_number(words: Sequence[str]) -> bool:
    return any(_number_value(w.lower()) is not None for w in words)


def _words_beside_quantities(words: Sequence[str]) -> list[str]:
    """`words` less their numbers and the lower-case word a number counts: "two three inches" -> [];
    "2 PAM Cl" -> ["PAM", "Cl"] (a name with a number in it)."""
    out, after_number = [], False
    for w in words:
        number = _number_value(w.lower()) is not None
        if not number and not (after_number and w[:1].islower()):
            out.append(w)
        after_number = number
    return out


def _same_word(a: str, b: str) -> bool:
    """Two surface words that are one word (4 letters or more): a prefix or, from 5 letters, a part of
    the other ("waiting", "awaiting"), all letters but the shorter word's last one in common at the start
    ("bite", "bitten"), or a common start of 5 letters and 70% of the shorter word ("reduces",
    "reduction"; not "antibody", "antibiotic")."""
    a, b = re.sub(r"[^a-z0-9]", "", a.lower()), re.sub(r"[^a-z0-9]", "", b.lower())  # "half-knot", "halfknot"
    short, long_ = sorted((a, b), key=len)
    if len(short) < 4:
        return False
    if long_.startswith(short) or (len(short) >= 5 and short in long_):
        return True
    common = len(os.path.commonprefix([short, long_]))
    return common >= len(short) - 1 or (common >= 5 and common >= 0.7 * len(short))


def _abbreviates(short: Sequence[str], long_: Sequence[str]) -> bool:
    """"CPP" for "cerebral perfusion pressure": one side a single word made of the other's initials."""
    if len(short) != 1 or len(long_) < 2:
        return False
    word = short[0].lower().rstrip("s")
    initials = "".join(w[0].lower() for w in long_ if w)
    return len(word) >= 2 and word in initials



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
    tokens = [t.lower() for t in SUPPORT_TOKEN.findall(claim)[:2]] + ["", ""]
    statement = tokens[0] in DETERMINERS or tokens[0] in SUBJECTS or tokens[1] in BE or tokens[1] in MODALS
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, c_stems, q_stems, autojunk=False).get_opcodes():
        if tag != "replace" or (i1 == 0 and i2 == len(c)):
            continue  # nothing of the claim matched on either side: no position to compare
        if (i1 == 0 and not statement and c[0][2] not in DETERMINERS
                and not any(t.startswith("#") for t in c_stems[i1:i2])):
            continue  # an imperative's verb against the book's lead-in
        if q[j1][2] in REFERRERS:
            continue
        mine = [w for t, w, _ in c[i1:i2]
                if t not in in_stretch and (len(t) >= SWAP_MIN_STEM or t.startswith("#"))]
        theirs = [w for t, w, _ in q[j1:j2] if t not in in_claim]
        mine = [w for w in mine if not any(_same_word(w, o) for _, o, _ in q)]
        if not mine or not theirs or _abbreviates(mine, theirs) or _abbreviates(theirs, mine):
            continue
        if any(_abbreviates([w], theirs) for w in mine) or any(_abbreviates([w], mine) for w in theirs):
            continue
        if len(theirs) > SWAP_RATIO * len(mine) + 1:
            continue  # one word against a list or a header: an addition or a summary
        if i2 - i1 == 1 and c[i1][2] in BE and c[i1][1].lower().endswith(PARTICIPLE):
            continue  # "is given", "are placed": the predicate, not a subject, object or name
        if _has_number(mine) != _has_number(theirs) and not (
                _words_beside_quantities(mine) and _words_beside_quantities(theirs)):
            continue  # a quantity left out is a cut; one the passage lacks is the number checks' business
        cands.append(Swap(tuple(mine), tuple(theirs)))
    return not_synonyms(cands, embedder) if cands and embedder is not None else cands


def in_words(swap: Swap) -> str:
    """A swap as the reader is told it: "the book says scalp, the answer says skull"."""
    return f"the book says {' '.join(swap.passage_words)}, the answer says {' '.join(swap.claim_words)}"


def not_synonyms(swaps: Sequence[Swap], embedder) -> list[Swap]:
    """The swaps whose two sides are not near in meaning (SYNONYM_COS), in one embedding call."""
    texts = list(dict.fromkeys(" ".join(x) for s in swaps for x in (s.claim_words, s.passage_words)))
    if not texts:
        return []
    vecs = dict(zip(texts, np.asarray(embedder.embed(texts))))
    return [s for s in swaps
            if float(vecs[" ".join(s.claim_words)] @ vecs[" ".join(s.passage_words)]) < SYNONYM_COS]
