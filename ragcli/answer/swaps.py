"""Swapped words: a claim that repeats its quote but for a word ("the skull is incised" against "the
scalp is incised"). Used by ragcli.answer.support (D125).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ragcli.answer.claim_terms import NEGATION_WORDS, NUMBER_WORDS
from ragcli.text import SUPPORT_STOPWORDS, SUPPORT_TOKEN, truncation_stem

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
