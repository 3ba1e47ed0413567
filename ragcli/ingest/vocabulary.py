"""The book's own vocabulary, stored at ingest: headings, glossary and index entries, figure captions,
frequent phrases. Query expansion looks up the terms nearest to a question here, so a rewrite (or the
model-free expansion) only ever uses words that exist in the book.
"""
from __future__ import annotations

import re
from collections import Counter

from ragcli.text import PHRASE_STOPWORDS, SUPPORT_STOPWORDS
from ragcli.types import ParsedBook

_NUMBERING = re.compile(r"^(?:chapter|section|appendix|part)?\s*[\dIVXLC]+(?:[-.]\d+)*[.:]?\s+", re.I)
_REF = r"(?:(?:figure|fig\.|table|page|pp?\.)\s*)?(?:[A-Z]{1,2}-)?\d+(?:[-—–.]\d+)*[a-z]?(?:\(\d+\))?"
_INDEX_ENTRY = re.compile(r"([A-Za-z][A-Za-z ()/'’-]{2,60}?),\s+" + _REF, re.I)
_SEE = re.compile(r"\bSee(?: also)?,?\s+([A-Za-z][A-Za-z ()/'’-]{2,60}?)[.;]", re.I)


def clean_heading(title: str) -> str:
    t = _NUMBERING.sub("", title.strip())
    return re.sub(r"\s+", " ", t).strip(" .:-–—")


def glossary_terms(parsed: ParsedBook) -> list[str]:
    terms = []
    for section in parsed.sections:
        if not any("glossary" in part.lower() for part in section.path):
            continue
        for _, para in section.paragraphs:
            m = re.match(r"^([A-Za-z][\w\s()/'-]{1,50}?)\s*(?:—|–|:| - )\s*\S", para)
            if m:
                terms.append(m.group(1).strip())
    return terms


def index_terms(parsed: ParsedBook) -> list[str]:
    """Entries of the back-of-book index: "term, 2-11c(1)", "term, 45, 47", "See other term."."""
    terms = []
    for section in parsed.sections:
        if not any(part.strip().lower() == "index" for part in section.path):
            continue
        for _, para in section.paragraphs:
            for m in list(_INDEX_ENTRY.finditer(para)) + list(_SEE.finditer(para)):
                term = re.sub(r"^(?:[a-z](?:\(\d+\))?\s+)+", "", m.group(1).strip())
                if term.lower() not in ("see", "see also", "figure", "table") and not term[:1].isdigit():
                    terms.append(term)
    return terms


# A phrase is a run of words in the text with no stopword, number or punctuation inside it: "after
# aneurysmal" (a preposition) or "circle willis" (across "of") are not phrases of the book. Of a phrase
# and a longer one that holds it nearly as often ("coma scale" in "glasgow coma scale"), the longer one
# is kept: a term shown to the reader is whole (the maximal frequent phrases of C-value term
# extraction, Frantzi et al. 2000).
PHRASE_MAX_WORDS = 4
PHRASE_MIN_COUNT = 3
PHRASE_NESTED_SHARE = 0.7  # a phrase held this often by a longer kept one is the longer one's part
_TERM_STOPWORDS = PHRASE_STOPWORDS | SUPPORT_STOPWORDS
_PHRASE_BREAK = re.compile(r"[^\w\s'’-]|\s['’-]|['’-]\s")


def frequent_phrases(parsed: ParsedBook, top: int = 150) -> list[str]:
    counts: Counter = Counter()
    for section in parsed.sections:
        for piece in _PHRASE_BREAK.split(section.text.lower()):
            run: list[str] = []
            for word in piece.split() + [""]:
                if re.fullmatch(r"[a-z][a-z-]{2,}", word) and word not in _TERM_STOPWORDS:
                    run.append(word)
                    continue
                for n in range(2, PHRASE_MAX_WORDS + 1):
                    for i in range(len(run) - n + 1):
                        counts[" ".join(run[i:i + n])] += 1
                run = []
    frequent = {p: n for p, n in counts.items() if n >= PHRASE_MIN_COUNT}
    kept = [p for p, n in frequent.items()
            if not any(len(q) > len(p) and f" {p} " in f" {q} " and m >= PHRASE_NESTED_SHARE * n
                       for q, m in frequent.items())]
    return sorted(kept, key=lambda p: (-frequent[p], p))[:top]


_LIST_NUMBER_INSIDE = re.compile(r"\s(?:\d+|[a-z])[.)]\s")


def whole_term(term: str) -> bool:
    """A heading, caption or phrase that reads as a whole: it neither starts nor ends with a function
    word ("after aneurysmal", "WASH THE BLISTER WITH"), holds no list number inside ("... WITH 2.
    STERILIZE ..."), and is words (letters, not a heading's bare number: "CHAPTER 1")."""
    words = re.findall(r"[^\W\d_][\w'’-]*", term)
    if not words or _LIST_NUMBER_INSIDE.search(f" {term} "[1:]):
        return False
    first, last = words[0].lower(), words[-1].lower()
    if last in _TERM_STOPWORDS or (first in _TERM_STOPWORDS and first not in ("a", "an", "the")):
        return False
    if re.fullmatch(r"(?i)(?:chapter|section|part|appendix|unit)\s+[\dIVXLC]+", term.strip()):
        return False
    letters = sum(ch.isalpha() for ch in term)
    return letters >= 0.6 * len(term.replace(" ", "")) and not re.search(r"\b[A-Za-z]\d|\d[A-Za-z]", term)


def extract_terms(parsed: ParsedBook) -> list[tuple[str, str, float]]:
    """(term, source, weight), unique by lower-cased term, first source wins."""
    out: dict[str, tuple[str, str, float]] = {}

    def add(term: str, source: str, weight: float) -> None:
        term = term.strip()
        if 3 <= len(term) <= 80 and re.search(r"[A-Za-z]{3}", term) and whole_term(term):
            out.setdefault(term.lower(), (term, source, weight))

    for term in glossary_terms(parsed):
        add(term, "glossary", 1.0)
    for term in index_terms(parsed):
        add(term, "index", 0.9)
    for section in parsed.sections:
        if section.path != ["Front matter"]:
            add(clean_heading(section.title), "heading", 0.9)
    for fig in parsed.figures:  # a caption's title: up to its first sentence end or colon, whole or not at all
        caption = re.sub(r"^\W*(?:figure|fig\.?)\s*\S+\s*", "", fig.caption, flags=re.I)
        add(re.split(r"(?<=[a-z)])[.:;]\s", caption + " ", maxsplit=1)[0].strip(" .:;"), "figure", 0.7)
    for phrase in frequent_phrases(parsed):
        add(phrase, "frequent", 0.5)
    return list(out.values())
