"""`not_text`: an answer that is mostly not language (numbers, symbols, a figure's labels copied), found by
its share of non-word tokens and its longest run of them. answer/health.py gathers it with the other
warnings of an answer (and re-exports these names: callers read them as `health.not_language`, ...)."""
from __future__ import annotations

import re
from typing import Optional

from ragcli.types import HealthWarning


# `not_text`: tokens that are not words (numbers, symbols, figure codes) among the answer's tokens,
# citation marks and one-character bullets aside. The labelled answer runs (bench/labels, 909 distinct
# texts, FM, ATP and CERT, 0.5B and 1.5B and extractive) reach a share of 0.24 in answers of 8 tokens or
# more and a run of 4 (bench/not_language.py): the bars sit well above both.
NOT_TEXT_SHARE = 0.4  # this share of non-words, in an answer of NOT_TEXT_MIN_TOKENS or more
NOT_TEXT_MIN_TOKENS = 6
NOT_TEXT_RUN = 6  # or this many non-words back to back ("0 60 100 150 200 250")
_CITATION_MARK = re.compile(r"\[[A-Za-z]?\s*\d+(?:\s*[-–,;]\s*[A-Za-z]?\s*\d+)*\]")
_TOKEN_EDGE = ".,;:()[]{}\"'!?*•“”‘’"


def _is_word(token: str) -> Optional[bool]:
    """A word has two letters or more, and letters are at least half of its letters and digits
    ("CPP", "mmHg", "IL-6", "don't"); None for a token to leave out (a bullet, a lone dash)."""
    t = token.strip(_TOKEN_EDGE)
    if not t or (len(t) == 1 and not t.isalnum()):
        return None
    letters = sum(ch.isalpha() for ch in t)
    return letters >= 2 and 2 * letters >= sum(ch.isalnum() for ch in t)


def language_measures(text: str) -> tuple[int, float, int]:
    """(tokens, share of them that are not words, longest run of non-words back to back)."""
    kinds = [k for k in (_is_word(t) for t in _CITATION_MARK.sub(" ", text).split()) if k is not None]
    if not kinds:
        return 0, 0.0, 0
    run = longest = 0
    for word in kinds:
        run = 0 if word else run + 1
        longest = max(longest, run)
    return len(kinds), 1 - sum(kinds) / len(kinds), longest


def not_language(text: str) -> bool:
    """Is the answer mostly not language (numbers, symbols, codes)? Such an answer is not shown as
    answered, however well its numbers match a passage's."""
    n, share, _ = language_measures(text)
    return n >= NOT_TEXT_MIN_TOKENS and share >= NOT_TEXT_SHARE


def text_warnings(text: str) -> list[HealthWarning]:
    """`not_text` when the answer is mostly not language, or holds a run of non-words."""
    n, share, run = language_measures(text)
    if n >= NOT_TEXT_MIN_TOKENS and share >= NOT_TEXT_SHARE:
        return [HealthWarning("not_text", f"the answer is not language: {round(share * 100)}% of it is "
                              f"numbers, symbols or labels (a figure's text copied)")]
    if run >= NOT_TEXT_RUN:
        return [HealthWarning("not_text", f"the answer holds a run of {run} numbers or labels, not "
                              f"language (a figure's text copied)")]
    return []
