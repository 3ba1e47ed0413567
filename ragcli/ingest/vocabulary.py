"""The book's own vocabulary, stored at ingest: headings, glossary and index entries, figure captions,
frequent phrases. Query expansion looks up the terms nearest to a question here, so a rewrite (or the
model-free expansion) only ever uses words that exist in the book.
"""
from __future__ import annotations

import re
from collections import Counter

from ragcli.text import PHRASE_STOPWORDS
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


def frequent_phrases(parsed: ParsedBook, top: int = 150) -> list[str]:
    counts: Counter = Counter()
    for section in parsed.sections:
        words = re.findall(r"[a-z][a-z-]{2,}", section.text.lower())
        for a, b in zip(words, words[1:]):
            if a not in PHRASE_STOPWORDS and b not in PHRASE_STOPWORDS:
                counts[f"{a} {b}"] += 1
    return [p for p, n in counts.most_common(top) if n >= 3]


def extract_terms(parsed: ParsedBook) -> list[tuple[str, str, float]]:
    """(term, source, weight), unique by lower-cased term, first source wins."""
    out: dict[str, tuple[str, str, float]] = {}

    def add(term: str, source: str, weight: float) -> None:
        term = term.strip()
        if 3 <= len(term) <= 80 and re.search(r"[A-Za-z]{3}", term):
            out.setdefault(term.lower(), (term, source, weight))

    for term in glossary_terms(parsed):
        add(term, "glossary", 1.0)
    for term in index_terms(parsed):
        add(term, "index", 0.9)
    for section in parsed.sections:
        add(clean_heading(section.title), "heading", 0.9)
    for fig in parsed.figures:
        add(re.sub(r"^\W*(?:figure|fig\.?)\s*\S+\s*", "", fig.caption, flags=re.I)[:80], "figure", 0.7)
    for phrase in frequent_phrases(parsed):
        add(phrase, "frequent", 0.5)
    return list(out.values())
